#include "sinter/ir/data_dependence.h"

#include "sinter/ir/graph.h"

#include <set>

namespace sinter {

namespace {

void collect(const Value &value, std::set<const Value *> &visited,
             std::vector<const Value *> &inputs) {
  if (!visited.insert(&value).second || value.isConstant())
    return;
  if (value.isGraphInput()) {
    inputs.push_back(&value);
    return;
  }
  const Node *producer = value.producer();
  if (!producer || producer->kind() == OpKind::Shape || producer->kind() == OpKind::Size)
    return;
  for (const Value *input : producer->inputs())
    if (input)
      collect(*input, visited, inputs);
}

} // namespace

std::vector<const Value *> graphInputsFeeding(const std::vector<const Value *> &values) {
  std::set<const Value *> visited;
  std::vector<const Value *> inputs;
  for (const Value *value : values)
    if (value)
      collect(*value, visited, inputs);
  return inputs;
}

std::vector<const Value *> graphInputsFeeding(const Value &value) {
  return graphInputsFeeding(std::vector<const Value *>{&value});
}

std::string bindInputHint(const std::vector<const Value *> &inputs) {
  if (inputs.empty())
    return "";
  std::string names, flags;
  for (size_t i = 0; i < inputs.size(); ++i) {
    names += (i ? ", '" : "'") + inputs[i]->name() + "'";
    flags += (i ? " --bind-input " : "--bind-input ") + inputs[i]->name() + "=FILE";
  }
  bool one = inputs.size() == 1;
  return std::string("; it depends on graph input") + (one ? " " : "s ") + names +
         ": give " + (one ? "its value" : "their values") + " at compile time with " + flags;
}

} // namespace sinter
