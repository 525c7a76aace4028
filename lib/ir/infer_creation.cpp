// Inference for ops that make tensors from shapes or sizes: Shape, Size, ConstantOfShape, Range,
// EyeLike, OneHot, NonZero and Dropout.
#include "infer_rules.h"

#include <algorithm>
#include <cmath>

namespace sinter::infer {
namespace {

Types shape(const InferContext &ctx) {
  return {{DType::Int64, {Dim(shapeRange(ctx.node(), ctx.rank(0)).size())}}};
}

Types constantOfShape(const InferContext &ctx) {
  if (ctx.dtype(0) != DType::Int64 || ctx.rank(0) != 1)
    ctx.failInput(0, "must be a 1-D i64 tensor");
  DType dtype = DType::Float32;
  if (const Tensor *value = ctx.node().attrTensor("value")) {
    if (value->elementCount() != 1)
      ctx.fail("attribute 'value' must hold one element, not ", value->elementCount());
    dtype = value->dtype();
  }
  auto values = ctx.integerValues(0);
  if (!values)
    ctx.failInput(0, "has an unknown length, so the output's rank is unknown");
  Shape out;
  for (const SymInt &value : *values) {
    if (value.isConstant() && *value.value < 0)
      ctx.failInput(0, "has a negative dim ", *value.value);
    out.push_back(value.toDim());
  }
  return {{dtype, out}};
}

/// Range's length from constant scalars: max(ceil((limit - start) / delta), 0), with the
/// difference taken in the inputs' type as ONNX's reference inference does.
int64_t rangeLength(const InferContext &ctx, const Tensor &start, const Tensor &limit,
                    const Tensor &delta) {
  DType dtype = start.dtype();
  if (isFloat(dtype)) {
    double difference = dtype == DType::Float32 ? double(float(limit.getDouble(0)) -
                                                         float(start.getDouble(0)))
                                                : limit.getDouble(0) - start.getDouble(0);
    double step = delta.getDouble(0);
    if (step == 0)
      ctx.failInput(2, "(delta) is zero");
    double count = std::ceil(difference / step);
    if (std::isnan(count) || count >= 9.2e18)
      ctx.fail("the range from ", start.getDouble(0), " to ", limit.getDouble(0), " by ", step,
               " has no finite length");
    return count > 0 ? int64_t(count) : 0;
  }
  auto length = integerRangeLength(start.getInt(0), limit.getInt(0), delta.getInt(0));
  if (!length)
    ctx.fail(delta.getInt(0) == 0 ? "input 2 (delta) is zero" : "the range's length overflows");
  return *length;
}

Types range(const InferContext &ctx) {
  ctx.requireDType(0, [](DType t) {
    return t == DType::Float32 || t == DType::Float64 || t == DType::Int16 || t == DType::Int32 ||
           t == DType::Int64 || t == DType::Float16 || t == DType::BFloat16; // f16, bf16: opset 27
  }, "f32, f64, f16, bf16, i16, i32 or i64");
  static const char *const kNames[] = {"start", "limit", "delta"};
  for (int i = 0; i < 3; ++i) {
    ctx.requireSameDType(0, i);
    requireScalar(ctx, i, kNames[i]);
  }
  const Tensor *start = ctx.constant(0), *limit = ctx.constant(1), *delta = ctx.constant(2);
  if (start && limit && delta)
    return {{ctx.dtype(0), {Dim(rangeLength(ctx, *start, *limit, *delta))}}};
  if (isInteger(ctx.dtype(0))) {
    auto first = ctx.integerValues(0), last = ctx.integerValues(1), step = ctx.integerValues(2);
    if (first && last && step && first->size() == 1 && step->size() == 1 && last->size() == 1) {
      const SymInt &from = (*first)[0], &to = (*last)[0], &by = (*step)[0];
      if (from.isConstant() && to.isConstant() && by.isConstant()) {
        auto length = integerRangeLength(*from.value, *to.value, *by.value);
        if (!length)
          ctx.fail(*by.value == 0 ? "input 2 (delta) is zero" : "the range's length overflows");
        return {{ctx.dtype(0), {Dim(*length)}}};
      }
      // Range(0, n, 1) where n traces to a dim is that dim (position ids, arange(seq)).
      if (from == SymInt::constant(0) && by == SymInt::constant(1))
        return {{ctx.dtype(0), {to.toDim()}}};
    }
  }
  return {{ctx.dtype(0), {Dim::unknown()}}};
}

Types eyeLike(const InferContext &ctx) {
  ctx.requireRank(0, 2);
  DType dtype = ctx.dtype(0);
  if (ctx.node().hasAttr("dtype"))
    dtype = dtypeFromOnnxAttr(ctx, ctx.node().attrInt("dtype", 0), "dtype");
  return {{dtype, ctx.shape(0)}};
}

Types oneHot(const InferContext &ctx) {
  auto notBf16 = [](DType t) { return isNumeric(t) && t != DType::BFloat16; };
  ctx.requireDType(0, notBf16, "a numeric type other than bool and bf16");
  ctx.requireDType(1, notBf16, "a numeric type other than bool and bf16");
  ctx.requireRankAtLeast(0, 1);
  requireScalar(ctx, 1, "depth");
  if (ctx.rank(2) != 1 || (ctx.shape(2)[0].isStatic() && ctx.shape(2)[0].value() != 2))
    ctx.failInput(2, "(values) must be a 1-D tensor of two elements [off, on]");
  const Shape &indices = ctx.shape(0);
  int outRank = int(indices.size()) + 1;
  int axis = ctx.normalizeAxis(ctx.node().attrInt("axis", -1), outRank);
  Dim depth = Dim::unknown();
  if (const Tensor *tensor = ctx.constant(1)) {
    double value = std::trunc(tensor->getDouble(0));
    if (!(value >= 0) || value >= 9.2e18)
      ctx.failInput(1, "(depth) must be non-negative and finite, not ", tensor->getDouble(0));
    depth = Dim(int64_t(value));
  } else if (auto values = ctx.integerValues(1); values && values->size() == 1) {
    depth = (*values)[0].toDim();
  }
  Shape out = indices;
  out.insert(out.begin() + axis, depth);
  return {{ctx.dtype(2), out}};
}

Types nonZero(const InferContext &ctx) {
  Dim count = Dim::unknown(); // data-dependent
  if (const Tensor *tensor = ctx.constant(0); tensor && tensor->elementCount() <= (1 << 20)) {
    int64_t nonZeros = 0;
    for (int64_t i = 0; i < tensor->elementCount(); ++i)
      nonZeros += tensor->getDouble(i) != 0.0;
    count = Dim(nonZeros);
  }
  return {{DType::Int64, {Dim(ctx.rank(0)), count}}};
}

Types dropout(const InferContext &ctx) {
  ctx.requireDType(0, isFloatType, "a float type");
  if (ctx.hasInput(1)) {
    ctx.requireDType(1, isFloatType, "a float type");
    requireScalar(ctx, 1, "ratio");
  }
  if (ctx.hasInput(2)) {
    ctx.requireDType(2, isBool, "bool");
    requireScalar(ctx, 2, "training_mode");
  }
  Types types = {ctx.type(0)};
  if (ctx.numOutputs() == 2)
    types.push_back({DType::Bool, ctx.shape(0)});
  return types;
}

} // namespace

void registerCreationInference(InferTable &table) {
  table.add(OpKind::Shape, shape);
  table.add(OpKind::Size, [](const InferContext &ctx) -> Types {
    ctx.type(0);
    return {{DType::Int64, {}}};
  });
  table.add(OpKind::ConstantOfShape, constantOfShape);
  table.add(OpKind::Range, range);
  table.add(OpKind::EyeLike, eyeLike);
  table.add(OpKind::OneHot, oneHot);
  table.add(OpKind::NonZero, nonZero);
  table.add(OpKind::Dropout, dropout);
}

} // namespace sinter::infer
