// Reference rules for QuantizeLinear and DequantizeLinear (ai.onnx opset 25) with integer
// quantised types (u8, i8, u16, i16, i32, and the 4- and 2-bit u4, i4, u2, i2) and the
// low-precision floats (f8e4m3fn, f8e4m3fnuz, f8e5m2, f8e5m2fnuz, f4e2m1).
//
// The scale (and zero point, which has the scale's shape) picks the granularity: one element is
// per-tensor; a 1-D tensor of the axis's length is per-axis; a tensor of x's rank whose `axis` dim
// is ceil(D / block_size) is blocked, each scale covering block_size consecutive elements along
// the axis.
//
// Precision follows the spec and what ONNX's reference and onnxruntime compute:
//   QuantizeLinear:   q = x / scale in the division type (`precision`, else the scale's float type;
//                     double when an operand is an integer). Integer types: rounded half to even,
//                     plus the zero point, saturated to the output type. Float types: plus the
//                     zero point (which the spec requires to be 0 for float8), then rounded to the
//                     type with Cast's rules (`saturate` for float8; f4e2m1 always saturates).
//   DequantizeLinear: y = float(x - zero_point) * scale in float32 (x - zero_point exact; double
//                     when the scale or output is f64), then rounded to the output type; the
//                     low-precision floats subtract their values in float32.
// A NaN quotient quantises to the zero point for integer types (ONNX leaves it undefined).
#include "dispatch.h"
#include "tensor_index.h"
#include "registry.h"

#include <cmath>

namespace sinter::reference {
namespace {

bool isQuantizedType(DType dtype) {
  return dtype == DType::Uint8 || dtype == DType::Int8 || dtype == DType::Uint16 ||
         dtype == DType::Int16 || dtype == DType::Int32 ||
         (isLowPrecision(dtype) && dtype != DType::Float8E8M0);
}
constexpr const char *kQuantizedTypes =
    "u8, i8, u16, i16, i32, u4, i4, u2, i2, f8e4m3fn, f8e4m3fnuz, f8e5m2, f8e5m2fnuz, f4e2m1";

/// For each element of x, the index of its scale and zero point.
std::vector<int64_t> parameterIndices(const Node &node, const Tensor &x, const Tensor &scale,
                                      const Tensor *zeroPoint) {
  bool bothSingle = zeroPoint && zeroPoint->elementCount() == 1 && scale.elementCount() == 1;
  if (zeroPoint && !bothSingle && zeroPoint->dims() != scale.dims())
    userError(node.describe(), ": the zero point's shape ", shapeStr(shapeOf(zeroPoint->dims())),
              " differs from the scale's ", shapeStr(shapeOf(scale.dims())));
  std::vector<int64_t> indices(x.elementCount(), 0);
  if (scale.elementCount() == 1 || x.elementCount() == 0)
    return indices; // per-tensor
  int64_t blockSize = node.attrInt("block_size", 0);
  if (blockSize < 0)
    userError(node.describe(), ": block_size must not be negative, not ", blockSize);
  if (x.rank() == 0)
    userError(node.describe(), ": a scalar input needs a scalar scale");
  int64_t axis = normalizeAxis(node, node.attrInt("axis", 1), x.rank());
  int64_t axisSize = x.dims()[axis];
  if (blockSize == 0) {
    if (scale.rank() != 1 || scale.dims()[0] != axisSize)
      userError(node.describe(), ": a per-axis scale must be 1-D of length ", axisSize,
                " (the size of axis ", axis, "), not ", shapeStr(shapeOf(scale.dims())));
    AxisSplit split = splitAtAxis(x.dims(), axis);
    for (int64_t i = 0; i < x.elementCount(); ++i)
      indices[i] = (i / split.inner) % split.size;
    return indices;
  }
  std::vector<int64_t> expected = x.dims();
  expected[axis] = (axisSize + blockSize - 1) / blockSize;
  if (scale.dims() != expected)
    userError(node.describe(), ": a blocked scale for block_size ", blockSize, " must have shape ",
              shapeStr(shapeOf(expected)), ", not ", shapeStr(shapeOf(scale.dims())));
  std::vector<int64_t> at(x.rank(), 0);
  for (int64_t i = 0; i < x.elementCount(); ++i) {
    std::vector<int64_t> block = at;
    block[axis] /= blockSize;
    indices[i] = ravel(block, scale.dims());
    nextIndex(at, x.dims());
  }
  return indices;
}

/// Rounds a double to a float dtype's precision (the value stays a double).
double roundToPrecision(DType dtype, double value) {
  switch (dtype) {
  case DType::Float32: return static_cast<float>(value);
  case DType::Float16: return halfToFloat(doubleToHalf(value));
  case DType::BFloat16: return bfloat16ToFloat(doubleToBfloat16(value));
  default: return value;
  }
}

Tensor quantizeLinear(const Node &node, const Inputs &inputs) {
  const Tensor &x = *inputs[0];
  const Tensor &scale = *inputs[1];
  const Tensor *zeroPoint = inputs.size() > 2 ? inputs[2] : nullptr;
  for (int i = 0; i < 2; ++i)
    if (!isFloat(inputs[i]->dtype()) && inputs[i]->dtype() != DType::Int32)
      userError(node.describe(), ": input ", i, " must be float or int32, not ",
                dtypeName(inputs[i]->dtype()));

  // The output type: the zero point's, else output_dtype, else uint8.
  DType outType = DType::Uint8;
  if (int64_t attribute = node.attrInt("output_dtype", 0)) {
    std::optional<DType> dtype = dtypeFromOnnx(static_cast<int>(attribute));
    if (!dtype)
      userError(node.describe(), ": output_dtype ", attribute, " is not supported by sinter");
    if (zeroPoint && zeroPoint->dtype() != *dtype)
      userError(node.describe(), ": output_dtype ", dtypeName(*dtype),
                " differs from the zero point's type ", dtypeName(zeroPoint->dtype()));
    outType = *dtype;
  }
  if (zeroPoint)
    outType = zeroPoint->dtype();
  if (!isQuantizedType(outType))
    userError(node.describe(), ": cannot quantize to ", dtypeName(outType), " (supported: ",
              kQuantizedTypes, ")");

  // The division type.
  DType division = DType::Float64;
  if (int64_t precision = node.attrInt("precision", 0)) {
    std::optional<DType> dtype = dtypeFromOnnx(static_cast<int>(precision));
    if (!dtype || !isFloat(*dtype))
      userError(node.describe(), ": precision ", precision, " is not a float type");
    division = *dtype;
  } else if (isFloat(x.dtype()) && isFloat(scale.dtype())) {
    // The wider of the two float types, as numpy promotes them.
    division = x.dtype() == scale.dtype() ? x.dtype()
               : (x.dtype() == DType::Float64 || scale.dtype() == DType::Float64) ? DType::Float64
                                                                                  : DType::Float32;
  }

  std::vector<int64_t> parameter = parameterIndices(node, x, scale, zeroPoint);
  Tensor out(outType, x.dims());
  auto quotientAt = [&](int64_t i) {
    double numerator = roundToPrecision(division, loadAsDouble(x, i));
    double denominator = roundToPrecision(division, loadAsDouble(scale, parameter[i]));
    return roundToPrecision(division, numerator / denominator);
  };
  if (isLowPrecisionFloat(outType)) {
    LowPrecisionRounding rounding;
    rounding.saturate = node.attrInt("saturate", 1) != 0;
    for (int64_t i = 0; i < x.elementCount(); ++i) {
      double value = quotientAt(i);
      if (zeroPoint)
        value = roundToPrecision(division, value + loadAsDouble(*zeroPoint, parameter[i]));
      out.data<uint8_t>()[i] = encodeLowPrecisionFloat(outType, value, rounding);
    }
    return out;
  }
  int64_t low = 0, high = 0;
  if (isLowPrecisionInteger(outType)) {
    low = lowPrecisionIntegerMin(outType);
    high = lowPrecisionIntegerMax(outType);
  } else {
    visitDType<IntegerDTypes>(node, outType, [&](auto tag) {
      using T = ComputeType<decltype(tag)::value>;
      low = std::numeric_limits<T>::lowest();
      high = std::numeric_limits<T>::max();
    });
  }
  for (int64_t i = 0; i < x.elementCount(); ++i) {
    double quotient = std::nearbyint(quotientAt(i));
    int64_t zero = zeroPoint ? zeroPoint->getInt(parameter[i]) : 0;
    double value = std::isnan(quotient) ? double(zero) : quotient + double(zero);
    value = std::min<double>(std::max<double>(value, double(low)), double(high));
    out.setInt(i, static_cast<int64_t>(value));
  }
  return out;
}

Tensor dequantizeLinear(const Node &node, const Inputs &inputs) {
  const Tensor &x = *inputs[0];
  const Tensor &scale = *inputs[1];
  const Tensor *zeroPoint = inputs.size() > 2 ? inputs[2] : nullptr;
  if (!isQuantizedType(x.dtype()))
    userError(node.describe(), ": cannot dequantize ", dtypeName(x.dtype()), " (supported: ",
              kQuantizedTypes, ")");
  if (!isFloat(scale.dtype()))
    userError(node.describe(), ": the scale must be float, not ", dtypeName(scale.dtype()));
  if (zeroPoint && zeroPoint->dtype() != x.dtype())
    userError(node.describe(), ": the zero point is ", dtypeName(zeroPoint->dtype()),
              " but the input is ", dtypeName(x.dtype()));
  DType outType = scale.dtype();
  if (int64_t attribute = node.attrInt("output_dtype", 0)) {
    std::optional<DType> dtype = dtypeFromOnnx(static_cast<int>(attribute));
    if (!dtype || !isFloat(*dtype))
      userError(node.describe(), ": output_dtype ", attribute, " is not a float type");
    outType = *dtype;
  }
  bool wide = outType == DType::Float64 || scale.dtype() == DType::Float64;
  std::vector<int64_t> parameter = parameterIndices(node, x, scale, zeroPoint);
  Tensor out(outType, x.dims());
  if (isLowPrecisionFloat(x.dtype())) {
    for (int64_t i = 0; i < x.elementCount(); ++i) {
      // Both values are exact in float; their difference rounds in float32 as ONNX's does.
      float difference = static_cast<float>(x.getDouble(i)) -
                         (zeroPoint ? static_cast<float>(zeroPoint->getDouble(parameter[i])) : 0.0f);
      double factor = loadAsDouble(scale, parameter[i]);
      if (wide)
        storeFromDouble(out, i, static_cast<double>(difference) * factor);
      else
        storeFromDouble(out, i, difference * static_cast<float>(factor));
    }
    return out;
  }
  for (int64_t i = 0; i < x.elementCount(); ++i) {
    int64_t difference = x.getInt(i) - (zeroPoint ? zeroPoint->getInt(parameter[i]) : 0);
    double factor = loadAsDouble(scale, parameter[i]);
    if (wide) // f64 (beyond the spec) multiplies in double
      storeFromDouble(out, i, static_cast<double>(difference) * factor);
    else
      storeFromDouble(out, i, static_cast<float>(difference) * static_cast<float>(factor));
  }
  return out;
}

} // namespace

void registerQuantizationRules(RuleTable &table) {
  table.add(OpKind::QuantizeLinear, [](const Node &node, const Inputs &inputs) -> Outputs {
    return {quantizeLinear(node, inputs)};
  });
  table.add(OpKind::DequantizeLinear, [](const Node &node, const Inputs &inputs) -> Outputs {
    return {dequantizeLinear(node, inputs)};
  });
}

} // namespace sinter::reference
