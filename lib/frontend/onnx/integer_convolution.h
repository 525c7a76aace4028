// Private to the ONNX frontend: ConvInteger and QLinearConv become float64 convolutions of the
// shifted integers (exact for 8-bit data) followed by the integer or quantised result.
#pragma once

#include "onnx_internal.h"

namespace sinter::onnx::detail {

std::vector<Value *> importConvInteger(Builder &builder, OnnxNode &node);
std::vector<Value *> importQLinearConv(Builder &builder, OnnxNode &node);

} // namespace sinter::onnx::detail
