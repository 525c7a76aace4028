// Inference for ops that move data without computing: Identity, Reshape (0 copies a dim unless
// allowzero, -1 is inferred, symbols cancel), Flatten, Squeeze, Unsqueeze, Transpose, Expand,
// Tile, Concat, Split, Slice (negative steps, clamping), Pad (pads and axes inputs),
// DepthToSpace, SpaceToDepth, Trilu, CenterCropPad and ReverseSequence.
#include "infer_rules.h"
#include "sinter/ir/op_attributes.h"

#include <algorithm>
#include <set>

namespace sinter::infer {
namespace {

/// Input i must be a 1-D i64 tensor (a shape, axes, repeats or split).
void requireInt64Vector(const InferContext &ctx, int i, const char *what) {
  if (ctx.dtype(i) != DType::Int64)
    ctx.failInput(i, "(", what, ") must be i64");
  if (ctx.rank(i) != 1)
    ctx.failInput(i, "(", what, ") must be 1-D");
}

/// Squeeze's and Unsqueeze's axes: i64, 1-D (a scalar is taken as one axis, as onnxruntime does).
void requireAxes(const InferContext &ctx, int i) {
  if (ctx.dtype(i) != DType::Int64)
    ctx.failInput(i, "(axes) must be i64");
  if (ctx.rank(i) > 1)
    ctx.failInput(i, "(axes) must be 1-D");
}

/// Input i's values; an unknown length is a UserError (the result's rank would be unknown).
std::vector<SymInt> valuesWithKnownLength(const InferContext &ctx, int i, const char *what) {
  auto values = ctx.integerValues(i);
  if (!values)
    ctx.failInput(i, "(", what, ") has an unknown length, so the output's rank is unknown");
  return *values;
}

/// What is known of the product of some dims: the product of the static ones, the symbols (as
/// a sorted multiset), and whether any is unknown.
struct Product {
  int64_t statics = 1;
  bool overflow = false;
  std::multiset<std::string> symbols;
  bool unknown = false;

  void multiply(const Dim &dim) {
    if (dim.isStatic())
      overflow = overflow || __builtin_mul_overflow(statics, dim.value(), &statics);
    else if (dim.isSymbol())
      symbols.insert(dim.symbolName());
    else
      unknown = true;
  }
};

/// Reshape's -1: the input's product over the product of the other output dims. Symbols that
/// appear on both sides cancel.
Dim inferMinusOne(const InferContext &ctx, const Product &in, Product out) {
  if (in.unknown || out.unknown || in.overflow || out.overflow)
    return Dim::unknown();
  if (out.statics == 0)
    ctx.fail("the shape has a -1 and a zero-sized dim, so the -1 cannot be inferred");
  std::multiset<std::string> remaining = in.symbols;
  for (const std::string &symbol : out.symbols) {
    auto it = remaining.find(symbol);
    if (it == remaining.end())
      return Dim::unknown();
    remaining.erase(it);
  }
  if (in.statics % out.statics != 0) {
    if (remaining.empty())
      ctx.fail("cannot reshape ", ctx.describeInput(0), ": its element count is not a multiple ",
               "of the other dims' product ", out.statics);
    return Dim::unknown();
  }
  int64_t quotient = in.statics / out.statics;
  if (remaining.empty())
    return Dim(quotient);
  if (remaining.size() == 1 && quotient == 1)
    return Dim::symbol(*remaining.begin());
  return Dim::unknown();
}

Types reshape(const InferContext &ctx) {
  requireInt64Vector(ctx, 1, "shape");
  int64_t allowZero = ctx.node().attrInt("allowzero", 0);
  const Shape &in = ctx.shape(0);
  std::vector<SymInt> values = valuesWithKnownLength(ctx, 1, "shape");
  Shape out;
  int minusOne = -1;
  bool hasZero = false;
  for (size_t i = 0; i < values.size(); ++i) {
    const SymInt &value = values[i];
    if (!value.isConstant()) {
      out.push_back(value.toDim());
      continue;
    }
    int64_t v = *value.value;
    if (v == -1) {
      if (minusOne >= 0)
        ctx.failInput(1, "(shape) has more than one -1");
      minusOne = int(i);
      out.push_back(Dim::unknown());
    } else if (v == 0 && !allowZero) {
      if (i >= in.size())
        ctx.failInput(1, "(shape) has 0 at index ", i, ", past the input's rank ", in.size());
      out.push_back(in[i]);
    } else if (v < 0) {
      ctx.failInput(1, "(shape) has an invalid dim ", v);
    } else {
      hasZero = hasZero || v == 0;
      out.push_back(Dim(v));
    }
  }
  if (allowZero && hasZero && minusOne >= 0)
    ctx.failInput(1, "(shape) has both 0 and -1, which allowzero=1 forbids");

  Product inProduct, outProduct;
  for (const Dim &dim : in)
    inProduct.multiply(dim);
  for (size_t i = 0; i < out.size(); ++i)
    if (int(i) != minusOne)
      outProduct.multiply(out[i]);
  if (minusOne >= 0) {
    out[minusOne] = inferMinusOne(ctx, inProduct, outProduct);
  } else if (!inProduct.unknown && !outProduct.unknown && !inProduct.overflow &&
             !outProduct.overflow && inProduct.symbols == outProduct.symbols &&
             inProduct.statics != outProduct.statics) {
    ctx.fail("cannot reshape ", ctx.describeInput(0), " to ", shapeStr(out),
             ": the element counts differ");
  }
  return {{ctx.dtype(0), out}};
}

Types flatten(const InferContext &ctx) {
  const Shape &in = ctx.shape(0);
  int64_t axis = ctx.node().attrInt("axis", 1);
  int rank = int(in.size());
  if (axis < -rank || axis > rank)
    ctx.fail("axis ", axis, " is out of range for rank ", rank, " (expected [", -rank, ", ", rank,
             "])");
  size_t split = size_t(axis < 0 ? axis + rank : axis);
  return {{ctx.dtype(0),
           {productOfDims(ctx, in, 0, split), productOfDims(ctx, in, split, in.size())}}};
}

Types squeeze(const InferContext &ctx) {
  const Shape &in = ctx.shape(0);
  int rank = int(in.size());
  Shape out;
  if (!ctx.hasInput(1)) {
    for (size_t i = 0; i < in.size(); ++i) {
      if (!in[i].isStatic())
        ctx.failInput(0, "has non-static dim ", i, ", so Squeeze without axes has an unknown rank ",
                      "(bind the dim with --dim or --shape)");
      if (in[i].value() != 1)
        out.push_back(in[i]);
    }
    return {{ctx.dtype(0), out}};
  }
  requireAxes(ctx, 1);
  std::vector<SymInt> values = valuesWithKnownLength(ctx, 1, "axes");
  std::vector<int64_t> axes;
  for (const SymInt &value : values) {
    if (!value.isConstant()) {
      if (int(values.size()) > rank)
        ctx.failInput(1, "(axes) has more entries than the input has dims");
      return {{ctx.dtype(0), unknownShape(rank - int(values.size()))}};
    }
    axes.push_back(*value.value);
  }
  std::vector<int> normalized = ctx.normalizeAxes(axes, rank);
  std::vector<bool> squeezed(rank, false);
  for (int axis : normalized) {
    if (in[axis].isStatic() && in[axis].value() != 1)
      ctx.failInput(0, "has size ", in[axis].value(), " in dim ", axis, ", which Squeeze removes");
    squeezed[axis] = true;
  }
  for (int i = 0; i < rank; ++i)
    if (!squeezed[i])
      out.push_back(in[i]);
  return {{ctx.dtype(0), out}};
}

Types unsqueeze(const InferContext &ctx) {
  requireAxes(ctx, 1);
  const Shape &in = ctx.shape(0);
  std::vector<SymInt> values = valuesWithKnownLength(ctx, 1, "axes");
  int rank = int(in.size() + values.size());
  std::vector<int64_t> axes;
  for (const SymInt &value : values) {
    if (!value.isConstant())
      return {{ctx.dtype(0), unknownShape(rank)}};
    axes.push_back(*value.value);
  }
  std::vector<bool> inserted(rank, false);
  for (int axis : ctx.normalizeAxes(axes, rank))
    inserted[axis] = true;
  Shape out;
  size_t next = 0;
  for (int i = 0; i < rank; ++i)
    out.push_back(inserted[i] ? Dim(1) : in[next++]);
  return {{ctx.dtype(0), out}};
}

Types transpose(const InferContext &ctx) {
  const Shape &in = ctx.shape(0);
  int rank = int(in.size());
  std::vector<int64_t> perm;
  for (int i = rank - 1; i >= 0; --i)
    perm.push_back(i);
  perm = ctx.node().attrInts("perm", perm);
  if (int(perm.size()) != rank)
    ctx.fail("attribute 'perm' has ", perm.size(), " entries; the input has rank ", rank);
  Shape out;
  for (int axis : ctx.normalizeAxes(perm, rank, "perm"))
    out.push_back(in[axis]);
  return {{ctx.dtype(0), out}};
}

Types expand(const InferContext &ctx) {
  requireInt64Vector(ctx, 1, "shape");
  Shape target;
  for (const SymInt &value : valuesWithKnownLength(ctx, 1, "shape")) {
    if (value.isConstant() && *value.value < 0)
      ctx.failInput(1, "(shape) has a negative dim ", *value.value);
    target.push_back(value.toDim());
  }
  std::string what = ctx.describeInput(0) + " and the shape " + shapeStr(target);
  return {{ctx.dtype(0), broadcastShapes(ctx, ctx.shape(0), target, what.c_str())}};
}

Types tile(const InferContext &ctx) {
  requireInt64Vector(ctx, 1, "repeats");
  const Shape &in = ctx.shape(0);
  // Repeats of unknown length must still have one entry per dim.
  std::vector<SymInt> repeats =
      ctx.integerValues(1).value_or(std::vector<SymInt>(in.size(), SymInt::unknown()));
  if (repeats.size() != in.size())
    ctx.failInput(1, "(repeats) has ", repeats.size(), " entries; the input has rank ",
                  in.size());
  Shape out;
  for (size_t i = 0; i < in.size(); ++i) {
    if (repeats[i].isConstant() && *repeats[i].value < 0)
      ctx.failInput(1, "(repeats) has a negative entry ", *repeats[i].value);
    out.push_back(mulDims(ctx, in[i], repeats[i].toDim()));
  }
  return {{ctx.dtype(0), out}};
}

Types concat(const InferContext &ctx) {
  if (!ctx.node().hasAttr("axis"))
    ctx.fail("attribute 'axis' is required");
  int rank = ctx.rank(0);
  int axis = ctx.normalizeAxis(ctx.node().attrInt("axis", 0), rank);
  Shape out = ctx.shape(0);
  Dim total(0);
  for (int i = 0; i < ctx.numInputs(); ++i) {
    ctx.requireSameDType(0, i);
    if (ctx.rank(i) != rank)
      ctx.failInput(i, "has rank ", ctx.rank(i), "; input 0 has rank ", rank);
    const Shape &shape = ctx.shape(i);
    for (int d = 0; d < rank; ++d)
      if (d != axis)
        out[d] = mergeDims(ctx, out[d], shape[d],
                           detail::concat("dim ", d, " of inputs 0 and ", i));
    total = addDims(ctx, total, shape[axis]);
  }
  out[axis] = total;
  return {{ctx.dtype(0), out}};
}

Types split(const InferContext &ctx) {
  const Shape &in = ctx.shape(0);
  int axis = ctx.normalizeAxis(ctx.node().attrInt("axis", 0), int(in.size()));
  int outputs = ctx.numOutputs();
  const Dim &dim = in[axis];
  std::vector<Dim> sizes;
  bool hasNumOutputs = ctx.node().hasAttr("num_outputs");
  if (ctx.hasInput(1)) {
    if (hasNumOutputs)
      ctx.fail("has both the 'split' input and the 'num_outputs' attribute");
    requireInt64Vector(ctx, 1, "split");
    std::vector<SymInt> values =
        ctx.integerValues(1).value_or(std::vector<SymInt>(outputs, SymInt::unknown()));
    if (int(values.size()) != outputs)
      ctx.failInput(1, "(split) has ", values.size(), " entries for ", outputs, " outputs");
    Dim sum(0);
    for (const SymInt &value : values) {
      if (value.isConstant() && *value.value < 0)
        ctx.failInput(1, "(split) has a negative entry ", *value.value);
      sizes.push_back(value.toDim());
      sum = addDims(ctx, sum, sizes.back());
    }
    if (sum.isStatic() && dim.isStatic() && sum.value() != dim.value())
      ctx.failInput(1, "(split) sums to ", sum.value(), ", but dim ", axis, " of the input is ",
                    dim.value());
  } else {
    int64_t parts = outputs;
    if (hasNumOutputs) {
      parts = ctx.node().attrInt("num_outputs", 0);
      if (parts != outputs)
        ctx.fail("attribute 'num_outputs' is ", parts, " but the node has ", outputs, " outputs");
    }
    if (!dim.isStatic()) {
      sizes.assign(outputs, Dim::unknown());
    } else if (dim.value() % parts == 0) {
      sizes.assign(outputs, Dim(dim.value() / parts));
    } else if (!hasNumOutputs) {
      ctx.fail("dim ", axis, " of the input (", dim.value(), ") does not split evenly into ",
               parts, " outputs");
    } else {
      // Uneven: ceil-sized chunks, the last one smaller.
      int64_t chunk = dim.value() / parts + 1;
      int64_t last = dim.value() - chunk * (parts - 1);
      if (last < 0)
        ctx.fail("dim ", axis, " of the input (", dim.value(), ") cannot split into ", parts,
                 " chunks of ", chunk);
      sizes.assign(outputs - 1, Dim(chunk));
      sizes.push_back(Dim(last));
    }
  }
  Types types;
  for (const Dim &size : sizes) {
    Shape shape = in;
    shape[axis] = size;
    types.push_back({ctx.dtype(0), shape});
  }
  return types;
}

/// A dim divided exactly by `divisor`; `what` names it when it does not divide.
Dim divideDim(const InferContext &ctx, const Dim &dim, int64_t divisor, const char *what) {
  if (!dim.isStatic())
    return divisor == 1 ? dim : Dim::unknown();
  if (dim.value() % divisor != 0)
    ctx.failInput(0, "has ", what, " ", dim.value(), ", not divisible by ", divisor);
  return Dim(dim.value() / divisor);
}

Types depthToSpace(const InferContext &ctx) {
  ctx.requireRank(0, 4);
  int64_t block = blockRearrangement(ctx.node()).blockSize;
  const Shape &in = ctx.shape(0);
  int64_t square = checkedMul(ctx, block, block);
  return {{ctx.dtype(0),
           {in[0], divideDim(ctx, in[1], square, "channel count"), mulDims(ctx, in[2], Dim(block)),
            mulDims(ctx, in[3], Dim(block))}}};
}

Types spaceToDepth(const InferContext &ctx) {
  ctx.requireRank(0, 4);
  int64_t block = blockRearrangement(ctx.node()).blockSize;
  const Shape &in = ctx.shape(0);
  int64_t square = checkedMul(ctx, block, block);
  return {{ctx.dtype(0),
           {in[0], mulDims(ctx, in[1], Dim(square)), divideDim(ctx, in[2], block, "height"),
            divideDim(ctx, in[3], block, "width")}}};
}

/// Starts and ends at least this large mean "to the end" on a dim whose size is not static.
constexpr int64_t kToTheEnd = 2147483647;

void requireIndexVector(const InferContext &ctx, int i, const char *what) {
  ctx.requireDType(i, isIndexType, "i32 or i64");
  if (ctx.rank(i) != 1)
    ctx.failInput(i, "(", what, ") must be 1-D");
}

/// The axes input (index `i`, optional) as normalised axes, defaulting to 0..count-1. nullopt
/// when the axes are present but not constant.
std::optional<std::vector<int>> axesInput(const InferContext &ctx, int i, size_t count,
                                          int rank) {
  if (!ctx.hasInput(i)) {
    if (count > size_t(rank))
      ctx.fail("has ", count, " entries per axis but the data has rank ", rank);
    std::vector<int> axes(count);
    for (size_t k = 0; k < count; ++k)
      axes[k] = int(k);
    return axes;
  }
  requireIndexVector(ctx, i, "axes");
  auto axes = ctx.constantInts(i);
  if (!axes)
    return std::nullopt;
  if (axes->size() != count)
    ctx.failInput(i, "(axes) has ", axes->size(), " entries; expected ", count);
  return ctx.normalizeAxes(*axes, rank);
}

/// The sliced size of a dim that is not static: itself when the slice takes all of it.
Dim sliceSymbolic(const Dim &dim, const SymInt &start, const SymInt &end, int64_t step) {
  auto isStart = [&](const SymInt &v) { return v.isConstant() && *v.value == 0; };
  auto isEnd = [&](const SymInt &v) {
    return (v.isConstant() && *v.value >= kToTheEnd) ||
           (dim.isSymbol() && !v.isConstant() && v.symbol == dim.symbolName());
  };
  if (step == 1 && isStart(start) && isEnd(end))
    return dim;
  if (step == -1 && ((start.isConstant() && (*start.value == -1 || *start.value >= kToTheEnd)) ||
                     isEnd(start)) &&
      end.isConstant() && *end.value <= -kToTheEnd)
    return dim;
  return Dim::unknown();
}

Types slice(const InferContext &ctx) {
  const Shape &in = ctx.shape(0);
  int rank = int(in.size());
  requireIndexVector(ctx, 1, "starts");
  requireIndexVector(ctx, 2, "ends");
  ctx.requireSameDType(1, 2);
  auto starts = ctx.integerValues(1), ends = ctx.integerValues(2);
  if (starts && ends && starts->size() != ends->size())
    ctx.fail("starts and ends have different lengths (", starts->size(), " and ", ends->size(),
             ")");
  std::optional<size_t> count = starts ? starts->size() : ends ? std::optional(ends->size())
                                                              : std::nullopt;
  if (!count) // which axes are sliced is unknown
    return {{ctx.dtype(0), unknownShape(rank)}};
  auto axes = axesInput(ctx, 3, *count, rank);
  std::optional<std::vector<int64_t>> steps = std::vector<int64_t>(*count, 1);
  if (ctx.hasInput(4)) {
    requireIndexVector(ctx, 4, "steps");
    steps = ctx.constantInts(4);
    if (steps && steps->size() != *count)
      ctx.failInput(4, "(steps) has ", steps->size(), " entries; expected ", *count);
    if (steps && std::find(steps->begin(), steps->end(), 0) != steps->end())
      ctx.failInput(4, "(steps) has a 0 step");
  }
  if (!axes)
    return {{ctx.dtype(0), unknownShape(rank)}};
  Shape out = in;
  for (size_t k = 0; k < *count; ++k) {
    int axis = (*axes)[k];
    if (!starts || !ends || !steps) {
      out[axis] = Dim::unknown();
      continue;
    }
    const SymInt &start = (*starts)[k], &end = (*ends)[k];
    int64_t step = (*steps)[k];
    if (in[axis].isStatic() && start.isConstant() && end.isConstant())
      out[axis] = Dim(sliceBounds(in[axis].value(), *start.value, *end.value, step).count);
    else
      out[axis] = sliceSymbolic(in[axis], start, end, step);
  }
  return {{ctx.dtype(0), out}};
}

Types pad(const InferContext &ctx) {
  const Shape &in = ctx.shape(0);
  int rank = int(in.size());
  std::string mode = ctx.node().attrString("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap")
    ctx.fail("attribute 'mode' must be constant, reflect, edge or wrap, not \"", mode, "\"");
  if (ctx.dtype(1) != DType::Int64 || ctx.rank(1) != 1)
    ctx.failInput(1, "(pads) must be a 1-D i64 tensor");
  if (ctx.hasInput(2)) {
    ctx.requireSameDType(0, 2);
    auto count = elementCount(ctx.shape(2));
    if (count && *count != 1)
      ctx.failInput(2, "(constant_value) must be a scalar");
  }
  auto pads = ctx.integerValues(1);
  std::optional<std::vector<int>> axes;
  if (pads) {
    if (pads->size() % 2 != 0)
      ctx.failInput(1, "(pads) has an odd number of entries (", pads->size(), ")");
    axes = axesInput(ctx, 3, pads->size() / 2, rank);
    if (!ctx.hasInput(3) && int(pads->size()) != 2 * rank)
      ctx.failInput(1, "(pads) has ", pads->size(), " entries; expected 2 * rank = ", 2 * rank);
  }
  if (!axes)
    return {{ctx.dtype(0), unknownShape(rank)}};
  Shape out = in;
  size_t count = axes->size();
  for (size_t k = 0; k < count; ++k) {
    int axis = (*axes)[k];
    const SymInt &begin = (*pads)[k], &end = (*pads)[k + count];
    if (!begin.isConstant() || !end.isConstant()) {
      out[axis] = Dim::unknown();
      continue;
    }
    int64_t total = checkedAdd(ctx, *begin.value, *end.value);
    if (in[axis].isStatic()) {
      int64_t size = checkedAdd(ctx, in[axis].value(), total);
      if (size < 0)
        ctx.fail("pads remove more than dim ", axis, " of ", ctx.describeInput(0), " holds");
      out[axis] = Dim(size);
    } else {
      out[axis] = total == 0 ? in[axis] : Dim::unknown();
    }
  }
  return {{ctx.dtype(0), out}};
}

Types trilu(const InferContext &ctx) {
  ctx.requireRankAtLeast(0, 2);
  if (ctx.hasInput(1)) {
    if (ctx.dtype(1) != DType::Int64)
      ctx.failInput(1, "(k) must be i64");
    auto count = elementCount(ctx.shape(1));
    if (ctx.rank(1) > 1 || (count && *count != 1))
      ctx.failInput(1, "(k) must be a scalar");
  }
  int64_t upper = ctx.node().attrInt("upper", 1);
  if (upper != 0 && upper != 1)
    ctx.fail("attribute 'upper' must be 0 or 1, not ", upper);
  return {ctx.type(0)};
}

/// ReverseSequence: the input's type.
Types reverseSequence(const InferContext &ctx) {
  ctx.requireRankAtLeast(0, 2);
  ctx.requireDType(1, [](DType t) { return t == DType::Int64; }, "i64");
  return {ctx.type(0)};
}

/// CenterCropPad: the listed axes (all by default) take the sizes of `shape` when they are known.
Types centerCropPad(const InferContext &ctx) {
  ctx.requireDType(1, isIndexType, "i32 or i64");
  Shape shape = ctx.shape(0);
  std::vector<int64_t> axes = ctx.node().attrInts("axes");
  if (axes.empty())
    for (int d = 0; d < ctx.rank(0); ++d)
      axes.push_back(d);
  std::vector<int> normalized = ctx.normalizeAxes(axes, ctx.rank(0));
  std::optional<std::vector<int64_t>> sizes = ctx.constantInts(1);
  for (size_t k = 0; k < normalized.size(); ++k)
    shape[size_t(normalized[k])] =
        sizes && sizes->size() == normalized.size() ? nonNegativeDim(ctx, (*sizes)[k], "shape") : Dim::unknown();
  return {{ctx.dtype(0), shape}};
}

} // namespace

void registerDataMovementInference(InferTable &table) {
  table.add(OpKind::Identity, [](const InferContext &ctx) -> Types { return {ctx.type(0)}; });
  table.add(OpKind::Reshape, reshape);
  table.add(OpKind::Flatten, flatten);
  table.add(OpKind::Squeeze, squeeze);
  table.add(OpKind::Unsqueeze, unsqueeze);
  table.add(OpKind::Transpose, transpose);
  table.add(OpKind::Expand, expand);
  table.add(OpKind::Tile, tile);
  table.add(OpKind::Concat, concat);
  table.add(OpKind::Split, split);
  table.add(OpKind::DepthToSpace, depthToSpace);
  table.add(OpKind::SpaceToDepth, spaceToDepth);
  table.add(OpKind::Slice, slice);
  table.add(OpKind::Pad, pad);
  table.add(OpKind::Trilu, trilu);
  table.add(OpKind::ReverseSequence, reverseSequence);
  table.add(OpKind::CenterCropPad, centerCropPad);
}

} // namespace sinter::infer
