// Inference for QuantizeLinear and DequantizeLinear: the output has the input's shape; the
// output dtype comes from the zero point, output_dtype, or the scale, as ONNX specifies. The
// scale's shape selects per-tensor (one element), per-axis (1-D along `axis`) or blocked
// (the input's rank, dim `axis` divided into blocks of block_size) quantisation.
#include "infer_rules.h"

namespace sinter::infer {
namespace {

/// The types QuantizeLinear gives and DequantizeLinear takes (ONNX opset 25, less float6).
bool isQuantizedType(DType t) {
  return t == DType::Int8 || t == DType::Uint8 || t == DType::Int16 || t == DType::Uint16 ||
         (isLowPrecision(t) && t != DType::Float8E8M0);
}
constexpr const char *kQuantizedTypes =
    "i8, u8, i16, u16, i4, u4, i2, u2, f8e4m3fn, f8e4m3fnuz, f8e5m2, f8e5m2fnuz or f4e2m1";
bool isScaleType(DType t) {
  return t == DType::Float32 || t == DType::Float16 || t == DType::BFloat16;
}

/// Checks input 1 (the scale) against input 0, and the zero point (input 2) against the scale.
void checkScaleShape(const InferContext &ctx) {
  const Shape &x = ctx.shape(0), &scale = ctx.shape(1);
  int64_t blockSize = ctx.node().attrInt("block_size", 0);
  if (blockSize < 0)
    ctx.fail("attribute 'block_size' must not be negative, not ", blockSize);
  auto count = elementCount(scale);
  bool perTensor = scale.empty() || (scale.size() == 1 && count && *count == 1 && blockSize == 0);
  if (!perTensor) {
    int axis = ctx.normalizeAxis(ctx.node().attrInt("axis", 1), int(x.size()));
    if (blockSize == 0) {
      if (scale.size() != 1)
        ctx.failInput(1, "(scale) must be a scalar or 1-D along axis ", axis,
                      " (or set block_size for blocked quantisation)");
      mergeDims(ctx, scale[0], x[axis],
                detail::concat("the scale's length and dim ", axis, " of the input"));
    } else {
      if (scale.size() != x.size())
        ctx.failInput(1, "(scale) must have the input's rank for blocked quantisation");
      for (size_t d = 0; d < x.size(); ++d) {
        if (int(d) != axis) {
          mergeDims(ctx, scale[d], x[d], detail::concat("dim ", d, " of the scale and the input"));
        } else if (scale[d].isStatic() && x[d].isStatic()) {
          int64_t blocks = x[d].value() / blockSize + (x[d].value() % blockSize != 0);
          if (scale[d].value() != blocks)
            ctx.failInput(1, "(scale) has ", scale[d].value(), " blocks along axis ", axis,
                          "; block_size ", blockSize, " needs ", blocks);
        }
      }
    }
  }
  if (ctx.hasInput(2)) {
    const Shape &zeroPoint = ctx.shape(2);
    // A one-element zero point goes with a one-element scale whatever their ranks ([] and [1]).
    auto zeroCount = elementCount(zeroPoint);
    if (count && *count == 1 && zeroCount && *zeroCount == 1)
      return;
    if (zeroPoint.size() != scale.size())
      ctx.failInput(2, "(zero point) must have the scale's shape ", shapeStr(scale));
    for (size_t d = 0; d < scale.size(); ++d)
      mergeDims(ctx, zeroPoint[d], scale[d], detail::concat("dim ", d, " of zero point and scale"));
  }
}

Types quantizeLinear(const InferContext &ctx) {
  auto acceptInput = [](DType t) { return isScaleType(t) || t == DType::Int32; };
  ctx.requireDType(0, acceptInput, "f32, f16, bf16 or i32");
  ctx.requireDType(1, acceptInput, "f32, f16, bf16 or i32");
  int64_t saturate = ctx.node().attrInt("saturate", 1);
  if (saturate != 0 && saturate != 1)
    ctx.fail("attribute 'saturate' must be 0 or 1, not ", saturate);
  int64_t outputType = ctx.node().attrInt("output_dtype", 0);
  DType dtype = DType::Uint8;
  if (ctx.hasInput(2)) {
    ctx.requireDType(2, isQuantizedType, kQuantizedTypes);
    dtype = ctx.dtype(2);
    if (outputType != 0 && dtypeFromOnnxAttr(ctx, outputType, "output_dtype") != dtype)
      ctx.fail("attribute 'output_dtype' (", outputType, ") differs from the zero point's dtype ",
               dtypeName(dtype));
  } else if (outputType != 0) {
    dtype = dtypeFromOnnxAttr(ctx, outputType, "output_dtype");
    if (!isQuantizedType(dtype))
      ctx.fail("attribute 'output_dtype' must name ", kQuantizedTypes, ", not ", dtypeName(dtype));
  }
  if (ctx.node().hasAttr("precision")) {
    int64_t precision = ctx.node().attrInt("precision", 0);
    if (precision != 0 && !isFloat(dtypeFromOnnxAttr(ctx, precision, "precision")))
      ctx.fail("attribute 'precision' must name a float type");
  }
  checkScaleShape(ctx);
  return {{dtype, ctx.shape(0)}};
}

Types dequantizeLinear(const InferContext &ctx) {
  ctx.requireDType(0, [](DType t) { return isQuantizedType(t) || t == DType::Int32; },
                   "i8, u8, i16, u16, i32, i4, u4, i2, u2, f8e4m3fn, f8e4m3fnuz, f8e5m2, "
                   "f8e5m2fnuz or f4e2m1");
  ctx.requireDType(1, isScaleType, "f32, f16 or bf16");
  if (ctx.hasInput(2))
    ctx.requireSameDType(0, 2);
  DType dtype = ctx.dtype(1);
  if (int64_t outputType = ctx.node().attrInt("output_dtype", 0); outputType != 0) {
    dtype = dtypeFromOnnxAttr(ctx, outputType, "output_dtype");
    if (!isScaleType(dtype))
      ctx.fail("attribute 'output_dtype' must name f32, f16 or bf16, not ", dtypeName(dtype));
  }
  checkScaleShape(ctx);
  return {{dtype, ctx.shape(0)}};
}

} // namespace

void registerQuantizationInference(InferTable &table) {
  table.add(OpKind::QuantizeLinear, quantizeLinear);
  table.add(OpKind::DequantizeLinear, dequantizeLinear);
}

} // namespace sinter::infer
