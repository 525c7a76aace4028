// Inference for the integer matrix products MatMulInteger (int32 result) and QLinearMatMul (the
// output zero point's type): numpy matmul over operands of rank >= 2 whose batch dims broadcast;
// and for DynamicQuantizeLinear, which quantises a tensor for them.
// The quantisation parameters' shapes are checked against the data by the reference evaluator
// and the lowering, which read them.
#include "infer_rules.h"

namespace sinter::infer {
namespace {

bool isQuantized8(DType t) { return t == DType::Int8 || t == DType::Uint8; }

Shape productShape(const InferContext &ctx, int a, int b) {
  ctx.requireDType(a, isQuantized8, "i8 or u8");
  ctx.requireDType(b, isQuantized8, "i8 or u8");
  ctx.requireRankAtLeast(a, 2);
  ctx.requireRankAtLeast(b, 2);
  const Shape &x = ctx.shape(a), &y = ctx.shape(b);
  mergeDims(ctx, x.back(), y[y.size() - 2], "the inner dimensions of A and B");
  Shape batch = broadcastShapes(ctx, Shape(x.begin(), x.end() - 2), Shape(y.begin(), y.end() - 2),
                                "the batch dims of A and B");
  batch.push_back(x[x.size() - 2]);
  batch.push_back(y.back());
  return batch;
}

Types matMulInteger(const InferContext &ctx) {
  Shape out = productShape(ctx, 0, 1);
  if (ctx.hasInput(2))
    ctx.requireSameDType(0, 2);
  if (ctx.hasInput(3))
    ctx.requireSameDType(1, 3);
  return {{DType::Int32, out}};
}

Types qlinearMatMul(const InferContext &ctx) {
  Shape out = productShape(ctx, 0, 3);
  ctx.requireDType(1, isFloatType, "a float type");
  ctx.requireSameDType(1, 4);
  ctx.requireSameDType(1, 6);
  ctx.requireSameDType(0, 2);
  ctx.requireSameDType(3, 5);
  ctx.requireDType(7, isQuantized8, "i8 or u8");
  return {{ctx.dtype(7), out}};
}

// DynamicQuantizeLinear: f32 x -> u8 y of x's shape, f32 scale and u8 zero point (scalars).
Types dynamicQuantizeLinear(const InferContext &ctx) {
  ctx.requireDType(0, [](DType t) { return t == DType::Float32; }, "f32");
  return {{DType::Uint8, ctx.shape(0)}, {DType::Float32, {}}, {DType::Uint8, {}}};
}

} // namespace

void registerQuantizedMatMulInference(InferTable &table) {
  table.add(OpKind::DynamicQuantizeLinear, dynamicQuantizeLinear);
  table.add(OpKind::MatMulInteger, matMulInteger);
  table.add(OpKind::QLinearMatMul, qlinearMatMul);
}

} // namespace sinter::infer
