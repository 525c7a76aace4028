#include "duplicate_shared_views.h"

#include "sinter/ir/graph.h"

#include <string>
#include <vector>

namespace sinter {
namespace {

/// A data-movement node of one output (Reshape, Transpose, Slice, ...): an index remapping that
/// fuses into its reader as a prologue.
bool isIndexRemapping(const Node &node) {
  return node.info().fusion == FusionClass::DataMovement && node.numOutputs() == 1 && node.output(0);
}

/// A node whose kernel reads its inputs through their views, as prologues: the contractions and
/// (fused) Attention.
bool readsThroughViews(const Node &node) {
  return node.kind() == OpKind::MatMul || node.kind() == OpKind::Gemm || node.kind() == OpKind::Conv ||
         node.kind() == OpKind::Attention;
}

class Duplicator {
public:
  explicit Duplicator(Graph &graph) : graph_(graph) {}

  bool run() {
    std::vector<Node *> order;
    for (const auto &node : graph_.nodes())
      order.push_back(node.get());
    bool changed = false;
    // From the last node back: a shared view's readers are copied before the view itself is
    // looked at, so a chain of views (Reshape -> Transpose -> Squeeze) splits from its end up.
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      Node *node = *it;
      if (!isIndexRemapping(*node) || node->output(0)->uses().size() < 2 || !readByContractionsOnly(node->output(0)))
        continue;
      std::vector<Use> uses = node->output(0)->uses();
      for (size_t u = 1; u < uses.size(); ++u) {
        Node *copy = graph_.addNode(node->kind(), node->inputs(), 1, node->name(),
                                    {node->output(0)->name() + "." + std::to_string(u)}, uses[u].user);
        for (const auto &[name, value] : node->attributes())
          copy->setAttr(name, value);
        copy->output(0)->setType(node->output(0)->type());
        uses[u].user->setInput(uses[u].index, copy->output(0));
      }
      changed = true;
    }
    return changed;
  }

private:
  /// Whether every reader of `value` is a contraction or an Attention, or a view or Cast whose own readers are
  /// (and the value is no graph output).
  bool readByContractionsOnly(const Value *value) {
    if (graph_.isOutput(value) || !value->hasUses())
      return false;
    for (const Use &use : value->uses()) {
      const Node &user = *use.user;
      if (readsThroughViews(user))
        continue;
      bool passes = (isIndexRemapping(user) || (user.kind() == OpKind::Cast && user.numOutputs() == 1)) &&
                    readByContractionsOnly(user.output(0));
      if (!passes)
        return false;
    }
    return true;
  }

  Graph &graph_;
};

} // namespace

bool DuplicateSharedViews::run(Graph &graph) { return Duplicator(graph).run(); }

} // namespace sinter
