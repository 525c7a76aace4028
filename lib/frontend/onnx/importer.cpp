// The ONNX graph walk: checks the model (opset, supported ops, SSA), makes graph inputs from
// value_info with the user's shape options applied (bound inputs become constants), initializers and Constant nodes into
// constants, and every other node through the opset adapters in topological order, so each node
// is inferred (and folded) with its inputs' types known. Every UserError is prefixed with the
// model's file name, and those about one node name it, its op and the opset.
#include "onnx_internal.h"

#include "sinter/support/error.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <queue>

namespace sinter::onnx {

using namespace detail;

namespace {

std::string joinNames(const std::vector<std::string> &names) {
  std::string text;
  for (const std::string &name : names)
    text += (text.empty() ? "'" : ", '") + name + "'";
  return text.empty() ? "none" : text;
}

class Importer {
public:
  /// The importer releases each initializer's bytes from `model` once it holds them.
  Importer(::onnx::ModelProto &model, const std::string &baseDirectory,
           const ImportOptions &options, const std::string &displayName)
      : model_(model), graphProto_(*model.mutable_graph()),
        options_(options), source_{displayName, baseDirectory} {}

  std::unique_ptr<Graph> run();

private:
  void checkOpset();
  void checkSupported();
  void collectNames();
  void importInputs();
  void importInitializers();
  std::vector<int> nodeOrder();
  std::string describeNode(int index) const;
  void importNodeAt(int index, Builder &builder);
  void importConstant(const ::onnx::NodeProto &node, const std::string &where);
  Value *lookup(const std::string &name) const;
  void define(const std::string &name, Value *value);

  const ::onnx::ModelProto &model_;
  ::onnx::GraphProto &graphProto_;
  const ImportOptions &options_;
  TensorSource source_;
  int64_t opset_ = 0;
  std::unique_ptr<Graph> graph_ = std::make_unique<Graph>();
  std::map<std::string, Value *> values_; ///< ONNX value name -> IR value
  std::set<std::string> initializerNames_, reserved_, consumed_;
};

void Importer::checkOpset() {
  std::optional<int64_t> opset = aiOnnxOpset(model_);
  if (!opset) {
    // Ops from other domains are the better message when that is all the graph holds.
    checkSupported();
    bool usesAiOnnx = false;
    for (const auto &node : graphProto_.node())
      usesAiOnnx |= canonicalDomain(node.domain()) == "ai.onnx";
    if (!usesAiOnnx) {
      opset_ = kMaxOpset; // no node depends on it
      return;
    }
    userError("the model imports no ai.onnx opset (opset_import has no entry for the default "
              "domain); sinter supports ai.onnx opsets ",
              kMinOpset, " to ", kMaxOpset);
  }
  if (*opset < kMinOpset || *opset > kMaxOpset)
    userError("ai.onnx opset ", *opset, " is not supported; sinter supports opsets ", kMinOpset,
              " to ", kMaxOpset, " (onnx.version_converter can convert the model)");
  opset_ = *opset;
}

// Lists every unsupported op type at once, in order of first appearance, with counts.
void Importer::checkSupported() {
  std::vector<std::string> order;
  std::map<std::string, int64_t> counts;
  std::map<std::string, std::string> opsets;
  for (const auto &node : graphProto_.node()) {
    std::string domain = canonicalDomain(node.domain());
    if (domain == "ai.onnx" && isSupportedOp(node.op_type()))
      continue;
    std::string key = domain + ":" + node.op_type();
    if (!counts.count(key)) {
      order.push_back(key);
      std::optional<int64_t> version = domainOpset(model_, node.domain());
      opsets[key] = version ? std::to_string(*version) : std::string("?");
    }
    ++counts[key];
  }
  if (order.empty())
    return;
  // Ops sinter leaves out on purpose say why.
  static const std::map<std::string, std::string> kNotPlanned = {
      {"ai.onnx:ImageDecoder", "not planned: decoding JPEG, PNG and the other formats needs image "
                               "codecs, which sinter's dependency-free artifacts do not carry"},
  };
  std::string list;
  for (const std::string &key : order) {
    list += (list.empty() ? "" : ", ") + key + " x" + std::to_string(counts[key]) + " (opset " +
            opsets[key];
    auto reason = kNotPlanned.find(key);
    list += reason != kNotPlanned.end() ? "; " + reason->second + ")" : ")";
  }
  userError(order.size(),
            order.size() == 1 ? " unsupported op type: " : " unsupported op types: ", list);
}

void Importer::collectNames() {
  for (const auto &input : graphProto_.input())
    reserved_.insert(input.name());
  for (const auto &initializer : graphProto_.initializer())
    reserved_.insert(initializer.name());
  for (const auto &node : graphProto_.node()) {
    for (const std::string &name : node.input())
      if (!name.empty()) {
        reserved_.insert(name);
        consumed_.insert(name);
      }
    for (const std::string &name : node.output())
      reserved_.insert(name);
  }
  for (const auto &output : graphProto_.output()) {
    reserved_.insert(output.name());
    consumed_.insert(output.name());
  }
}

Value *Importer::lookup(const std::string &name) const {
  auto it = values_.find(name);
  return it == values_.end() ? nullptr : it->second;
}

void Importer::define(const std::string &name, Value *value) {
  SINTER_ASSERT(values_.emplace(name, value).second, "value '", name, "' defined twice");
}

void Importer::importInputs() {
  struct Pending {
    std::string name;
    DeclaredType type;
  };
  std::vector<Pending> inputs;
  std::set<std::string> symbols;
  for (const auto &input : graphProto_.input()) {
    if (input.name().empty())
      userError("a graph input has no name");
    if (initializerNames_.count(input.name()))
      continue; // a default value (IR version < 4): the initializer makes it a constant
    for (const Pending &seen : inputs)
      if (seen.name == input.name())
        userError("graph input '", input.name(), "' is listed twice");
    inputs.push_back({input.name(), declaredType(input, "graph input '" + input.name() + "'")});
    if (inputs.back().type.shape)
      for (const Dim &dim : *inputs.back().type.shape)
        if (dim.isSymbol())
          symbols.insert(dim.symbolName());
  }

  std::vector<std::string> inputNames;
  for (const Pending &input : inputs)
    inputNames.push_back(input.name);
  for (const auto &[name, dims] : options_.inputShapes)
    if (std::find(inputNames.begin(), inputNames.end(), name) == inputNames.end())
      userError("--shape names '", name, "', which is not a graph input; the inputs are ",
                joinNames(inputNames));
  for (const auto &[name, bound] : options_.boundInputs) {
    if (std::find(inputNames.begin(), inputNames.end(), name) != inputNames.end()) {
      if (options_.inputShapes.count(name))
        userError(bound.origin, ": --shape also gives input '", name,
                  "'; a bound input's shape is its value's, so leave out the --shape");
      continue;
    }
    if (initializerNames_.count(name))
      userError(bound.origin, ": '", name, "' has a value in the model already (an initializer), ",
                "so it is not an input to bind; the inputs are ", joinNames(inputNames));
    userError(bound.origin, ": the model has no graph input named '", name, "'; the inputs are ",
              joinNames(inputNames));
  }
  std::map<std::string, int64_t> bindings;
  for (const auto &[symbol, value] : options_.dimBindings) {
    if (!symbols.count(symbol))
      userError("--dim names '", symbol, "', which is not a symbolic dim of any graph input; the ",
                "symbols are ", joinNames({symbols.begin(), symbols.end()}));
    if (value < 0)
      userError("--dim ", symbol, "=", value, ": a dim cannot be negative");
    bindings[symbol] = value;
  }

  // A bound value must fit the declared type; its dims bind the symbols of the declared shape.
  for (Pending &input : inputs) {
    auto bound = options_.boundInputs.find(input.name);
    if (bound == options_.boundInputs.end())
      continue;
    const Tensor &value = bound->second.value;
    std::string declared = std::string(dtypeName(input.type.dtype)) +
                           (input.type.shape ? shapeStr(*input.type.shape) : "[*]");
    std::string given = value.type().str();
    std::string where = bound->second.origin + ": graph input '" + input.name + "' is " + declared;
    if (value.dtype() != input.type.dtype)
      userError(where, " but the value is ", given, "; convert the file to ",
                dtypeName(input.type.dtype));
    if (input.type.shape) {
      const Shape &shape = *input.type.shape;
      if (int(shape.size()) != value.rank())
        userError(where, " (rank ", shape.size(), ") but the value is ", given, " (rank ",
                  value.rank(), ")");
      for (size_t i = 0; i < shape.size(); ++i) {
        int64_t size = value.dims()[i];
        if (shape[i].isStatic() && shape[i].value() != size)
          userError(where, " but the value is ", given, " (dim ", i, " must be ", shape[i].value(),
                    ")");
        if (shape[i].isSymbol()) {
          auto [it, inserted] = bindings.emplace(shape[i].symbolName(), size);
          if (!inserted && it->second != size)
            userError(where, " but the value is ", given, ", which makes '", shape[i].symbolName(),
                      "' ", size, " where it is ", it->second, " elsewhere");
        }
      }
    }
    input.type.shape = shapeOf(value.dims());
  }

  // --shape fixes whole shapes; the symbols they cover are bound everywhere they appear.
  for (Pending &input : inputs) {
    auto fixed = options_.inputShapes.find(input.name);
    if (fixed == options_.inputShapes.end())
      continue;
    const std::vector<int64_t> &dims = fixed->second;
    std::string given = shapeStr(shapeOf(dims));
    for (int64_t dim : dims)
      if (dim < 0)
        userError("--shape ", input.name, ": dim ", dim, " is negative");
    if (input.type.shape) {
      const Shape &declared = *input.type.shape;
      if (declared.size() != dims.size())
        userError("--shape ", input.name, "=", given, " has rank ", dims.size(), ", but the model ",
                  "declares ", shapeStr(declared), " (rank ", declared.size(), ")");
      for (size_t i = 0; i < dims.size(); ++i) {
        const Dim &dim = declared[i];
        if (dim.isStatic() && dim.value() != dims[i])
          userError("--shape ", input.name, "=", given, " does not match the model's ",
                    shapeStr(declared), " at dim ", i);
        if (dim.isSymbol()) {
          auto [it, inserted] = bindings.emplace(dim.symbolName(), dims[i]);
          if (!inserted && it->second != dims[i])
            userError("symbol '", dim.symbolName(), "' is ", it->second, " elsewhere, but --shape ",
                      input.name, "=", given, " makes it ", dims[i]);
        }
      }
    }
    input.type.shape = shapeOf(dims);
  }

  for (Pending &input : inputs) {
    if (!input.type.shape)
      userError("graph input '", input.name, "' has no shape (its rank is unknown); give it with ",
                "--shape ", input.name, "=...");
    for (Dim &dim : *input.type.shape)
      if (dim.isSymbol() && bindings.count(dim.symbolName()))
        dim = Dim(bindings[dim.symbolName()]);
    if (isStatic(*input.type.shape) && !elementCount(*input.type.shape))
      userError("graph input '", input.name, "' of shape ", shapeStr(*input.type.shape),
                " has too many elements");
    auto bound = options_.boundInputs.find(input.name);
    if (bound != options_.boundInputs.end())
      define(input.name, graph_->addConstant(input.name, bound->second.value));
    else
      define(input.name, graph_->addInput(input.name, {input.type.dtype, *input.type.shape}));
  }
}

void Importer::importInitializers() {
  for (auto &initializer : *graphProto_.mutable_initializer()) {
    if (initializer.name().empty())
      userError("an initializer has no name");
    if (lookup(initializer.name()))
      userError("initializer '", initializer.name(), "' is given twice");
    std::string what = "initializer '" + initializer.name() + "'";
    Tensor tensor = tensorFromProto(initializer, source_, what);
    define(initializer.name(), graph_->addConstant(initializer.name(), std::move(tensor)));
    // Weights are held once, in the graph, not again in the protobuf.
    std::string().swap(*initializer.mutable_raw_data());
    initializer.clear_float_data();
    initializer.clear_int32_data();
    initializer.clear_int64_data();
    initializer.clear_double_data();
    initializer.clear_uint64_data();
  }
  if (graphProto_.sparse_initializer_size())
    userError("sparse initializers are not supported (the first is '",
              graphProto_.sparse_initializer(0).values().name(), "')");
}

std::string Importer::describeNode(int index) const {
  const auto &node = graphProto_.node(index);
  std::string who = node.name().empty() ? "#" + std::to_string(index) : "'" + node.name() + "'";
  return "node " + who + " (" + node.op_type() + ", opset " + std::to_string(opset_) + ")";
}

// Orders nodes so each comes after the nodes it reads from (ONNX requires it, not every exporter
// obeys), stable where possible. Checks that each value is defined once.
std::vector<int> Importer::nodeOrder() {
  int count = graphProto_.node_size();
  std::map<std::string, int> producer;
  for (int i = 0; i < count; ++i) {
    for (const std::string &name : graphProto_.node(i).output()) {
      if (name.empty())
        continue;
      if (values_.count(name))
        userError(describeNode(i), ": output '", name, "' has the name of a ",
                  values_.at(name)->isConstant() ? "initializer" : "graph input",
                  "; each value must be defined once");
      auto [it, inserted] = producer.emplace(name, i);
      if (!inserted)
        userError(describeNode(i), ": output '", name, "' is also an output of ",
                  describeNode(it->second), "; each value must be defined once");
    }
  }
  std::vector<int> pending(count, 0);
  std::vector<std::vector<int>> consumers(count);
  for (int i = 0; i < count; ++i) {
    for (const std::string &name : graphProto_.node(i).input()) {
      auto it = producer.find(name);
      if (it == producer.end())
        continue;
      consumers[it->second].push_back(i);
      ++pending[i];
    }
  }
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (int i = 0; i < count; ++i)
    if (pending[i] == 0)
      ready.push(i);
  std::vector<int> order;
  while (!ready.empty()) {
    int index = ready.top();
    ready.pop();
    order.push_back(index);
    for (int consumer : consumers[index])
      if (--pending[consumer] == 0)
        ready.push(consumer);
  }
  if (int(order.size()) != count) {
    for (int i = 0; i < count; ++i)
      if (pending[i] > 0)
        userError("the graph has a cycle through ", describeNode(i));
  }
  return order;
}

// Shape inference names the IR node ("Conv 'conv1': ..."); `where` already names it.
std::string withoutNodePrefix(const std::string &message, const ::onnx::NodeProto &proto) {
  size_t space = message.find(' ');
  if (space == std::string::npos || space == 0)
    return message;
  for (size_t i = 0; i < space; ++i)
    if (!std::isalnum(static_cast<unsigned char>(message[i])))
      return message;
  std::vector<std::string> tails;
  if (!proto.name().empty())
    tails.push_back(" '" + proto.name() + "': ");
  else if (proto.output_size())
    tails.push_back(" producing '" + proto.output(0) + "': ");
  for (const std::string &tail : tails)
    if (message.compare(space, tail.size(), tail) == 0)
      return message.substr(space + tail.size());
  return message;
}

void Importer::importConstant(const ::onnx::NodeProto &node, const std::string &where) {
  if (node.output_size() != 1 || node.output(0).empty())
    userError(where, ": a Constant has exactly one output");
  if (node.input_size() != 0)
    userError(where, ": a Constant has no inputs");
  if (node.attribute_size() != 1)
    userError(where, ": a Constant needs exactly one value attribute, it has ",
              node.attribute_size());
  AttributeReader attributes(node, source_, where);
  const std::string &kind = node.attribute(0).name();
  std::optional<Tensor> value;
  if (kind == "value") {
    value = attributes.takeTensor("value");
  } else if (kind == "value_float") {
    value = Tensor(DType::Float32, {});
    value->data<float>()[0] = *attributes.takeFloat("value_float");
  } else if (kind == "value_floats") {
    std::vector<float> floats = *attributes.takeFloats("value_floats");
    value = Tensor(DType::Float32, {int64_t(floats.size())});
    std::copy(floats.begin(), floats.end(), value->data<float>());
  } else if (kind == "value_int") {
    value = Tensor(DType::Int64, {});
    value->data<int64_t>()[0] = *attributes.takeInt("value_int");
  } else if (kind == "value_ints") {
    value = Tensor::fromInts(*attributes.takeInts("value_ints"));
  } else if (kind == "value_string" || kind == "value_strings") {
    userError(where, ": string constants are not supported");
  } else if (kind == "sparse_value") {
    userError(where, ": sparse constants are not supported");
  } else {
    userError(where, ": attribute '", kind, "' is not a Constant value attribute");
  }
  define(node.output(0), graph_->addConstant(node.output(0), std::move(*value)));
}

void Importer::importNodeAt(int index, Builder &builder) {
  const ::onnx::NodeProto &proto = graphProto_.node(index);
  std::string where = describeNode(index);
  try {
    if (proto.op_type() == "Constant") {
      importConstant(proto, where);
      return;
    }
    OnnxNode node{proto, opset_, where, {}, {}, AttributeReader(proto, source_, where)};
    for (int i = 0; i < proto.input_size(); ++i) {
      const std::string &name = proto.input(i);
      Value *value = name.empty() ? nullptr : lookup(name);
      if (!name.empty() && !value)
        userError(where, ": input ", i, " '", name, "' is not defined: no graph input, ",
                  "initializer or node output has that name (a missing initializer?)");
      node.inputs.push_back(value);
    }
    node.outputNames.assign(proto.output().begin(), proto.output().end());
    std::vector<Value *> outputs = importNode(builder, node);
    for (int i = 0; i < proto.output_size(); ++i) {
      if (proto.output(i).empty() || i >= int(outputs.size()))
        continue;
      define(proto.output(i), outputs[i]);
    }
  } catch (const UserError &error) {
    std::string message = error.what();
    if (message.rfind(where, 0) == 0)
      throw;
    throw UserError(where + ": " + withoutNodePrefix(message, proto));
  }
}

std::unique_ptr<Graph> Importer::run() {
  checkOpset();
  checkSupported();
  for (const auto &initializer : graphProto_.initializer())
    initializerNames_.insert(initializer.name());
  collectNames();
  importInputs();
  importInitializers();

  Builder builder(*graph_, options_, reserved_, consumed_);
  for (int index : nodeOrder())
    importNodeAt(index, builder);

  for (const auto &output : graphProto_.output()) {
    Value *value = lookup(output.name());
    if (!value)
      userError("graph output '", output.name(), "' is not defined: no graph input, initializer ",
                "or node output has that name");
    graph_->addOutput(value);
  }
  if (graphProto_.output_size() == 0)
    userError("the graph has no outputs");
  graph_->topologicalSort();

  // Folding leaves constants nobody reads (and models carry unused initializers); drop them.
  std::vector<Value *> unused;
  for (Value *constant : graph_->constants())
    if (!constant->hasUses() && !graph_->isOutput(constant))
      unused.push_back(constant);
  for (Value *constant : unused)
    graph_->eraseConstant(constant);
  return std::move(graph_);
}

std::string prefixed(const std::string &displayName, const std::string &message) {
  if (message.rfind(displayName + ":", 0) == 0)
    return message;
  return displayName + ": " + message;
}

// Imports a parsed model, releasing its initializers' bytes as it goes; errors name `displayName`.
std::unique_ptr<Graph> importParsed(::onnx::ModelProto &model, const std::string &baseDirectory,
                                    const ImportOptions &options, const std::string &displayName) {
  if (!model.has_graph())
    userError("not an ONNX model: it has no graph");
  return Importer(model, baseDirectory, options, displayName).run();
}

} // namespace

std::unique_ptr<Graph> importModelBytes(const std::string &bytes, const std::string &baseDirectory,
                                        const ImportOptions &options,
                                        const std::string &displayName) {
  try {
    ::onnx::ModelProto model;
    parseMessage(bytes, model, displayName, "ONNX model");
    return importParsed(model, baseDirectory, options, displayName);
  } catch (const UserError &error) {
    throw UserError(prefixed(displayName, error.what()));
  }
}

std::unique_ptr<Graph> importModel(const std::string &path, const ImportOptions &options) {
  std::string folder = std::filesystem::path(path).parent_path().string();
  try {
    ::onnx::ModelProto model;
    parseMessageFile(path, model, "ONNX model");
    return importParsed(model, folder.empty() ? "." : folder, options, path);
  } catch (const UserError &error) {
    throw UserError(prefixed(path, error.what()));
  }
}

} // namespace sinter::onnx
