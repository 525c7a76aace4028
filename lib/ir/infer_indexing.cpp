// Inference for ops that index into a tensor: Slice (negative steps, clamping), Pad (pads and
// axes inputs), Resize (scales or sizes, with axes and keep_aspect_ratio_policy), Gather,
// GatherElements, GatherND, ScatterElements, ScatterND and Trilu.
#include "infer_rules.h"

#include <algorithm>
#include <cmath>

namespace sinter::infer {
namespace {

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

/// An input that is absent, or present but empty (exporters pass "" or an empty tensor).
bool isEmptyInput(const InferContext &ctx, int i) {
  if (!ctx.hasInput(i))
    return true;
  auto count = elementCount(ctx.shape(i));
  return count && *count == 0;
}

Types resize(const InferContext &ctx) {
  const Shape &in = ctx.shape(0);
  int rank = int(in.size());
  const Node &node = ctx.node();
  std::string policy = node.attrString("keep_aspect_ratio_policy", "stretch");
  if (policy != "stretch" && policy != "not_larger" && policy != "not_smaller")
    ctx.fail("attribute 'keep_aspect_ratio_policy' must be stretch, not_larger or not_smaller, ",
             "not \"", policy, "\"");
  std::vector<int> axes;
  if (node.hasAttr("axes")) {
    axes = ctx.normalizeAxes(node.attrInts("axes"), rank);
  } else {
    for (int i = 0; i < rank; ++i)
      axes.push_back(i);
  }
  bool hasScales = !isEmptyInput(ctx, 2), hasSizes = !isEmptyInput(ctx, 3);
  if (hasScales == hasSizes)
    ctx.fail("needs exactly one of the 'scales' (input 2) and 'sizes' (input 3) inputs");
  Shape out = in;
  if (hasScales) {
    if (ctx.dtype(2) != DType::Float32 || ctx.rank(2) != 1)
      ctx.failInput(2, "(scales) must be a 1-D f32 tensor");
    if (policy != "stretch")
      ctx.fail("'scales' needs keep_aspect_ratio_policy \"stretch\"");
    const Tensor *scales = ctx.constant(2);
    if (ctx.shape(2)[0].isStatic() && size_t(ctx.shape(2)[0].value()) != axes.size())
      ctx.failInput(2, "(scales) has ", ctx.shape(2)[0].value(), " entries; expected ",
                    axes.size());
    for (size_t k = 0; k < axes.size(); ++k) {
      int axis = axes[k];
      if (!scales) {
        out[axis] = Dim::unknown();
        continue;
      }
      double scale = scales->getDouble(int64_t(k));
      if (!(scale > 0) || !std::isfinite(scale))
        ctx.failInput(2, "(scales) has a non-positive or non-finite scale ", scale);
      if (!in[axis].isStatic()) {
        out[axis] = scale == 1.0 ? in[axis] : Dim::unknown();
        continue;
      }
      double size = std::floor(double(in[axis].value()) * scale);
      if (size >= 9.2e18)
        ctx.fail("resizing dim ", axis, " by ", scale, " overflows");
      out[axis] = Dim(int64_t(size));
    }
    return {{ctx.dtype(0), out}};
  }

  if (ctx.dtype(3) != DType::Int64 || ctx.rank(3) != 1)
    ctx.failInput(3, "(sizes) must be a 1-D i64 tensor");
  auto sizes = ctx.integerValues(3);
  if (sizes && sizes->size() != axes.size())
    ctx.failInput(3, "(sizes) has ", sizes->size(), " entries; expected ", axes.size());
  if (!sizes) {
    for (int axis : axes)
      out[axis] = Dim::unknown();
    return {{ctx.dtype(0), out}};
  }
  for (const SymInt &size : *sizes)
    if (size.isConstant() && *size.value < 0)
      ctx.failInput(3, "(sizes) has a negative size ", *size.value);
  if (policy == "stretch") {
    for (size_t k = 0; k < axes.size(); ++k)
      out[axes[k]] = (*sizes)[k].toDim();
    return {{ctx.dtype(0), out}};
  }
  // not_larger / not_smaller: one scale for every axis, the min (or max) of sizes / input.
  bool known = true;
  double scale = 0;
  for (size_t k = 0; k < axes.size(); ++k) {
    const Dim &dim = in[axes[k]];
    if (!dim.isStatic() || !(*sizes)[k].isConstant() || dim.value() == 0) {
      known = false;
      break;
    }
    double ratio = double(*(*sizes)[k].value) / double(dim.value());
    scale = k == 0 ? ratio : policy == "not_larger" ? std::min(scale, ratio) : std::max(scale, ratio);
  }
  for (size_t k = 0; k < axes.size(); ++k) {
    double size = std::round(scale * double(in[axes[k]].value()));
    if (known && size >= 9.2e18)
      ctx.fail("resizing dim ", axes[k], " by ", scale, " overflows");
    out[axes[k]] = known ? Dim(int64_t(size)) : Dim::unknown();
  }
  return {{ctx.dtype(0), out}};
}

Types gather(const InferContext &ctx) {
  ctx.requireRankAtLeast(0, 1);
  ctx.requireDType(1, isIndexType, "i32 or i64");
  const Shape &data = ctx.shape(0);
  int axis = ctx.normalizeAxis(ctx.node().attrInt("axis", 0), int(data.size()));
  if (data[axis].isStatic() && ctx.constant(1)) {
    const Tensor &indices = *ctx.constant(1);
    int64_t size = data[axis].value();
    for (int64_t i = 0; i < indices.elementCount(); ++i) {
      int64_t index = indices.getInt(i);
      if (index < -size || index >= size)
        ctx.failInput(1, "(indices) has ", index, ", out of range for dim ", axis, " of size ",
                      size);
    }
  }
  Shape out(data.begin(), data.begin() + axis);
  const Shape &indices = ctx.shape(1);
  out.insert(out.end(), indices.begin(), indices.end());
  out.insert(out.end(), data.begin() + axis + 1, data.end());
  return {{ctx.dtype(0), out}};
}

Types gatherElements(const InferContext &ctx) {
  ctx.requireRankAtLeast(0, 1);
  ctx.requireDType(1, isIndexType, "i32 or i64");
  if (ctx.rank(1) != ctx.rank(0))
    ctx.failInput(1, "(indices) must have the rank of the data (", ctx.rank(0), ")");
  ctx.normalizeAxis(ctx.node().attrInt("axis", 0), ctx.rank(0));
  return {{ctx.dtype(0), ctx.shape(1)}};
}

/// GatherND and ScatterND: the index depth k = indices.shape[-1], which must be static.
int64_t indexDepth(const InferContext &ctx, int batchDims) {
  const Dim &last = ctx.shape(1).back();
  if (!last.isStatic())
    ctx.failInput(1, "(indices) has a non-static last dim, so the output's rank is unknown");
  int64_t k = last.value();
  if (k < 1 || k > ctx.rank(0) - batchDims)
    ctx.failInput(1, "(indices) has last dim ", k, "; expected 1 to ", ctx.rank(0) - batchDims);
  return k;
}

Types gatherND(const InferContext &ctx) {
  ctx.requireRankAtLeast(0, 1);
  ctx.requireRankAtLeast(1, 1);
  if (ctx.dtype(1) != DType::Int64)
    ctx.failInput(1, "(indices) must be i64");
  int64_t batchDims = ctx.node().attrInt("batch_dims", 0);
  if (batchDims < 0 || batchDims >= std::min(ctx.rank(0), ctx.rank(1)))
    ctx.fail("attribute 'batch_dims' is ", batchDims, "; expected 0 to ",
             std::min(ctx.rank(0), ctx.rank(1)) - 1);
  int64_t k = indexDepth(ctx, int(batchDims));
  const Shape &data = ctx.shape(0);
  Shape out(ctx.shape(1).begin(), ctx.shape(1).end() - 1);
  for (int64_t b = 0; b < batchDims; ++b)
    out[b] = mergeDims(ctx, out[b], data[b], detail::concat("batch dim ", b, " of data and indices"));
  out.insert(out.end(), data.begin() + batchDims + k, data.end());
  return {{ctx.dtype(0), out}};
}

void checkReduction(const InferContext &ctx) {
  std::string reduction = ctx.node().attrString("reduction", "none");
  if (reduction != "none" && reduction != "add" && reduction != "mul" && reduction != "max" &&
      reduction != "min")
    ctx.fail("attribute 'reduction' must be none, add, mul, max or min, not \"", reduction, "\"");
}

Types scatterElements(const InferContext &ctx) {
  ctx.requireRankAtLeast(0, 1);
  ctx.requireDType(1, isIndexType, "i32 or i64");
  ctx.requireSameDType(0, 2);
  if (ctx.rank(1) != ctx.rank(0))
    ctx.failInput(1, "(indices) must have the rank of the data (", ctx.rank(0), ")");
  if (ctx.rank(2) != ctx.rank(1))
    ctx.failInput(2, "(updates) must have the shape of the indices");
  for (int d = 0; d < ctx.rank(1); ++d)
    mergeDims(ctx, ctx.shape(1)[d], ctx.shape(2)[d],
              detail::concat("dim ", d, " of indices and updates"));
  ctx.normalizeAxis(ctx.node().attrInt("axis", 0), ctx.rank(0));
  checkReduction(ctx);
  return {ctx.type(0)};
}

Types scatterND(const InferContext &ctx) {
  ctx.requireRankAtLeast(0, 1);
  ctx.requireRankAtLeast(1, 1);
  if (ctx.dtype(1) != DType::Int64)
    ctx.failInput(1, "(indices) must be i64");
  ctx.requireSameDType(0, 2);
  checkReduction(ctx);
  int64_t k = indexDepth(ctx, 0);
  const Shape &data = ctx.shape(0), &indices = ctx.shape(1), &updates = ctx.shape(2);
  Shape expected(indices.begin(), indices.end() - 1);
  expected.insert(expected.end(), data.begin() + k, data.end());
  if (updates.size() != expected.size())
    ctx.failInput(2, "(updates) must have shape ", shapeStr(expected));
  for (size_t d = 0; d < expected.size(); ++d)
    mergeDims(ctx, updates[d], expected[d],
              detail::concat("dim ", d, " of updates and of indices[:-1] + data[k:]"));
  return {ctx.type(0)};
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

/// GridSample: X [N, C, D1..Dr] and grid [N, G1..Gr, r] give [N, C, G1..Gr].
Types gridSample(const InferContext &ctx) {
  ctx.requireDType(1, isFloatType, "a float type");
  int rank = ctx.rank(0);
  if (rank < 3)
    ctx.failInput(0, "must be [N, C, D1, ...]");
  ctx.requireRank(1, rank);
  const Shape &x = ctx.shape(0), &grid = ctx.shape(1);
  if (grid.back().isStatic() && grid.back().value() != rank - 2)
    ctx.failInput(1, "(grid) must end in a dim of ", rank - 2, " coordinates");
  std::string mode = ctx.node().attrString("mode", "linear");
  if (mode != "nearest" && mode != "linear" && mode != "cubic" && mode != "bilinear" && mode != "bicubic")
    ctx.fail("attribute 'mode' must be nearest, linear or cubic, not \"", mode, "\"");
  Shape out{mergeDims(ctx, x[0], grid[0], "the batch dims of X and grid"), x[1]};
  out.insert(out.end(), grid.begin() + 1, grid.end() - 1);
  return {{ctx.dtype(0), out}};
}

/// AffineGrid: theta [N, r, r + 1] and size [N, C, D1..Dr] give [N, D1..Dr, r].
Types affineGrid(const InferContext &ctx) {
  ctx.requireDType(0, isFloatType, "a float type");
  ctx.requireRank(0, 3);
  ctx.requireDType(1, isIndexType, "i32 or i64");
  const Shape &theta = ctx.shape(0);
  int spatial = theta[1].isStatic() ? int(theta[1].value()) : -1;
  if (spatial != 2 && spatial != 3)
    ctx.failInput(0, "(theta) must be [N, 2, 3] or [N, 3, 4]");
  Shape out{theta[0]};
  if (auto size = ctx.constantInts(1); size && int(size->size()) == spatial + 2) {
    for (int i = 0; i < spatial; ++i)
      out.push_back(nonNegativeDim(ctx, (*size)[size_t(2 + i)], "size"));
  } else {
    for (int i = 0; i < spatial; ++i)
      out.push_back(Dim::unknown());
  }
  out.push_back(Dim(spatial));
  return {{ctx.dtype(0), out}};
}

/// Compress: the kept length depends on the condition's values, so that dim is unknown (the
/// whole output, 1-D, without `axis`).
Types compress(const InferContext &ctx) {
  ctx.requireDType(1, isBool, "bool");
  ctx.requireRank(1, 1);
  if (!ctx.node().hasAttr("axis"))
    return {{ctx.dtype(0), {Dim::unknown()}}};
  Shape shape = ctx.shape(0);
  shape[size_t(ctx.normalizeAxis(ctx.node().attrInt("axis", 0), ctx.rank(0)))] = Dim::unknown();
  return {{ctx.dtype(0), shape}};
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

/// NonMaxSuppression: [selected, 3] int64, the count known only from the data.
Types nonMaxSuppression(const InferContext &ctx) {
  ctx.requireDType(0, isFloatType, "a float type");
  ctx.requireSameDType(0, 1);
  ctx.requireRank(0, 3);
  ctx.requireRank(1, 3);
  int64_t centered = ctx.node().attrInt("center_point_box", 0);
  if (centered != 0 && centered != 1)
    ctx.fail("attribute 'center_point_box' must be 0 or 1, not ", centered);
  return {{DType::Int64, {Dim::unknown(), Dim(3)}}};
}

} // namespace

void registerIndexingInference(InferTable &table) {
  table.add(OpKind::Slice, slice);
  table.add(OpKind::Pad, pad);
  table.add(OpKind::Resize, resize);
  table.add(OpKind::GridSample, gridSample);
  table.add(OpKind::AffineGrid, affineGrid);
  table.add(OpKind::Compress, compress);
  table.add(OpKind::NonMaxSuppression, nonMaxSuppression);
  table.add(OpKind::ReverseSequence, reverseSequence);
  table.add(OpKind::CenterCropPad, centerCropPad);
  table.add(OpKind::Gather, gather);
  table.add(OpKind::GatherElements, gatherElements);
  table.add(OpKind::GatherND, gatherND);
  table.add(OpKind::ScatterElements, scatterElements);
  table.add(OpKind::ScatterND, scatterND);
  table.add(OpKind::Trilu, trilu);
}

} // namespace sinter::infer
