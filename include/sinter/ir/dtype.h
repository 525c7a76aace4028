// Element types. Float rules: IEEE-754 binary32/64, binary16 and bfloat16 are storage types that
// compute in float32 in the reference evaluator. Integer arithmetic wraps (two's complement); integer
// division truncates toward zero. Bool is one byte, 0 or 1.
//
// The low-precision types (float8 in five forms, float4e2m1, 4- and 2-bit integers) are storage
// only: ops that move data, Cast, CastLike, QuantizeLinear and DequantizeLinear take them; no op
// computes in them. Each takes one byte inside sinter; low_precision.h has their encodings and
// conversions.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace sinter {

enum class DType : uint8_t {
#define DTYPE(Name, text, size, onnx, bits) Name,
#include "sinter/ir/dtypes.def"
};

inline constexpr int kNumDTypes = 0
#define DTYPE(Name, text, size, onnx, bits) +1
#include "sinter/ir/dtypes.def"
    ;

/// Short name used by the text IR and messages: "f32", "i64", "bool".
std::string_view dtypeName(DType type);
std::optional<DType> dtypeFromName(std::string_view name);
/// Bytes per element inside sinter (one for every low-precision type).
int dtypeSize(DType type);
/// Bits per element in ONNX's storage (4 for int4, 2 for int2; otherwise 8 * dtypeSize).
int dtypeBits(DType type);
/// ONNX TensorProto.DataType number, and back (nullopt for types sinter lacks, e.g. strings).
int dtypeToOnnx(DType type);
std::optional<DType> dtypeFromOnnx(int onnxType);

bool isFloat(DType type);   ///< f16, bf16, f32, f64 (the float types sinter computes in)
bool isInteger(DType type); ///< u8..u64 and i8..i64 (not bool, not the 4- and 2-bit integers)
bool isSigned(DType type);  ///< signed integers and floats (of any width)
/// The storage-only types: f8e4m3fn, f8e4m3fnuz, f8e5m2, f8e5m2fnuz, f8e8m0, f4e2m1, i4, u4, i2, u2.
bool isLowPrecision(DType type);
bool isLowPrecisionFloat(DType type);   ///< the float8 forms and f4e2m1
bool isLowPrecisionInteger(DType type); ///< i4, u4, i2, u2

} // namespace sinter
