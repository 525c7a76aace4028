#include "sinter/ir/graph.h"

#include "sinter/support/error.h"

#include <algorithm>
#include <deque>
#include <unordered_map>

namespace sinter {

namespace {
void removeUse(Value *value, Node *user, int index) {
  if (!value)
    return;
  auto &uses = const_cast<std::vector<Use> &>(value->uses());
  auto it = std::find(uses.begin(), uses.end(), Use{user, index});
  SINTER_ASSERT(it != uses.end(), "use list of '", value->name(), "' is out of step");
  uses.erase(it);
}
} // namespace

bool attributesEqual(const Attribute &a, const Attribute &b) {
  if (a.index() != b.index())
    return false;
  if (auto *ta = std::get_if<TensorPtr>(&a)) {
    const TensorPtr &tb = std::get<TensorPtr>(b);
    return ta->get() == tb.get() || (*ta && tb && (*ta)->identical(*tb));
  }
  return a == b;
}

// ---- Node ----------------------------------------------------------------------------------

void Node::setInput(int i, Value *value) {
  SINTER_ASSERT(i >= 0, "input index ", i);
  if (i >= numInputs())
    inputs_.resize(i + 1, nullptr);
  removeUse(inputs_[i], this, i);
  inputs_[i] = value;
  if (value)
    value->uses_.push_back({this, i});
}

void Node::addInput(Value *value) { setInput(numInputs(), value); }

void Node::trimInputs() {
  while (!inputs_.empty() && inputs_.back() == nullptr)
    inputs_.pop_back();
}

template <typename T> static const T *getAttr(const Node &node, const std::string &name) {
  auto it = node.attributes().find(name);
  if (it == node.attributes().end())
    return nullptr;
  const T *value = std::get_if<T>(&it->second);
  SINTER_ASSERT(value, "attribute '", name, "' of ", node.describe(), " has the wrong kind");
  return value;
}

int64_t Node::attrInt(const std::string &name, int64_t fallback) const {
  const int64_t *value = getAttr<int64_t>(*this, name);
  return value ? *value : fallback;
}
float Node::attrFloat(const std::string &name, float fallback) const {
  const float *value = getAttr<float>(*this, name);
  return value ? *value : fallback;
}
std::string Node::attrString(const std::string &name, const std::string &fallback) const {
  const std::string *value = getAttr<std::string>(*this, name);
  return value ? *value : fallback;
}
std::vector<int64_t> Node::attrInts(const std::string &name, std::vector<int64_t> fallback) const {
  const auto *value = getAttr<std::vector<int64_t>>(*this, name);
  return value ? *value : fallback;
}
std::vector<float> Node::attrFloats(const std::string &name, std::vector<float> fallback) const {
  const auto *value = getAttr<std::vector<float>>(*this, name);
  return value ? *value : fallback;
}
std::vector<std::string> Node::attrStrings(const std::string &name) const {
  const auto *value = getAttr<std::vector<std::string>>(*this, name);
  return value ? *value : std::vector<std::string>{};
}
const Tensor *Node::attrTensor(const std::string &name) const {
  const TensorPtr *value = getAttr<TensorPtr>(*this, name);
  return value ? value->get() : nullptr;
}

std::string Node::describe() const {
  std::string text(opName());
  if (!name_.empty())
    return text + " '" + name_ + "'";
  if (!outputs_.empty())
    return text + " producing '" + outputs_[0]->name() + "'";
  return text;
}

// ---- Graph ---------------------------------------------------------------------------------

Graph::~Graph() = default;

std::string Graph::uniqueName(const std::string &base) const {
  if (!base.empty() && !valuesByName_.count(base))
    return base;
  std::string stem = base.empty() ? "" : base + ".";
  while (true) {
    std::string candidate = stem + std::to_string(nextTemporary_++);
    if (!valuesByName_.count(candidate))
      return candidate;
  }
}

Value *Graph::newValue(const std::string &name) {
  auto value = std::unique_ptr<Value>(new Value());
  value->name_ = uniqueName(name);
  Value *raw = value.get();
  valuesByName_[raw->name_] = raw;
  values_.push_back(std::move(value));
  return raw;
}

Value *Graph::addInput(const std::string &name, TensorType type) {
  Value *value = newValue(name);
  value->type_ = std::move(type);
  value->isInput_ = true;
  inputs_.push_back(value);
  return value;
}

Value *Graph::addConstant(const std::string &name, TensorPtr tensor) {
  SINTER_ASSERT(tensor, "constant '", name, "' has no data");
  Value *value = newValue(name);
  value->type_ = tensor->type();
  value->constant_ = std::move(tensor);
  constants_.push_back(value);
  return value;
}

Value *Graph::addConstant(const std::string &name, Tensor tensor) {
  return addConstant(name, std::make_shared<const Tensor>(std::move(tensor)));
}

Node *Graph::addNode(OpKind kind, const std::vector<Value *> &inputs, int numOutputs,
                     const std::string &name, const std::vector<std::string> &outputNames,
                     Node *before) {
  auto node = std::unique_ptr<Node>(new Node(kind));
  node->name_ = name;
  for (Value *input : inputs)
    node->addInput(input);
  for (int i = 0; i < numOutputs; ++i) {
    Value *output = newValue(i < int(outputNames.size()) ? outputNames[i] : "");
    output->producer_ = node.get();
    output->producerOutput_ = i;
    node->outputs_.push_back(output);
  }
  Node *raw = node.get();
  if (before)
    nodes_.insert(nodes_.begin() + indexOf(before), std::move(node));
  else
    nodes_.push_back(std::move(node));
  return raw;
}

bool Graph::isOutput(const Value *value) const {
  return std::find(outputs_.begin(), outputs_.end(), value) != outputs_.end();
}

void Graph::replaceAllUsesWith(Value *from, Value *to) {
  SINTER_ASSERT(from != to, "replacing '", from->name(), "' with itself");
  std::vector<Use> uses = from->uses();
  for (const Use &use : uses)
    use.user->setInput(use.index, to);
  for (Value *&output : outputs_)
    if (output == from)
      output = to;
}

static void eraseValue(std::vector<std::unique_ptr<Value>> &values,
                       std::map<std::string, Value *> &byName, Value *value) {
  byName.erase(value->name());
  auto it = std::find_if(values.begin(), values.end(),
                         [&](const std::unique_ptr<Value> &v) { return v.get() == value; });
  SINTER_ASSERT(it != values.end(), "value '", value->name(), "' is not in the graph");
  values.erase(it);
}

void Graph::eraseNode(Node *node) {
  for (Value *output : node->outputs_) {
    SINTER_ASSERT(!output->hasUses() && !isOutput(output), "erasing ", node->describe(),
                  " whose output '", output->name(), "' is still used");
  }
  for (int i = 0; i < node->numInputs(); ++i)
    removeUse(node->inputs_[i], node, i);
  for (Value *output : node->outputs_)
    eraseValue(values_, valuesByName_, output);
  nodes_.erase(nodes_.begin() + indexOf(node));
}

void Graph::eraseConstant(Value *constant) {
  SINTER_ASSERT(constant->isConstant() && !constant->hasUses() && !isOutput(constant),
                "erasing constant '", constant->name(), "' that is still used");
  constants_.erase(std::find(constants_.begin(), constants_.end(), constant));
  eraseValue(values_, valuesByName_, constant);
}

std::string Graph::renameValue(Value *value, const std::string &name) {
  if (value->name_ == name)
    return name;
  valuesByName_.erase(value->name_);
  value->name_ = uniqueName(name);
  valuesByName_[value->name_] = value;
  return value->name_;
}

Value *Graph::findValue(const std::string &name) const {
  auto it = valuesByName_.find(name);
  return it == valuesByName_.end() ? nullptr : it->second;
}

int Graph::indexOf(const Node *node) const {
  for (size_t i = 0; i < nodes_.size(); ++i)
    if (nodes_[i].get() == node)
      return int(i);
  SINTER_ASSERT(false, node->describe(), " is not in the graph");
}

void Graph::topologicalSort() {
  // Kahn's algorithm, taking ready nodes in their current order so the result is stable.
  std::unordered_map<const Node *, int> position, pending;
  for (size_t i = 0; i < nodes_.size(); ++i)
    position[nodes_[i].get()] = int(i);
  std::vector<std::vector<int>> consumers(nodes_.size());
  for (size_t i = 0; i < nodes_.size(); ++i) {
    int count = 0;
    for (Value *input : nodes_[i]->inputs_) {
      if (input && input->producer_) {
        consumers[position.at(input->producer_)].push_back(int(i));
        ++count;
      }
    }
    pending[nodes_[i].get()] = count;
  }
  std::vector<int> ready;
  for (size_t i = 0; i < nodes_.size(); ++i)
    if (pending[nodes_[i].get()] == 0)
      ready.push_back(int(i));
  std::vector<std::unique_ptr<Node>> sorted;
  // A min-heap on the original position keeps the order stable.
  auto cmp = [](int a, int b) { return a > b; };
  std::make_heap(ready.begin(), ready.end(), cmp);
  while (!ready.empty()) {
    std::pop_heap(ready.begin(), ready.end(), cmp);
    int index = ready.back();
    ready.pop_back();
    for (int consumer : consumers[index]) {
      if (--pending[nodes_[consumer].get()] == 0) {
        ready.push_back(consumer);
        std::push_heap(ready.begin(), ready.end(), cmp);
      }
    }
    sorted.push_back(std::move(nodes_[index]));
  }
  if (sorted.size() != nodes_.size()) {
    for (auto &node : nodes_)
      if (node && pending[node.get()] > 0)
        userError("the graph has a cycle through ", node->describe());
  }
  nodes_ = std::move(sorted);
}

std::unique_ptr<Graph> Graph::clone() const {
  auto copy = std::make_unique<Graph>();
  copy->name_ = name_;
  copy->nextTemporary_ = nextTemporary_;
  std::unordered_map<const Value *, Value *> map;
  auto mapped = [&](Value *value) -> Value * { return value ? map.at(value) : nullptr; };
  for (Value *input : inputs_)
    map[input] = copy->addInput(input->name_, input->type_);
  for (Value *constant : constants_)
    map[constant] = copy->addConstant(constant->name_, constant->constant_);
  for (const auto &node : nodes_) {
    std::vector<Value *> inputs;
    for (Value *input : node->inputs_)
      inputs.push_back(mapped(input));
    std::vector<std::string> names;
    for (Value *output : node->outputs_)
      names.push_back(output->name_);
    Node *clone = copy->addNode(node->kind_, inputs, node->numOutputs(), node->name_, names);
    clone->attributes_ = node->attributes_;
    for (int i = 0; i < node->numOutputs(); ++i) {
      clone->outputs_[i]->type_ = node->outputs_[i]->type_;
      map[node->outputs_[i]] = clone->outputs_[i];
    }
  }
  for (Value *output : outputs_)
    copy->addOutput(mapped(output));
  return copy;
}

} // namespace sinter
