// AttributeProto -> Attribute. Reads are checked against the kind the reader asks for (or the
// kind the op's schema in ops.def gives); an int where a float is wanted is widened, as ONNX
// exporters sometimes write `alpha: 1`. Any other mismatch is a UserError naming the node.
#include "onnx_internal.h"

#include "sinter/support/error.h"

namespace sinter::onnx::detail {

using AttrType = ::onnx::AttributeProto::AttributeType;

namespace {

// The attribute's type; IR-version-1 models leave `type` unset, so look at the fields then.
AttrType typeOf(const ::onnx::AttributeProto &a) {
  if (a.has_type() && a.type() != ::onnx::AttributeProto::UNDEFINED)
    return a.type();
  if (a.floats_size())
    return ::onnx::AttributeProto::FLOATS;
  if (a.ints_size())
    return ::onnx::AttributeProto::INTS;
  if (a.strings_size())
    return ::onnx::AttributeProto::STRINGS;
  if (a.tensors_size())
    return ::onnx::AttributeProto::TENSORS;
  if (a.graphs_size())
    return ::onnx::AttributeProto::GRAPHS;
  if (a.has_f())
    return ::onnx::AttributeProto::FLOAT;
  if (a.has_i())
    return ::onnx::AttributeProto::INT;
  if (a.has_s())
    return ::onnx::AttributeProto::STRING;
  if (a.has_t())
    return ::onnx::AttributeProto::TENSOR;
  if (a.has_g())
    return ::onnx::AttributeProto::GRAPH;
  return ::onnx::AttributeProto::UNDEFINED;
}

const char *typeName(AttrType type) {
  switch (type) {
  case ::onnx::AttributeProto::FLOAT:
    return "a float";
  case ::onnx::AttributeProto::INT:
    return "an int";
  case ::onnx::AttributeProto::STRING:
    return "a string";
  case ::onnx::AttributeProto::TENSOR:
    return "a tensor";
  case ::onnx::AttributeProto::GRAPH:
    return "a graph";
  case ::onnx::AttributeProto::SPARSE_TENSOR:
    return "a sparse tensor";
  case ::onnx::AttributeProto::TYPE_PROTO:
    return "a type";
  case ::onnx::AttributeProto::FLOATS:
    return "a list of floats";
  case ::onnx::AttributeProto::INTS:
    return "a list of ints";
  case ::onnx::AttributeProto::STRINGS:
    return "a list of strings";
  case ::onnx::AttributeProto::TENSORS:
    return "a list of tensors";
  case ::onnx::AttributeProto::GRAPHS:
    return "a list of graphs";
  case ::onnx::AttributeProto::SPARSE_TENSORS:
    return "a list of sparse tensors";
  case ::onnx::AttributeProto::TYPE_PROTOS:
    return "a list of types";
  case ::onnx::AttributeProto::UNDEFINED:
    break;
  }
  return "of no known type";
}

const char *kindName(AttrKind kind) {
  switch (kind) {
  case AttrKind::Int:
    return "an int";
  case AttrKind::Float:
    return "a float";
  case AttrKind::String:
    return "a string";
  case AttrKind::Ints:
    return "a list of ints";
  case AttrKind::Floats:
    return "a list of floats";
  case AttrKind::Strings:
    return "a list of strings";
  case AttrKind::Tensor:
    return "a tensor";
  }
  return "?";
}

} // namespace

AttributeReader::AttributeReader(const ::onnx::NodeProto &node, const TensorSource &source,
                                 const std::string &where)
    : source_(source), where_(where) {
  for (const auto &attribute : node.attribute()) {
    if (!attributes_.emplace(attribute.name(), &attribute).second)
      userError(where_, ": attribute '", attribute.name(), "' is given twice");
    if (!attribute.ref_attr_name().empty())
      userError(where_, ": attribute '", attribute.name(),
                "' refers to a function attribute, which only model-local functions may do");
  }
}

const ::onnx::AttributeProto *AttributeReader::find(const std::string &name) const {
  auto it = attributes_.find(name);
  return it == attributes_.end() ? nullptr : it->second;
}

bool AttributeReader::has(const std::string &name) const { return find(name) != nullptr; }

void AttributeReader::drop(const std::string &name) { used_.insert(name); }

Attribute AttributeReader::convert(const ::onnx::AttributeProto &a, AttrKind kind) const {
  AttrType type = typeOf(a);
  using P = ::onnx::AttributeProto;
  switch (kind) {
  case AttrKind::Int:
    if (type == P::INT)
      return int64_t(a.i());
    break;
  case AttrKind::Float:
    if (type == P::FLOAT)
      return a.f();
    if (type == P::INT)
      return float(a.i());
    break;
  case AttrKind::String:
    if (type == P::STRING)
      return a.s();
    break;
  case AttrKind::Ints:
    if (type == P::INTS)
      return std::vector<int64_t>(a.ints().begin(), a.ints().end());
    break;
  case AttrKind::Floats:
    if (type == P::FLOATS)
      return std::vector<float>(a.floats().begin(), a.floats().end());
    if (type == P::INTS) {
      std::vector<float> values;
      for (int64_t value : a.ints())
        values.push_back(float(value));
      return values;
    }
    break;
  case AttrKind::Strings:
    if (type == P::STRINGS)
      return std::vector<std::string>(a.strings().begin(), a.strings().end());
    break;
  case AttrKind::Tensor:
    if (type == P::TENSOR)
      return std::make_shared<const Tensor>(
          tensorFromProto(a.t(), source_, where_ + ": attribute '" + a.name() + "'"));
    break;
  }
  userError(where_, ": attribute '", a.name(), "' is ", typeName(type), ", expected ",
            kindName(kind));
}

std::optional<int64_t> AttributeReader::takeInt(const std::string &name) {
  const auto *a = find(name);
  if (!a)
    return std::nullopt;
  used_.insert(name);
  return std::get<int64_t>(convert(*a, AttrKind::Int));
}

std::optional<float> AttributeReader::takeFloat(const std::string &name) {
  const auto *a = find(name);
  if (!a)
    return std::nullopt;
  used_.insert(name);
  return std::get<float>(convert(*a, AttrKind::Float));
}

std::optional<std::string> AttributeReader::takeString(const std::string &name) {
  const auto *a = find(name);
  if (!a)
    return std::nullopt;
  used_.insert(name);
  return std::get<std::string>(convert(*a, AttrKind::String));
}

std::optional<std::vector<int64_t>> AttributeReader::takeInts(const std::string &name) {
  const auto *a = find(name);
  if (!a)
    return std::nullopt;
  used_.insert(name);
  return std::get<std::vector<int64_t>>(convert(*a, AttrKind::Ints));
}

std::optional<std::vector<float>> AttributeReader::takeFloats(const std::string &name) {
  const auto *a = find(name);
  if (!a)
    return std::nullopt;
  used_.insert(name);
  return std::get<std::vector<float>>(convert(*a, AttrKind::Floats));
}

std::optional<Tensor> AttributeReader::takeTensor(const std::string &name) {
  const auto *a = find(name);
  if (!a)
    return std::nullopt;
  used_.insert(name);
  return *std::get<TensorPtr>(convert(*a, AttrKind::Tensor));
}

std::map<std::string, Attribute> AttributeReader::convertRemaining(OpKind kind) {
  const OpInfo &info = opInfo(kind);
  std::map<std::string, Attribute> result;
  for (const auto &[name, attribute] : attributes_) {
    if (used_.count(name))
      continue;
    // Before opset 6, ops listed the inputs they overwrote; it never changes an inference result.
    if (name == "consumed_inputs")
      continue;
    const AttrSchema *schema = info.findAttribute(name);
    if (!schema) {
      std::string known;
      for (const AttrSchema &entry : info.attributes)
        known += (known.empty() ? "" : ", ") + entry.name;
      userError(where_, ": attribute '", name, "' is not supported (", info.name, " takes ",
                known.empty() ? std::string("no attributes") : known, ")");
    }
    result.emplace(name, convert(*attribute, schema->kind));
  }
  return result;
}

} // namespace sinter::onnx::detail
