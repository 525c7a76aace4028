// The IR verifier (verifier.h). It walks the graph in order and stops at the first broken
// invariant, throwing an InternalError "after pass 'P': [invariant] <node>: <detail>".
//
// It must not crash on the graphs it is meant to catch, so a pointer is dereferenced only after
// it was found among the graph's own values or nodes: a node input that points outside the graph
// is reported by position, not by name. Messages follow graph order, never hash order.
#include "sinter/ir/verifier.h"

#include "sinter/ir/graph.h"
#include "sinter/ir/infer.h"
#include "sinter/support/error.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

namespace sinter {
namespace {

class Verifier {
public:
  Verifier(const Graph &graph, std::string_view afterPass, const VerifyOptions &options)
      : graph_(graph), afterPass_(afterPass), options_(options) {}

  void run() {
    indexNodes();
    collectDefinitions();
    std::unordered_set<const Value *> defined;
    for (const Value *value : graph_.inputs())
      defined.insert(value);
    for (const Value *value : graph_.constants())
      defined.insert(value);
    for (const auto &node : graph_.nodes()) {
      checkArity(*node);
      checkInputs(*node, defined);
      checkAttributes(*node);
      for (const Value *output : node->outputs())
        defined.insert(output);
    }
    checkUseLists();
    checkGraphOutputs();
    if (options_.checkTypes)
      for (const auto &node : graph_.nodes())
        checkTypes(*node);
  }

private:
  template <typename... Args>
  [[noreturn]] void fail(std::string_view invariant, const Node *node, Args &&...args) {
    std::string message;
    if (!afterPass_.empty())
      message += "after pass '" + std::string(afterPass_) + "': ";
    message += "[" + std::string(invariant) + "] ";
    if (node)
      message += node->describe() + ": ";
    message += detail::concat(std::forward<Args>(args)...);
    throw InternalError(message);
  }

  static std::string quoted(const Value *value) { return "'%" + value->name() + "'"; }

  /// Where a value is defined; formatted only when a message needs it.
  struct Definition {
    enum Kind { GraphInput, Constant, NodeOutput } kind;
    int index;                  ///< input position, or output position of `node`
    const Node *node = nullptr; ///< the producer, for NodeOutput
    std::string str() const {
      switch (kind) {
      case GraphInput: return "graph input " + std::to_string(index);
      case Constant: return "a constant";
      case NodeOutput: return "output " + std::to_string(index) + " of " + node->describe();
      }
      return "?";
    }
  };

  void indexNodes() {
    for (size_t i = 0; i < graph_.nodes().size(); ++i) {
      const Node *node = graph_.nodes()[i].get();
      if (!node)
        fail("structure", nullptr, "node at position ", i, " is null");
      if (!nodeIndex_.emplace(node, int(i)).second)
        fail("structure", node, "the node is listed twice in the graph");
      for (int j = 0; j < node->numOutputs(); ++j)
        if (!node->output(j))
          fail("SSA", nullptr, "output ", j, " of the ", node->opName(), " at position ", i,
               " is null");
    }
  }

  /// Records where each value is defined, checking that it is defined exactly once, that its
  /// flags and producer agree with that definition, and that names are unique and indexed.
  void define(const Value *value, Definition where) {
    const Node *node = where.node;
    auto [it, isNew] = definitions_.emplace(value, where);
    if (!isNew)
      fail("SSA", node, quoted(value), " is defined twice: as ", it->second.str(), " and as ",
           where.str());
    auto [named, nameIsNew] = byName_.emplace(value->name(), value);
    if (!nameIsNew)
      fail("SSA", node, "two values are named ", quoted(value), ": ",
           definitions_.at(named->second).str(), " and ", where.str());
    if (graph_.findValue(value->name()) != value)
      fail("names", node, "looking up ", quoted(value), " (", where.str(),
           ") does not find it; the graph's name index is out of step");
    order_.push_back(value);
  }

  void collectDefinitions() {
    for (size_t i = 0; i < graph_.inputs().size(); ++i) {
      const Value *input = graph_.inputs()[i];
      if (!input)
        fail("SSA", nullptr, "graph input ", i, " is null");
      define(input, {Definition::GraphInput, int(i)});
      if (!input->isGraphInput() || input->isConstant() || input->producer())
        fail("SSA", nullptr, "graph input ", quoted(input),
             " is also marked as a constant or a node output");
    }
    for (const Value *constant : graph_.constants()) {
      if (!constant)
        fail("SSA", nullptr, "a constant is null");
      define(constant, {Definition::Constant, 0});
      if (!constant->isConstant() || constant->isGraphInput() || constant->producer())
        fail("SSA", nullptr, "constant ", quoted(constant),
             " has no data or is also marked as a graph input or a node output");
      if (constant->type() != constant->constant().type())
        fail("constant types", nullptr, "constant ", quoted(constant), " is typed ",
             constant->type().str(), " but its data is ", constant->constant().type().str());
    }
    for (const auto &node : graph_.nodes()) {
      for (int i = 0; i < node->numOutputs(); ++i) {
        const Value *output = node->output(i);
        define(output, {Definition::NodeOutput, i, node.get()});
        if (output->producer() != node.get() || output->producerOutput() != i)
          fail("SSA", node.get(), "output ", i, " ", quoted(output),
               " does not name this node and position as its producer");
        if (output->isGraphInput() || output->isConstant())
          fail("SSA", node.get(), "output ", i, " ", quoted(output),
               " is also marked as a graph input or a constant");
      }
    }
  }

  void checkArity(const Node &node) {
    const OpInfo &info = node.info();
    if (node.numInputs() < info.minInputs ||
        (info.maxInputs >= 0 && node.numInputs() > info.maxInputs))
      fail("arity", &node, "has ", node.numInputs(), " inputs; ops.def allows ", info.minInputs,
           info.maxInputs < 0 ? " or more" : " to " + std::to_string(info.maxInputs));
    if (node.numOutputs() < info.minOutputs ||
        (info.maxOutputs >= 0 && node.numOutputs() > info.maxOutputs))
      fail("arity", &node, "has ", node.numOutputs(), " outputs; ops.def allows ", info.minOutputs,
           info.maxOutputs < 0 ? " or more" : " to " + std::to_string(info.maxOutputs));
  }

  void checkInputs(const Node &node, const std::unordered_set<const Value *> &defined) {
    for (int i = 0; i < node.numInputs(); ++i) {
      const Value *input = node.input(i);
      if (!input) {
        if (i < node.info().minInputs)
          fail("arity", &node, "input ", i, " is absent, but ", node.opName(), " requires its first ",
               node.info().minInputs, " inputs");
        continue;
      }
      if (!definitions_.count(input))
        fail("SSA", &node, "input ", i, " reads a value that is not defined in this graph");
      if (!defined.count(input))
        fail("topological order", &node, "input ", i, " reads ", quoted(input), ", defined by ",
             input->producer() == &node ? "this node itself" : "a later node",
             " (", definitions_.at(input).str(), ")");
      long listed = std::count(input->uses().begin(), input->uses().end(), Use{const_cast<Node *>(&node), i});
      if (listed != 1)
        fail("use lists", &node, "input ", i, " reads ", quoted(input), ", whose use list has this use ",
             listed, " times instead of once");
    }
  }

  void checkAttributes(const Node &node) {
    const OpInfo &info = node.info();
    for (const auto &[name, attribute] : node.attributes()) {
      const AttrSchema *schema = info.findAttribute(name);
      if (!schema)
        fail("attributes", &node, node.opName(), " has no attribute '", name, "' in ops.def");
      if (attrKind(attribute) != schema->kind)
        fail("attributes", &node, "attribute '", name, "' is of kind ", attrKindName(attrKind(attribute)),
             "; ops.def says ", attrKindName(schema->kind));
      if (schema->kind == AttrKind::Tensor && !std::get<TensorPtr>(attribute))
        fail("attributes", &node, "tensor attribute '", name, "' has no data");
    }
    for (const AttrSchema &schema : info.attributes)
      if (schema.required && !node.hasAttr(schema.name))
        fail("attributes", &node, "required attribute '", schema.name, "' is missing");
  }

  /// Every listed use must be a real input slot of a node in the graph; with checkInputs (each
  /// slot listed exactly once) the use lists and the inputs are in step.
  void checkUseLists() {
    for (const Value *value : order_) {
      for (const Use &use : value->uses()) {
        auto it = nodeIndex_.find(use.user);
        if (it == nodeIndex_.end())
          fail("use lists", nullptr, quoted(value), " lists a use by a node that is not in the graph");
        if (use.index < 0 || use.index >= use.user->numInputs() || use.user->input(use.index) != value)
          fail("use lists", use.user, quoted(value), " lists input ", use.index,
               " of this node among its uses, but that input reads something else");
      }
    }
  }

  void checkGraphOutputs() {
    for (size_t i = 0; i < graph_.outputs().size(); ++i) {
      const Value *output = graph_.outputs()[i];
      if (!output)
        fail("graph outputs", nullptr, "graph output ", i, " is null");
      if (!definitions_.count(output))
        fail("graph outputs", nullptr, "graph output ", i, " is not a value defined in this graph");
    }
  }

  void checkTypes(const Node &node) {
    std::vector<TensorType> inferred;
    try {
      inferred = inferOutputTypes(node);
    } catch (const UserError &error) {
      fail("types", &node, "shape inference rejects the node: ", error.what());
    }
    if (int(inferred.size()) != node.numOutputs())
      fail("types", &node, "shape inference gives ", inferred.size(), " output types for ",
           node.numOutputs(), " outputs");
    for (int i = 0; i < node.numOutputs(); ++i)
      if (inferred[i] != node.output(i)->type())
        fail("types", &node, "output ", i, " ", quoted(node.output(i)), " is recorded as ",
             node.output(i)->type().str(), " but shape inference gives ", inferred[i].str());
  }

  const Graph &graph_;
  std::string_view afterPass_;
  const VerifyOptions &options_;
  std::unordered_map<const Node *, int> nodeIndex_;
  std::unordered_map<const Value *, Definition> definitions_;
  std::unordered_map<std::string, const Value *> byName_;
  std::vector<const Value *> order_; ///< values in definition order, for deterministic messages
};

} // namespace

void verifyGraph(const Graph &graph, std::string_view afterPass, const VerifyOptions &options) {
  Verifier(graph, afterPass, options).run();
}

} // namespace sinter
