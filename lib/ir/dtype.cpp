#include "sinter/ir/dtype.h"

#include <array>

namespace sinter {
namespace {
struct DTypeInfo {
  std::string_view name;
  int size;
  int onnx;
  int bits;
};
constexpr std::array<DTypeInfo, kNumDTypes> kInfo = {{
#define DTYPE(Name, text, size, onnx, bits) {text, size, onnx, bits},
#include "sinter/ir/dtypes.def"
}};
} // namespace

std::string_view dtypeName(DType type) { return kInfo[static_cast<int>(type)].name; }
int dtypeSize(DType type) { return kInfo[static_cast<int>(type)].size; }
int dtypeToOnnx(DType type) { return kInfo[static_cast<int>(type)].onnx; }
int dtypeBits(DType type) { return kInfo[static_cast<int>(type)].bits; }

std::optional<DType> dtypeFromName(std::string_view name) {
  for (int i = 0; i < kNumDTypes; ++i)
    if (kInfo[i].name == name)
      return static_cast<DType>(i);
  return std::nullopt;
}

std::optional<DType> dtypeFromOnnx(int onnxType) {
  for (int i = 0; i < kNumDTypes; ++i)
    if (kInfo[i].onnx == onnxType)
      return static_cast<DType>(i);
  return std::nullopt;
}

bool isFloat(DType type) {
  return type == DType::Float32 || type == DType::Float16 || type == DType::BFloat16 ||
         type == DType::Float64;
}
bool isInteger(DType type) {
  return !isFloat(type) && type != DType::Bool && !isLowPrecision(type);
}
bool isSigned(DType type) {
  return isFloat(type) || (isLowPrecisionFloat(type) && type != DType::Float8E8M0) ||
         type == DType::Int8 ||
         type == DType::Int16 || type == DType::Int32 || type == DType::Int64 ||
         type == DType::Int4 || type == DType::Int2;
}
bool isLowPrecisionFloat(DType type) {
  return type == DType::Float8E4M3FN || type == DType::Float8E4M3FNUZ ||
         type == DType::Float8E5M2 || type == DType::Float8E5M2FNUZ ||
         type == DType::Float8E8M0 || type == DType::Float4E2M1;
}
bool isLowPrecisionInteger(DType type) {
  return type == DType::Int4 || type == DType::Uint4 || type == DType::Int2 ||
         type == DType::Uint2;
}
bool isLowPrecision(DType type) { return isLowPrecisionFloat(type) || isLowPrecisionInteger(type); }

} // namespace sinter
