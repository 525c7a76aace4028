// Node creation for the importer: every node is shape-inferred the moment it is made, and a node
// whose inputs are all constants and whose outputs are small is evaluated by the reference
// evaluator and replaced by constants that keep its output names. Folding as we go is what lets
// Shape -> Gather -> Concat -> Reshape chains resolve to static shapes during import.
#include "onnx_internal.h"

#include "sinter/ir/infer.h"
#include "sinter/ir/op_attributes.h"
#include "sinter/reference/evaluator.h"
#include "sinter/support/error.h"

#include <algorithm>

namespace sinter::onnx::detail {

std::string Builder::freshName(const std::string &base) {
  std::string stem = base.empty() ? std::string("t") : base;
  auto taken = [&](const std::string &name) {
    return reserved_.count(name) || graph_.findValue(name) != nullptr;
  };
  // Each name handed out is reserved, so two fresh names asked for before either is defined
  // (the unused outputs of one node) differ.
  std::string name = stem;
  for (int i = 1; taken(name); ++i)
    name = stem + "." + std::to_string(i);
  reserved_.insert(name);
  return name;
}

Value *Builder::constant(const std::string &base, Tensor tensor) {
  return graph_.addConstant(freshName(base), std::move(tensor));
}

Value *Builder::constantInts(const std::string &base, const std::vector<int64_t> &values) {
  return constant(base, Tensor::fromInts(values));
}

Value *Builder::constantScalar(const std::string &base, DType dtype, double value) {
  return constant(base, Tensor::scalar(dtype, value));
}

std::vector<Value *> Builder::emit(OpKind kind, const std::vector<Value *> &inputs,
                                   const std::map<std::string, Attribute> &attributes,
                                   const std::vector<std::string> &outputNames,
                                   const std::string &nodeName) {
  std::vector<std::string> names;
  for (const std::string &name : outputNames)
    names.push_back(name.empty() ? freshName(nodeName.empty() ? "" : nodeName + ".out") : name);
  Node *node = graph_.addNode(kind, inputs, int(names.size()), nodeName, names);
  for (size_t i = 0; i < names.size(); ++i)
    SINTER_ASSERT(node->output(int(i))->name() == names[i], "output name '", names[i],
                  "' was taken before the node that defines it");
  for (const auto &[name, value] : attributes)
    node->setAttr(name, value);
  node->trimInputs();
  inferNode(*node);
  std::optional<Tensor> shape = staticShapeValue(*node);
  if (shape && shape->elementCount() <= options_.foldLimitElements)
    return replaceByConstants(node, {std::move(*shape)});
  if (foldable(*node))
    return fold(node);
  return node->outputs();
}

Value *Builder::emitOne(OpKind kind, const std::vector<Value *> &inputs,
                        const std::map<std::string, Attribute> &attributes, const std::string &base,
                        const std::string &nodeName) {
  return emit(kind, inputs, attributes, {freshName(base)}, nodeName)[0];
}

bool Builder::foldable(const Node &node) const {
  if (node.numInputs() == 0 || !reference::canEvaluate(node.kind()))
    return false;
  for (Value *input : node.inputs())
    if (input && !input->isConstant())
      return false;
  for (Value *output : node.outputs()) {
    if (!isStatic(output->shape())) {
      // A shape that depends on the data (NonZero, Unique): the data is here, so fold when the
      // inputs are small; these outputs are no larger than their inputs allow.
      for (Value *input : node.inputs())
        if (input && input->constant().elementCount() > options_.foldLimitElements)
          return false;
      continue;
    }
    std::optional<int64_t> count = elementCount(output->shape());
    if (!count || *count > options_.foldLimitElements)
      return false;
  }
  return true;
}

// Shape and Size read only their input's shape, which may be static while its data is not.
std::optional<Tensor> Builder::staticShapeValue(const Node &node) const {
  if (node.kind() != OpKind::Shape && node.kind() != OpKind::Size)
    return std::nullopt;
  const Shape &shape = node.input(0)->shape();
  int64_t rank = int64_t(shape.size());
  int64_t start = 0, end = rank;
  if (node.kind() == OpKind::Shape) {
    DimRange range = shapeRange(node, rank);
    start = range.start;
    end = range.end;
  }
  std::vector<int64_t> dims;
  for (int64_t i = start; i < end; ++i) {
    if (!shape[i].isStatic())
      return std::nullopt;
    dims.push_back(shape[i].value());
  }
  if (node.kind() == OpKind::Shape)
    return Tensor::fromInts(dims);
  std::optional<int64_t> count = elementCount(shape);
  if (!count)
    return std::nullopt;
  Tensor size(DType::Int64, {});
  size.data<int64_t>()[0] = *count;
  return size;
}

std::vector<Value *> Builder::fold(Node *node) {
  std::vector<const Tensor *> inputs;
  for (Value *input : node->inputs())
    inputs.push_back(input ? &input->constant() : nullptr);
  std::vector<Tensor> results;
  try {
    results = reference::evaluateNode(*node, inputs);
  } catch (const UserError &) {
    // What the evaluator cannot do (a training-mode Dropout, data it rejects) stays a node;
    // folding is an optimisation, and running the node reports the same problem.
    return node->outputs();
  }
  SINTER_ASSERT(int(results.size()) == node->numOutputs(), "the evaluator gave ", results.size(),
                " outputs for ", node->describe(), ", which has ", node->numOutputs());
  return replaceByConstants(node, std::move(results));
}

std::vector<Value *> Builder::replaceByConstants(Node *node, std::vector<Tensor> results) {
  std::vector<Value *> constants;
  for (int i = 0; i < node->numOutputs(); ++i) {
    Value *output = node->output(i);
    // The folded type is the inferred one, with data-dependent dims now known.
    bool refines = results[i].dtype() == output->dtype() && results[i].rank() == output->rank();
    for (int d = 0; refines && d < output->rank(); ++d)
      refines = !output->shape()[d].isStatic() || output->shape()[d].value() == results[i].dims()[d];
    SINTER_ASSERT(refines, "folding ", node->describe(),
                  ": folded output ", i, " is ", results[i].type().str(),
                  " but shape inference says ", output->type().str());
    std::string name = output->name();
    graph_.renameValue(output, freshName(name + ".unfolded"));
    Value *folded = graph_.addConstant(name, std::move(results[i]));
    if (output->hasUses() || graph_.isOutput(output))
      graph_.replaceAllUsesWith(output, folded);
    constants.push_back(folded);
  }
  graph_.eraseNode(node);
  return constants;
}

} // namespace sinter::onnx::detail
