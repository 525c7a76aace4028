// Element types. Float rules: IEEE-754 binary32/64, binary16 and bfloat16 are storage types that
// compute in float32 in the reference evaluator. Integer arithmetic wraps (two's complement); integer
// division truncates toward zero. Bool is one byte, 0 or 1.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace sinter {

enum class DType : uint8_t {
#define DTYPE(Name, text, size, onnx) Name,
#include "sinter/ir/dtypes.def"
};

inline constexpr int kNumDTypes = 0
#define DTYPE(Name, text, size, onnx) +1
#include "sinter/ir/dtypes.def"
    ;

/// Short name used by the text IR and messages: "f32", "i64", "bool".
std::string_view dtypeName(DType type);
std::optional<DType> dtypeFromName(std::string_view name);
/// Bytes per element.
int dtypeSize(DType type);
/// ONNX TensorProto.DataType number, and back (nullopt for types sinter lacks, e.g. strings).
int dtypeToOnnx(DType type);
std::optional<DType> dtypeFromOnnx(int onnxType);

bool isFloat(DType type);   ///< f16, bf16, f32, f64
bool isInteger(DType type); ///< signed or unsigned integers, not bool
bool isSigned(DType type);  ///< signed integers and floats

} // namespace sinter
