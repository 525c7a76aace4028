// ConvInteger and QLinearConv, imported as float64 convolutions of the zero-point-shifted
// integers. Every product and sum of 8-bit values is an integer below 2^53, so f64 holds it
// exactly and the result equals the int32 convolution ONNX specifies:
//   ConvInteger   y = Cast<i32>(Conv(f64(x) - f64(x_zp), f64(w) - f64(w_zp)))
//   QLinearConv   y = Cast<T>(Round(Clip(Conv(..., f64(B)) * f64(x_scale * w_scale / y_scale)
//                                      + f64(y_zp), T's range)))
// with the scale factor computed in f32 as ONNX's reference does, and a per-output-channel
// w_zero_point / w_scale ([M]) reshaped to broadcast over W's (or Y's) channel dim.
#include "integer_convolution.h"

#include "sinter/support/error.h"

namespace sinter::onnx::detail {
namespace {

constexpr int64_t kOnnxDouble = 11;

Value *input(const OnnxNode &n, int index) {
  return index < int(n.inputs.size()) ? n.inputs[index] : nullptr;
}

std::string helper(const OnnxNode &n, const std::string &suffix) {
  for (const std::string &name : n.outputNames)
    if (!name.empty())
      return name + "." + suffix;
  return suffix;
}

std::string helperNode(const OnnxNode &n, const std::string &suffix) {
  return n.proto.name().empty() ? "" : n.proto.name() + "." + suffix;
}

Value *toDouble(Builder &b, const OnnxNode &n, Value *value, const std::string &what) {
  return b.emitOne(OpKind::Cast, {value}, {{"to", kOnnxDouble}}, helper(n, what), helperNode(n, what));
}

/// A per-output-channel vector [M] as [M, 1, ...] (rank `rank`), anything else as it is.
Value *perChannel(Builder &b, const OnnxNode &n, Value *value, int rank, const std::string &what) {
  if (value->rank() != 1 || !value->shape()[0].isStatic() || value->shape()[0].value() == 1)
    return value;
  std::vector<int64_t> shape(size_t(rank), 1);
  shape[0] = -1;
  return b.emitOne(OpKind::Reshape, {value, b.constantInts(helper(n, what + "_shape"), shape)}, {},
                   helper(n, what), helperNode(n, what));
}

/// f64(x) - f64(x_zp) and f64(w) - f64(w_zp), then the f64 convolution (with `bias` when given).
Value *shiftedConvolution(Builder &b, OnnxNode &n, int xIndex, int xZero, int wIndex, int wZero, Value *bias) {
  Value *x = input(n, xIndex), *w = input(n, wIndex);
  if (!x || !w)
    userError(n.where, ": x and w are required");
  for (Value *value : {x, w})
    if (value->dtype() != DType::Int8 && value->dtype() != DType::Uint8)
      userError(n.where, ": x and w must be i8 or u8, not ", dtypeName(value->dtype()));
  Value *xf = toDouble(b, n, x, "x_f64");
  if (Value *zero = input(n, xZero))
    xf = b.emitOne(OpKind::Sub, {xf, toDouble(b, n, zero, "x_zero_f64")}, {}, helper(n, "x_shifted"), helperNode(n, "x_shifted"));
  Value *wf = toDouble(b, n, w, "w_f64");
  if (Value *zero = input(n, wZero)) {
    Value *shift = perChannel(b, n, toDouble(b, n, zero, "w_zero_f64"), w->rank(), "w_zero_channels");
    wf = b.emitOne(OpKind::Sub, {wf, shift}, {}, helper(n, "w_shifted"), helperNode(n, "w_shifted"));
  }
  std::map<std::string, Attribute> attributes = n.attributes.convertRemaining(OpKind::Conv);
  std::vector<Value *> inputs = {xf, wf};
  if (bias)
    inputs.push_back(bias);
  return b.emitOne(OpKind::Conv, inputs, attributes, helper(n, "conv"), helperNode(n, "conv"));
}

} // namespace

std::vector<Value *> importConvInteger(Builder &b, OnnxNode &n) {
  Value *sum = shiftedConvolution(b, n, 0, 2, 1, 3, nullptr);
  return b.emit(OpKind::Cast, {sum}, {{"to", int64_t(6)}}, n.outputNames, n.proto.name());
}

std::vector<Value *> importQLinearConv(Builder &b, OnnxNode &n) {
  for (int i = 0; i < 8; ++i)
    if (!input(n, i))
      userError(n.where, ": input ", i, " is required but missing");
  Value *yZero = input(n, 7);
  if (yZero->dtype() != DType::Int8 && yZero->dtype() != DType::Uint8)
    userError(n.where, ": y_zero_point must be i8 or u8, not ", dtypeName(yZero->dtype()));
  Value *bias = input(n, 8) ? toDouble(b, n, input(n, 8), "bias_f64") : nullptr;
  Value *sum = shiftedConvolution(b, n, 0, 2, 3, 5, bias);
  // x_scale * w_scale / y_scale in f32, per output channel when w_scale is [M].
  Value *factor = b.emitOne(OpKind::Mul, {input(n, 1), input(n, 4)}, {}, helper(n, "scale_product"), helperNode(n, "scale_product"));
  factor = b.emitOne(OpKind::Div, {factor, input(n, 6)}, {}, helper(n, "factor"), helperNode(n, "factor"));
  factor = perChannel(b, n, toDouble(b, n, factor, "factor_f64"), sum->rank() - 1, "factor_channels");
  Value *scaled = b.emitOne(OpKind::Mul, {sum, factor}, {}, helper(n, "scaled"), helperNode(n, "scaled"));
  Value *shifted = b.emitOne(OpKind::Add, {scaled, toDouble(b, n, yZero, "y_zero_f64")}, {}, helper(n, "shifted"),
                             helperNode(n, "shifted"));
  bool isSigned = yZero->dtype() == DType::Int8;
  Value *low = b.constantScalar(helper(n, "low"), DType::Float64, isSigned ? -128 : 0);
  Value *high = b.constantScalar(helper(n, "high"), DType::Float64, isSigned ? 127 : 255);
  Value *clipped = b.emitOne(OpKind::Clip, {shifted, low, high}, {}, helper(n, "clipped"), helperNode(n, "clipped"));
  Value *rounded = b.emitOne(OpKind::Round, {clipped}, {}, helper(n, "rounded"), helperNode(n, "rounded"));
  return b.emit(OpKind::Cast, {rounded}, {{"to", int64_t(isSigned ? 3 : 2)}}, n.outputNames, n.proto.name());
}

} // namespace sinter::onnx::detail
