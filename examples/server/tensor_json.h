// Tensors in the KServe v2 protocol's JSON: a model dtype's datatype name, and a tensor's "data"
// (a flat or nested array, row-major) to bytes and back, exactly: floats are read from their text
// straight to the type (no rounding through double) and written in the shortest text that reads
// back to the same bits, so a float tensor survives a round trip bit for bit. Shared by the server
// (requests in, responses out) and the load generator (requests out, responses checked).
#pragma once

#include "json.h"
#include "sinter/runtime.hpp"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace sinter::serving {

/// Data that does not fit the tensor: the message names the tensor and the element.
class TensorJsonError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// The v2 protocol's name of a dtype ("FP32", "INT64", ...); "" for one it cannot carry in JSON.
const char *protocolDatatype(sinter_dtype dtype);

/// "[1,64]".
std::string shapeText(const int64_t *dims, size_t rank);
std::string shapeJson(const sinter_tensor_info &info);

/// `data`'s elements as the bytes of a tensor of `info`; `where` names it in errors.
std::vector<uint8_t> decodeTensorData(const Json &data, const sinter_tensor_info &info,
                                      const std::string &where);
/// An integer element, range-checked for T.
template <typename T> T decodeInteger(const Json &value, const std::string &where, size_t index);
/// Appends the tensor's elements as a flat JSON array.
void appendTensorData(std::string &out, const uint8_t *bytes, const sinter_tensor_info &info);

uint16_t floatToHalf(float value);
float halfToFloat(uint16_t half);

} // namespace sinter::serving
