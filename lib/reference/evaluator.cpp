// The graph driver of the reference evaluator: binds inputs, runs each node's rule in order,
// checks what the rule produced against the node's recorded types, and frees each value after its
// last use. The op rules live in one file per family (registry.h).
#include "sinter/reference/evaluator.h"

#include "registry.h"

#include "sinter/support/error.h"

#include <map>
#include <memory>
#include <string>
#include <unordered_map>

namespace sinter::reference {

bool canEvaluate(OpKind kind) { return rules().find(kind) != nullptr; }

namespace {

void checkArity(const Node &node, const std::vector<const Tensor *> &inputs) {
  const OpInfo &info = node.info();
  int count = static_cast<int>(inputs.size());
  SINTER_ASSERT(count == node.numInputs(), node.describe(), " has ", node.numInputs(),
                " inputs but ", count, " tensors were given");
  if (count < info.minInputs || (info.maxInputs >= 0 && count > info.maxInputs))
    userError(node.describe(), ": has ", count, " inputs; ", node.opName(), " takes ",
              info.minInputs, info.maxInputs < 0 ? " or more" : " to " + std::to_string(info.maxInputs));
  for (int i = 0; i < info.minInputs; ++i)
    if (!inputs[i])
      userError(node.describe(), ": required input ", i, " is absent");
  int outputs = node.numOutputs();
  if (outputs < info.minOutputs || (info.maxOutputs >= 0 && outputs > info.maxOutputs))
    userError(node.describe(), ": has ", outputs, " outputs; ", node.opName(), " gives ",
              info.minOutputs, info.maxOutputs < 0 ? " or more" : " to " + std::to_string(info.maxOutputs));
}

/// The rule's result must agree with the graph's record: same dtype, same rank, and the same size
/// wherever the recorded dim is static. A mismatch means the graph's types are wrong (or the rule
/// is), so it is reported rather than passed on.
void checkOutput(const Node &node, int index, const Tensor &tensor) {
  const TensorType &recorded = node.output(index)->type();
  bool matches = tensor.dtype() == recorded.dtype && tensor.rank() == recorded.rank();
  for (int d = 0; matches && d < recorded.rank(); ++d)
    if (recorded.shape[d].isStatic() && recorded.shape[d].value() != tensor.dims()[d])
      matches = false;
  if (!matches)
    userError(node.describe(), ": output ", index, " ('", node.output(index)->name(),
              "') evaluates to ", tensor.type().str(), " but the graph records ", recorded.str());
}

} // namespace

std::vector<Tensor> evaluateNode(const Node &node, const std::vector<const Tensor *> &inputs) {
  checkArity(node, inputs);
  EvalFn rule = rules().find(node.kind());
  if (!rule)
    userError(node.describe(), ": the reference evaluator does not implement ", node.opName());
  std::vector<Tensor> outputs = rule(node, inputs);
  SINTER_ASSERT(static_cast<int>(outputs.size()) == node.numOutputs(), "the reference rule for ",
                node.opName(), " returned ", outputs.size(), " tensors for ", node.numOutputs(),
                " outputs");
  for (int i = 0; i < node.numOutputs(); ++i)
    checkOutput(node, i, outputs[i]);
  return outputs;
}

namespace {

/// Checks one graph input against its declared type, binding symbolic dims on first sight.
void bindInput(const Value &value, const Tensor &tensor, std::map<std::string, int64_t> &symbols) {
  const TensorType &declared = value.type();
  if (tensor.dtype() != declared.dtype)
    userError("graph input '", value.name(), "' is ", declared.str(), " but a ",
              dtypeName(tensor.dtype()), " tensor was given");
  if (tensor.rank() != declared.rank())
    userError("graph input '", value.name(), "' is ", declared.str(), " but a tensor of rank ",
              tensor.rank(), " ", shapeStr(shapeOf(tensor.dims())), " was given");
  for (int d = 0; d < declared.rank(); ++d) {
    const Dim &dim = declared.shape[d];
    int64_t given = tensor.dims()[d];
    if (dim.isStatic() && dim.value() != given)
      userError("graph input '", value.name(), "' is ", declared.str(), " but dim ", d, " of the ",
                "given tensor is ", given);
    if (dim.isSymbol()) {
      auto [it, inserted] = symbols.emplace(dim.symbolName(), given);
      if (!inserted && it->second != given)
        userError("graph input '", value.name(), "': dim ", d, " ('", dim.symbolName(), "') is ",
                  given, " but '", dim.symbolName(), "' was already bound to ", it->second);
    }
  }
}

} // namespace

std::vector<Tensor> evaluate(const Graph &graph, const std::vector<Tensor> &inputs,
                             const NodeObserver &observer) {
  if (inputs.size() != graph.inputs().size())
    userError("the graph takes ", graph.inputs().size(), " inputs but ", inputs.size(),
              " were given");

  // Live values. Inputs are borrowed from the caller and constants from the graph (shared_ptr
  // with no owner); node outputs are owned here until their last use.
  std::unordered_map<const Value *, std::shared_ptr<const Tensor>> live;
  std::map<std::string, int64_t> symbols;
  for (size_t i = 0; i < inputs.size(); ++i) {
    bindInput(*graph.inputs()[i], inputs[i], symbols);
    live[graph.inputs()[i]] = std::shared_ptr<const Tensor>(std::shared_ptr<void>(), &inputs[i]);
  }
  for (const Value *constant : graph.constants())
    live[constant] = constant->constantPtr();

  // The last node that reads each value; graph outputs stay live to the end.
  std::unordered_map<const Value *, int> lastUse;
  const auto &nodes = graph.nodes();
  for (int n = 0; n < static_cast<int>(nodes.size()); ++n)
    for (const Value *input : nodes[n]->inputs())
      if (input)
        lastUse[input] = n;

  for (int n = 0; n < static_cast<int>(nodes.size()); ++n) {
    const Node &node = *nodes[n];
    std::vector<const Tensor *> arguments;
    for (int i = 0; i < node.numInputs(); ++i) {
      const Value *input = node.input(i);
      if (!input) {
        arguments.push_back(nullptr);
        continue;
      }
      auto found = live.find(input);
      if (found == live.end())
        userError(node.describe(), ": input ", i, " ('", input->name(),
                  "') is not computed before the node (the graph is not in topological order)");
      arguments.push_back(found->second.get());
    }
    std::vector<Tensor> outputs = evaluateNode(node, arguments);
    if (observer)
      observer(node, outputs);
    for (int i = 0; i < node.numOutputs(); ++i) {
      const Value *output = node.output(i);
      if (output->hasUses() || graph.isOutput(output))
        live[output] = std::make_shared<const Tensor>(std::move(outputs[i]));
    }
    for (const Value *input : node.inputs()) {
      if (input && !input->isConstant() && !graph.isOutput(input) && lastUse[input] == n)
        live.erase(input);
    }
  }

  std::vector<Tensor> results;
  for (const Value *output : graph.outputs()) {
    auto found = live.find(output);
    if (found == live.end())
      userError("graph output '", output->name(), "' is not computed by the graph");
    results.push_back(*found->second);
  }
  return results;
}

} // namespace sinter::reference
