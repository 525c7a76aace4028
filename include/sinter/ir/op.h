// The op table (ops.def) as C++: the kind enum, names, arity, fusion class and attribute schema.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sinter {

enum class OpKind : uint16_t {
#define OP(Name, minIn, maxIn, minOut, maxOut, fusion, attrs) Name,
#include "sinter/ir/ops.def"
};

inline constexpr int kNumOps = 0
#define OP(Name, minIn, maxIn, minOut, maxOut, fusion, attrs) +1
#include "sinter/ir/ops.def"
    ;

/// How an op fuses with its neighbours (DESIGN.md, "Passes").
enum class FusionClass : uint8_t { Elementwise, Reduction, Gemm, Convolution, DataMovement, Opaque };
std::string_view fusionClassName(FusionClass fusion);

enum class AttrKind : uint8_t { Int, Float, String, Ints, Floats, Strings, Tensor };
std::string_view attrKindName(AttrKind kind);

struct AttrSchema {
  std::string name;
  AttrKind kind;
  bool required;
};

struct OpInfo {
  std::string_view name;
  int minInputs, maxInputs;   ///< maxInputs -1: variadic
  int minOutputs, maxOutputs; ///< maxOutputs -1: variadic
  FusionClass fusion;
  std::vector<AttrSchema> attributes;

  /// The schema entry for an attribute name, or null when the op has no such attribute.
  const AttrSchema *findAttribute(std::string_view attribute) const;
};

const OpInfo &opInfo(OpKind kind);
inline std::string_view opName(OpKind kind) { return opInfo(kind).name; }
std::optional<OpKind> opFromName(std::string_view name);

} // namespace sinter
