// Inference for reductions (Reduce* with axes as an input), ArgMax/ArgMin, the softmax family,
// CumSum and TopK.
#include "infer_rules.h"

#include <algorithm>

namespace sinter::infer {
namespace {

/// Floats and 32/64-bit integers: the type set of most ONNX reductions.
bool isReducible(DType t) {
  return isFloat(t) || t == DType::Int32 || t == DType::Int64 || t == DType::Uint32 ||
         t == DType::Uint64;
}
/// ReduceMax and ReduceMin also take bool and 8-bit integers.
bool isMinMaxReducible(DType t) {
  return isReducible(t) || t == DType::Bool || t == DType::Int8 || t == DType::Uint8;
}

int64_t booleanAttr(const InferContext &ctx, const char *name, int64_t fallback) {
  int64_t value = ctx.node().attrInt(name, fallback);
  if (value != 0 && value != 1)
    ctx.fail("attribute '", name, "' must be 0 or 1, not ", value);
  return value;
}

Types reduce(const InferContext &ctx) {
  bool minMax = ctx.kind() == OpKind::ReduceMax || ctx.kind() == OpKind::ReduceMin;
  if (minMax)
    ctx.requireDType(0, isMinMaxReducible, "a float type, bool, or an 8/32/64-bit integer");
  else
    ctx.requireDType(0, isReducible, "a float type or a 32/64-bit integer");
  bool keepDims = booleanAttr(ctx, "keepdims", 1);
  bool noopWithEmptyAxes = booleanAttr(ctx, "noop_with_empty_axes", 0);
  const Shape &in = ctx.shape(0);
  int rank = int(in.size());
  DType dtype = ctx.dtype(0);

  std::optional<std::vector<SymInt>> axisValues = std::vector<SymInt>{};
  if (ctx.hasInput(1)) {
    if (ctx.dtype(1) != DType::Int64)
      ctx.failInput(1, "(axes) must be i64");
    if (ctx.rank(1) > 1)
      ctx.failInput(1, "(axes) must be 1-D");
    axisValues = ctx.integerValues(1);
    if (!axisValues && !keepDims)
      ctx.failInput(1, "(axes) has an unknown length, so the result's rank is unknown");
  }
  // With keepdims, each dim either stays or becomes 1: a dim that is 1 already is known.
  auto keptOrOne = [&] {
    Shape out;
    for (const Dim &dim : in)
      out.push_back(dim == Dim(1) ? dim : Dim::unknown());
    return Types{{dtype, out}};
  };
  if (!axisValues) // unknown length (possibly empty, which with noop keeps every dim)
    return keptOrOne();
  if (axisValues->empty()) {
    if (noopWithEmptyAxes)
      return {ctx.type(0)};
    Shape out = keepDims ? Shape(in.size(), Dim(1)) : Shape{};
    return {{dtype, out}};
  }

  std::vector<int64_t> axes;
  for (const SymInt &value : *axisValues) {
    if (!value.isConstant()) {
      // Axes known only by count: with keepdims each dim becomes 1 or stays; without, the rank
      // drops by the count (axes must be distinct).
      if (keepDims)
        return keptOrOne();
      if (int(axisValues->size()) > rank)
        ctx.failInput(1, "(axes) has more entries than the data has dims");
      return {{dtype, unknownShape(rank - int(axisValues->size()))}};
    }
    axes.push_back(*value.value);
  }
  std::vector<bool> reduced(rank, false);
  for (int64_t axis : axes)
    reduced[ctx.normalizeAxis(axis, rank, "axes entry")] = true; // repeats are harmless here
  Shape out;
  for (int i = 0; i < rank; ++i) {
    if (!reduced[i])
      out.push_back(in[i]);
    else if (keepDims)
      out.push_back(Dim(1));
  }
  return {{dtype, out}};
}

Types argReduce(const InferContext &ctx) {
  ctx.requireDType(0, isNumeric, "a numeric (non-bool) type");
  bool keepDims = booleanAttr(ctx, "keepdims", 1);
  booleanAttr(ctx, "select_last_index", 0);
  Shape out = ctx.shape(0);
  int axis = ctx.normalizeAxis(ctx.node().attrInt("axis", 0), int(out.size()));
  if (keepDims)
    out[axis] = Dim(1);
  else
    out.erase(out.begin() + axis);
  return {{DType::Int64, out}};
}

/// Softmax, LogSoftmax, Hardmax: same type, along a valid axis.
Types softmaxLike(const InferContext &ctx) {
  ctx.requireDType(0, isFloatType, "a float type");
  ctx.normalizeAxis(ctx.node().attrInt("axis", -1), ctx.rank(0));
  return {ctx.type(0)};
}

Types cumSum(const InferContext &ctx) {
  ctx.requireDType(0, isReducible, "a float type or a 32/64-bit integer");
  ctx.requireDType(1, isIndexType, "i32 or i64");
  if (ctx.rank(1) != 0 && !(ctx.rank(1) == 1 && ctx.shape(1)[0] == Dim(1)))
    ctx.failInput(1, "(axis) must be a scalar");
  booleanAttr(ctx, "exclusive", 0);
  booleanAttr(ctx, "reverse", 0);
  if (auto axis = ctx.constantInts(1); axis && axis->size() == 1)
    ctx.normalizeAxis(axis->front(), ctx.rank(0));
  else if (ctx.rank(0) == 0)
    ctx.failInput(0, "must have rank >= 1");
  return {ctx.type(0)};
}

Types topK(const InferContext &ctx) {
  ctx.requireDType(0, [](DType t) { return isNumeric(t) && t != DType::BFloat16; },
                   "a numeric type other than bf16");
  if (ctx.dtype(1) != DType::Int64)
    ctx.failInput(1, "(K) must be i64");
  if (ctx.rank(1) != 1 || (ctx.shape(1)[0].isStatic() && ctx.shape(1)[0].value() != 1))
    ctx.failInput(1, "(K) must be a 1-D tensor of one element");
  booleanAttr(ctx, "largest", 1);
  booleanAttr(ctx, "sorted", 1);
  Shape out = ctx.shape(0);
  int axis = ctx.normalizeAxis(ctx.node().attrInt("axis", -1), int(out.size()));
  Dim k = Dim::unknown();
  if (auto values = ctx.integerValues(1); values && values->size() == 1) {
    const SymInt &value = (*values)[0];
    if (value.isConstant() && *value.value < 0)
      ctx.failInput(1, "(K) is negative (", *value.value, ")");
    if (value.isConstant() && out[axis].isStatic() && *value.value > out[axis].value())
      ctx.failInput(1, "(K) is ", *value.value, ", larger than dim ", axis, " of the input (",
                    out[axis].value(), ")");
    k = value.toDim();
  }
  out[axis] = k;
  return {{ctx.dtype(0), out}, {DType::Int64, out}};
}

} // namespace

void registerReductionInference(InferTable &table) {
  for (OpKind kind :
       {OpKind::ReduceL1, OpKind::ReduceL2, OpKind::ReduceLogSum, OpKind::ReduceLogSumExp,
        OpKind::ReduceMax, OpKind::ReduceMean, OpKind::ReduceMin, OpKind::ReduceProd,
        OpKind::ReduceSum, OpKind::ReduceSumSquare})
    table.add(kind, reduce);
  table.add(OpKind::ArgMax, argReduce);
  table.add(OpKind::ArgMin, argReduce);
  table.add(OpKind::Softmax, softmaxLike);
  table.add(OpKind::LogSoftmax, softmaxLike);
  table.add(OpKind::Hardmax, softmaxLike);
  table.add(OpKind::CumSum, cumSum);
  table.add(OpKind::CumProd, cumSum);
  table.add(OpKind::TopK, topK);
}

} // namespace sinter::infer
