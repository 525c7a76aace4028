// The IR's text form: printing. The grammar is fixed by example in printer.h and written out in
// docs/ir.md; parser.cpp reads it back. Output depends only on the graph's contents and order
// (attributes are kept in name order by the Node), so it is deterministic.
//
// Lossless rules: floats print in the shortest form that reads back to the same bits (with ".0"
// appended when that form looks like an integer, so a float never reads as an int); a NaN other
// than the canonical quiet NaN prints its bits; tensors print their elements when small and their
// raw little-endian bytes otherwise.
#include "sinter/ir/printer.h"

#include "sinter/ir/graph.h"
#include "sinter/ir/low_precision.h"
#include "sinter/support/error.h"
#include "text_syntax.h"

#include <bit>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>

namespace sinter {
namespace {

static_assert(std::endian::native == std::endian::little,
              "dense<\"0x...\"> tensors are little-endian; a big-endian host needs byte swaps");

void appendQuoted(std::string &out, std::string_view text) {
  static const char kHex[] = "0123456789ABCDEF";
  out += '"';
  for (char c : text) {
    auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (byte < 0x20 || byte == 0x7f) {
      out += "\\x";
      out += kHex[byte >> 4];
      out += kHex[byte & 15];
    } else {
      out += c; // printable ASCII, and UTF-8 bytes as they are
    }
  }
  out += '"';
}

/// A value, graph or node name after its sigil: bare when the lexer reads it back as one token.
void appendName(std::string &out, char sigil, std::string_view name) {
  out += sigil;
  if (text::isBareName(name))
    out += name;
  else
    appendQuoted(out, name);
}

void appendIdentifier(std::string &out, std::string_view name) {
  if (text::isBareIdentifier(name))
    out += name;
  else
    appendQuoted(out, name);
}

template <typename Bits> void appendHexBits(std::string &out, Bits bits) {
  char buffer[32];
  auto result = std::to_chars(buffer, buffer + sizeof buffer, bits, 16);
  std::string digits(buffer, result.ptr);
  for (char &c : digits)
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  out += "0x";
  out.append(sizeof(Bits) * 2 - digits.size(), '0');
  out += digits;
}

/// Shortest round-trip form of a float or double; see the note at the top of the file.
template <typename Float, typename Bits> void appendFloat(std::string &out, Float value,
                                                          Bits canonicalNan) {
  if (std::isnan(value)) {
    auto bits = std::bit_cast<Bits>(value);
    if (bits == canonicalNan) {
      out += "nan";
    } else {
      out += "nan(";
      appendHexBits(out, bits);
      out += ')';
    }
    return;
  }
  if (std::isinf(value)) {
    out += value < 0 ? "-inf" : "inf";
    return;
  }
  char buffer[64];
  auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  std::string_view digits(buffer, result.ptr);
  out += digits;
  if (digits.find_first_of(".e") == std::string_view::npos)
    out += ".0";
}

void appendFloat32(std::string &out, float value) {
  appendFloat(out, value, text::kCanonicalNanBits32);
}

template <typename Int> void appendInt(std::string &out, Int value) {
  char buffer[32];
  auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  out.append(buffer, result.ptr);
}

void appendType(std::string &out, const TensorType &type) {
  out += dtypeName(type.dtype);
  out += '[';
  for (size_t i = 0; i < type.shape.size(); ++i) {
    if (i)
      out += ',';
    const Dim &dim = type.shape[i];
    if (dim.isStatic())
      appendInt(out, dim.value());
    else if (dim.isSymbol())
      appendIdentifier(out, dim.symbolName());
    else
      out += '?';
  }
  out += ']';
}

/// Small tensors list their elements, except where a list could not carry every bit: 16-bit
/// and low-precision floats (kept as stored bytes), and bools and sub-byte integers whose bytes
/// are not in their canonical form.
bool printsAsList(const Tensor &tensor) {
  if (tensor.elementCount() > text::kMaxListedElements || tensor.dtype() == DType::Float16 ||
      tensor.dtype() == DType::BFloat16 || isLowPrecisionFloat(tensor.dtype()))
    return false;
  if (isLowPrecisionInteger(tensor.dtype()))
    for (uint8_t byte : tensor.values<uint8_t>())
      if (byte != canonicalLowPrecisionByte(tensor.dtype(), byte))
        return false;
  if (tensor.dtype() == DType::Bool)
    for (uint8_t byte : tensor.values<uint8_t>())
      if (byte > 1)
        return false;
  return true;
}

void appendElement(std::string &out, const Tensor &tensor, int64_t i) {
  switch (tensor.dtype()) {
  case DType::Float32: appendFloat32(out, tensor.data<float>()[i]); return;
  case DType::Float64: appendFloat(out, tensor.data<double>()[i], text::kCanonicalNanBits64); return;
  case DType::Bool: out += tensor.data<uint8_t>()[i] ? "true" : "false"; return;
  case DType::Int8: appendInt(out, tensor.data<int8_t>()[i]); return;
  case DType::Uint8: appendInt(out, tensor.data<uint8_t>()[i]); return;
  case DType::Int16: appendInt(out, tensor.data<int16_t>()[i]); return;
  case DType::Uint16: appendInt(out, tensor.data<uint16_t>()[i]); return;
  case DType::Int32: appendInt(out, tensor.data<int32_t>()[i]); return;
  case DType::Uint32: appendInt(out, tensor.data<uint32_t>()[i]); return;
  case DType::Int64: appendInt(out, tensor.data<int64_t>()[i]); return;
  case DType::Uint64: appendInt(out, tensor.data<uint64_t>()[i]); return;
  case DType::Int4:
  case DType::Uint4:
  case DType::Int2:
  case DType::Uint2: appendInt(out, lowPrecisionIntegerValue(tensor.dtype(), tensor.data<uint8_t>()[i])); return;
  case DType::Float16:
  case DType::BFloat16:
  case DType::Float8E4M3FN:
  case DType::Float8E4M3FNUZ:
  case DType::Float8E5M2:
  case DType::Float8E5M2FNUZ:
  case DType::Float8E8M0:
  case DType::Float4E2M1: break; // printsAsList() sends these to hex
  }
  SINTER_ASSERT(false, "no list form for ", dtypeName(tensor.dtype()));
}

/// "f32[2] [1.0, 2.0]", "f16[2] dense<\"0x003C0040\">" or, for dumps, an elided payload.
void appendTensor(std::string &out, const Tensor &tensor, const PrintOptions &options) {
  appendType(out, tensor.type());
  out += ' ';
  if (options.elideConstantsAbove && tensor.byteSize() > options.elideConstantsAbove) {
    out += "dense<elided ";
    appendInt(out, tensor.byteSize());
    out += " bytes>";
    return;
  }
  if (printsAsList(tensor)) {
    out += '[';
    for (int64_t i = 0; i < tensor.elementCount(); ++i) {
      if (i)
        out += ", ";
      appendElement(out, tensor, i);
    }
    out += ']';
    return;
  }
  static const char kHex[] = "0123456789ABCDEF";
  out += "dense<\"0x";
  const auto *bytes = reinterpret_cast<const unsigned char *>(tensor.data());
  for (size_t i = 0; i < tensor.byteSize(); ++i) {
    out += kHex[bytes[i] >> 4];
    out += kHex[bytes[i] & 15];
  }
  out += "\">";
}

template <typename T, typename Print>
void appendList(std::string &out, const std::vector<T> &items, Print print) {
  out += '[';
  for (size_t i = 0; i < items.size(); ++i) {
    if (i)
      out += ", ";
    print(items[i]);
  }
  out += ']';
}

void appendAttribute(std::string &out, const Attribute &attribute, const PrintOptions &options) {
  switch (attrKind(attribute)) {
  case AttrKind::Int: appendInt(out, std::get<int64_t>(attribute)); return;
  case AttrKind::Float: appendFloat32(out, std::get<float>(attribute)); return;
  case AttrKind::String: appendQuoted(out, std::get<std::string>(attribute)); return;
  case AttrKind::Ints:
    appendList(out, std::get<std::vector<int64_t>>(attribute),
               [&](int64_t value) { appendInt(out, value); });
    return;
  case AttrKind::Floats:
    appendList(out, std::get<std::vector<float>>(attribute),
               [&](float value) { appendFloat32(out, value); });
    return;
  case AttrKind::Strings:
    appendList(out, std::get<std::vector<std::string>>(attribute),
               [&](const std::string &value) { appendQuoted(out, value); });
    return;
  case AttrKind::Tensor: {
    const TensorPtr &tensor = std::get<TensorPtr>(attribute);
    if (tensor)
      appendTensor(out, *tensor, options);
    else
      out += "null"; // only in a broken graph; the parser rejects it
    return;
  }
  }
}

void appendValueRef(std::string &out, const Value *value) {
  if (value)
    appendName(out, '%', value->name());
  else
    out += '_';
}

void appendNode(std::string &out, const Node &node, const PrintOptions &options) {
  out += "  ";
  for (int i = 0; i < node.numOutputs(); ++i) {
    if (i)
      out += ", ";
    appendValueRef(out, node.output(i));
  }
  if (node.numOutputs())
    out += " = ";
  out += node.opName();
  out += '(';
  for (int i = 0; i < node.numInputs(); ++i) {
    if (i)
      out += ", ";
    appendValueRef(out, node.input(i));
  }
  out += ')';
  if (!node.attributes().empty()) {
    out += " {";
    bool first = true;
    for (const auto &[name, attribute] : node.attributes()) {
      if (!first)
        out += ", ";
      first = false;
      appendIdentifier(out, name);
      out += " = ";
      appendAttribute(out, attribute, options);
    }
    out += '}';
  }
  for (int i = 0; i < node.numOutputs(); ++i) {
    out += i ? ", " : " : ";
    if (const Value *output = node.output(i))
      appendType(out, output->type());
    else
      out += '?'; // only in a broken graph
  }
  if (!node.name().empty()) {
    out += " @";
    appendQuoted(out, node.name());
  }
  out += '\n';
}

} // namespace

std::string printGraph(const Graph &graph, const PrintOptions &options) {
  std::string out = "graph ";
  appendName(out, '@', graph.name());
  out += '(';
  for (size_t i = 0; i < graph.inputs().size(); ++i) {
    const Value *input = graph.inputs()[i];
    if (i)
      out += ", ";
    appendName(out, '%', input->name());
    out += ": ";
    appendType(out, input->type());
  }
  out += ") -> (";
  for (size_t i = 0; i < graph.outputs().size(); ++i) {
    if (i)
      out += ", ";
    appendValueRef(out, graph.outputs()[i]);
  }
  out += ") {\n";
  for (const Value *constant : graph.constants()) {
    out += "  ";
    appendName(out, '%', constant->name());
    out += " = constant ";
    appendTensor(out, constant->constant(), options);
    out += '\n';
  }
  for (const auto &node : graph.nodes())
    appendNode(out, *node, options);
  out += "  return\n}\n";
  return out;
}

} // namespace sinter
