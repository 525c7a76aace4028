// The Graph IR.
//
// A Graph holds Values in SSA form and Nodes in topological order. Every Value is defined once:
// by a graph input, by a constant (which owns immutable tensor data), or as one output of a node.
// Every Value has a TensorType (dtype, and a shape of static, symbolic or unknown dims; see
// shape.h). Node inputs may be null where the op allows an optional input to be absent.
//
// Semantics follow ai.onnx at opset 28 (ops.def): evaluation is in node order, with no side
// effects; values never alias as far as the IR is concerned (views are a codegen matter).
// Integer overflow wraps; float math is IEEE-754 without fast-math reassociation in the reference.
//
// Ownership: the Graph owns its Nodes and Values. Edits go through Graph and Node methods, which
// keep each Value's use list in step.
#pragma once

#include "sinter/ir/attribute.h"
#include "sinter/ir/op.h"
#include "sinter/ir/shape.h"
#include "sinter/ir/tensor.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace sinter {

class Graph;
class Node;

/// One use of a value: input `index` of `user`.
struct Use {
  Node *user;
  int index;
  bool operator==(const Use &) const = default;
};

class Value {
public:
  const std::string &name() const { return name_; }
  const TensorType &type() const { return type_; }
  DType dtype() const { return type_.dtype; }
  const Shape &shape() const { return type_.shape; }
  int rank() const { return type_.rank(); }
  void setType(TensorType type) { type_ = std::move(type); }

  /// The node that defines this value, or null for graph inputs and constants.
  Node *producer() const { return producer_; }
  /// Which output of producer() this is.
  int producerOutput() const { return producerOutput_; }
  bool isGraphInput() const { return isInput_; }
  bool isConstant() const { return constant_ != nullptr; }
  /// The constant's data; only valid when isConstant().
  const Tensor &constant() const { return *constant_; }
  const TensorPtr &constantPtr() const { return constant_; }

  /// Node inputs that read this value (graph outputs are not listed; see Graph::isOutput).
  const std::vector<Use> &uses() const { return uses_; }
  bool hasUses() const { return !uses_.empty(); }

private:
  friend class Graph;
  friend class Node;
  std::string name_;
  TensorType type_;
  Node *producer_ = nullptr;
  int producerOutput_ = 0;
  bool isInput_ = false;
  TensorPtr constant_;
  std::vector<Use> uses_;
};

class Node {
public:
  OpKind kind() const { return kind_; }
  const OpInfo &info() const { return opInfo(kind_); }
  std::string_view opName() const { return opInfo(kind_).name; }
  /// The node's name from the source model (may be empty); used in messages and kernel names.
  const std::string &name() const { return name_; }
  void setName(std::string name) { name_ = std::move(name); }

  int numInputs() const { return static_cast<int>(inputs_.size()); }
  /// Input i, or null when it is absent or i is past the end.
  Value *input(int i) const { return i < numInputs() ? inputs_[i] : nullptr; }
  const std::vector<Value *> &inputs() const { return inputs_; }
  void setInput(int i, Value *value);
  void addInput(Value *value);
  /// Drops trailing absent inputs.
  void trimInputs();

  int numOutputs() const { return static_cast<int>(outputs_.size()); }
  Value *output(int i = 0) const { return outputs_[i]; }
  const std::vector<Value *> &outputs() const { return outputs_; }

  /// Attributes in name order (deterministic printing).
  const std::map<std::string, Attribute> &attributes() const { return attributes_; }
  bool hasAttr(const std::string &name) const { return attributes_.count(name) != 0; }
  void setAttr(const std::string &name, Attribute value) { attributes_[name] = std::move(value); }
  void removeAttr(const std::string &name) { attributes_.erase(name); }

  /// Typed attribute reads with a default for absent attributes. A present attribute of another
  /// kind is an internal error (the verifier checks kinds against ops.def).
  int64_t attrInt(const std::string &name, int64_t fallback) const;
  float attrFloat(const std::string &name, float fallback) const;
  std::string attrString(const std::string &name, const std::string &fallback) const;
  std::vector<int64_t> attrInts(const std::string &name, std::vector<int64_t> fallback = {}) const;
  std::vector<float> attrFloats(const std::string &name, std::vector<float> fallback = {}) const;
  std::vector<std::string> attrStrings(const std::string &name) const;
  /// The tensor attribute, or null when absent.
  const Tensor *attrTensor(const std::string &name) const;

  /// "Conv 'conv1'" or "Conv #12" for messages.
  std::string describe() const;

private:
  friend class Graph;
  Node(OpKind kind) : kind_(kind) {}
  OpKind kind_;
  std::string name_;
  std::vector<Value *> inputs_;
  std::vector<Value *> outputs_;
  std::map<std::string, Attribute> attributes_;
};

class Graph {
public:
  Graph() = default;
  Graph(const Graph &) = delete;
  Graph &operator=(const Graph &) = delete;
  ~Graph();

  /// A deep copy (constant tensors are shared; they are immutable).
  std::unique_ptr<Graph> clone() const;

  const std::string &name() const { return name_; }
  void setName(std::string name) { name_ = std::move(name); }

  /// Adds a graph input. The name is made unique if it is taken.
  Value *addInput(const std::string &name, TensorType type);
  /// Adds a constant; its type is the tensor's.
  Value *addConstant(const std::string &name, TensorPtr tensor);
  Value *addConstant(const std::string &name, Tensor tensor);
  /// Appends a node at the end of the graph (or before `before`, when given). Its outputs get
  /// unique names derived from `outputNames` (generated when empty) and f32[] types until set.
  Node *addNode(OpKind kind, const std::vector<Value *> &inputs, int numOutputs,
                const std::string &name = "", const std::vector<std::string> &outputNames = {},
                Node *before = nullptr);
  void addOutput(Value *value) { outputs_.push_back(value); }
  void setOutput(int i, Value *value) { outputs_[i] = value; }

  const std::vector<Value *> &inputs() const { return inputs_; }
  const std::vector<Value *> &outputs() const { return outputs_; }
  const std::vector<Value *> &constants() const { return constants_; }
  /// Nodes in topological order.
  const std::vector<std::unique_ptr<Node>> &nodes() const { return nodes_; }
  int numNodes() const { return static_cast<int>(nodes_.size()); }
  bool isOutput(const Value *value) const;

  /// Redirects every use of `from` (node inputs and graph outputs) to `to`.
  void replaceAllUsesWith(Value *from, Value *to);
  /// Removes a node whose outputs have no uses and are not graph outputs.
  void eraseNode(Node *node);
  /// Removes a constant that has no uses and is not a graph output.
  void eraseConstant(Value *constant);
  /// Renames a value; the name is made unique if taken. Returns the name given.
  std::string renameValue(Value *value, const std::string &name);
  /// The value with this name, or null.
  Value *findValue(const std::string &name) const;
  /// A name not yet taken, derived from `base`.
  std::string uniqueName(const std::string &base) const;
  /// Reorders nodes topologically (stable where possible). Throws UserError on a cycle.
  void topologicalSort();
  /// Position of a node in nodes(); linear time.
  int indexOf(const Node *node) const;

private:
  Value *newValue(const std::string &name);
  std::string name_ = "main";
  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<std::unique_ptr<Value>> values_;
  std::map<std::string, Value *> valuesByName_;
  std::vector<Value *> inputs_, outputs_, constants_;
  mutable int nextTemporary_ = 0;
};

} // namespace sinter
