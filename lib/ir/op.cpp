#include "sinter/ir/op.h"
#include "sinter/ir/op_families.h"

#include "sinter/support/error.h"

#include <array>
#include <sstream>

namespace sinter {
namespace {

std::optional<AttrKind> parseKind(std::string_view text) {
  static constexpr std::pair<std::string_view, AttrKind> kKinds[] = {
      {"i", AttrKind::Int},          {"f", AttrKind::Float},     {"s", AttrKind::String},
      {"ints", AttrKind::Ints},      {"floats", AttrKind::Floats}, {"strings", AttrKind::Strings},
      {"t", AttrKind::Tensor}};
  for (auto [name, kind] : kKinds)
    if (name == text)
      return kind;
  return std::nullopt;
}

std::vector<AttrSchema> parseSchema(std::string_view op, const char *text) {
  std::vector<AttrSchema> schema;
  std::istringstream stream{std::string(text)};
  std::string item;
  while (stream >> item) {
    bool required = item.back() == '!';
    if (required)
      item.pop_back();
    size_t colon = item.find(':');
    SINTER_ASSERT(colon != std::string::npos, "ops.def attribute '", item, "' of ", op);
    auto kind = parseKind(std::string_view(item).substr(colon + 1));
    SINTER_ASSERT(kind, "ops.def attribute kind in '", item, "' of ", op);
    schema.push_back({item.substr(0, colon), *kind, required});
  }
  return schema;
}

const std::array<OpInfo, kNumOps> &table() {
  static const std::array<OpInfo, kNumOps> kTable = {{
#define OP(Name, minIn, maxIn, minOut, maxOut, fusion, family, attrs)                              \
  {#Name, minIn, maxIn, minOut, maxOut, FusionClass::fusion, OpFamily::family, parseSchema(#Name, attrs)},
#include "sinter/ir/ops.def"
  }};
  return kTable;
}

} // namespace

std::string_view fusionClassName(FusionClass fusion) {
  switch (fusion) {
  case FusionClass::Elementwise: return "elementwise";
  case FusionClass::Reduction: return "reduction";
  case FusionClass::Gemm: return "gemm";
  case FusionClass::Convolution: return "convolution";
  case FusionClass::DataMovement: return "data-movement";
  case FusionClass::Opaque: return "opaque";
  }
  return "?";
}

std::string_view opFamilyName(OpFamily family) {
  switch (family) {
  case OpFamily::Elementwise: return "elementwise";
  case OpFamily::Contraction: return "contraction";
  case OpFamily::Convolution: return "convolution";
  case OpFamily::Pooling: return "pooling";
  case OpFamily::Normalization: return "normalization";
  case OpFamily::Reduction: return "reduction";
  case OpFamily::DataMovement: return "data_movement";
  case OpFamily::Indexing: return "indexing";
  case OpFamily::Resampling: return "resampling";
  case OpFamily::Creation: return "creation";
  case OpFamily::Attention: return "attention";
  case OpFamily::Recurrent: return "recurrent";
  case OpFamily::Loss: return "loss";
  case OpFamily::Quantization: return "quantization";
  case OpFamily::Signal: return "signal";
  case OpFamily::Detection: return "detection";
  case OpFamily::Counting: return "counting";
  }
  return "?";
}

void FamilyRegistrar::admit(OpKind kind) const {
  SINTER_ASSERT(family_, "a ", layer_, " rule for ", opName(kind), " registered outside its family's registration");
  SINTER_ASSERT(opFamily(kind) == *family_, "the ", opFamilyName(*family_), " family's ", layer_, " rules register ",
                opName(kind), ", which ops.def puts in the ", opFamilyName(opFamily(kind)), " family");
}

std::string_view attrKindName(AttrKind kind) {
  switch (kind) {
  case AttrKind::Int: return "int";
  case AttrKind::Float: return "float";
  case AttrKind::String: return "string";
  case AttrKind::Ints: return "ints";
  case AttrKind::Floats: return "floats";
  case AttrKind::Strings: return "strings";
  case AttrKind::Tensor: return "tensor";
  }
  return "?";
}

const AttrSchema *OpInfo::findAttribute(std::string_view attribute) const {
  for (const AttrSchema &entry : attributes)
    if (entry.name == attribute)
      return &entry;
  return nullptr;
}

const OpInfo &opInfo(OpKind kind) { return table()[static_cast<int>(kind)]; }

std::optional<OpKind> opFromName(std::string_view name) {
  const auto &ops = table();
  for (int i = 0; i < kNumOps; ++i)
    if (ops[i].name == name)
      return static_cast<OpKind>(i);
  return std::nullopt;
}

} // namespace sinter
