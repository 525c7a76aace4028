#include "sinter/codegen/schedule/fusion.h"

#include "sinter/support/error.h"

#include <algorithm>
#include <map>
#include <set>

namespace sinter::codegen {
namespace {

/// The only user of a value, when it has exactly one use and is not a graph output.
const Node *soleUser(const Graph &graph, const Value *value) {
  if (!value || graph.isOutput(value) || value->uses().size() != 1)
    return nullptr;
  return value->uses()[0].user;
}

/// Cheap enough to recompute for every read of a kernel node (a contraction reads each operand
/// element once per tile of the other operand).
bool cheapPrologue(const Node &node) {
  return opInfo(node.kind()).fusion == FusionClass::DataMovement || node.kind() == OpKind::Cast;
}

/// Reads one element of its input per element, at an index that is a remapping (a reshape, a
/// permute, a sub-range, a broadcast): no selection between sources or against a pad value.
bool viewLike(const Node &node) {
  switch (node.kind()) {
  case OpKind::Reshape: case OpKind::Flatten: case OpKind::Squeeze: case OpKind::Unsqueeze:
  case OpKind::Transpose: case OpKind::Slice: case OpKind::Expand: case OpKind::Cast:
    return true;
  default:
    return false;
  }
}

bool isContractionNode(const Node &node) {
  return node.kind() == OpKind::MatMul || node.kind() == OpKind::Gemm || node.kind() == OpKind::Conv;
}

class Partition {
public:
  Partition(const Graph &graph, bool deepPrologues)
      : graph_(graph), deepPrologues_(deepPrologues) {
    for (const auto &node : graph.nodes()) {
      position_[node.get()] = int(order_.size());
      group_[node.get()] = int(order_.size());
      order_.push_back(node.get());
      // Computed from constants alone (a weight's layout permute): packed at compile time.
      bool fromConstants = node->numInputs() > 0;
      for (Value *input : node->inputs())
        fromConstants = fromConstants && (!input || input->isConstant() ||
                                          (input->producer() && constantOnly_.count(input->producer())));
      if (fromConstants)
        constantOnly_.insert(node.get());
    }
  }

  void fuseEpilogues() {
    for (const Node *node : order_) {
      if (isInjective(*node) || !canLower(*node))
        continue;
      int wanted = 0;
      for (Value *output : node->outputs())
        wanted += output && (output->hasUses() || graph_.isOutput(output));
      if (wanted != 1 || !node->output(0))
        continue;
      const Value *value = node->output(0);
      while (true) {
        const Node *next = soleUser(graph_, value);
        if (!next) {
          // A value gating itself (SiLU's x * sigmoid(x), GELU's x * Phi(x)): its side chain and
          // the node where the chain meets it again join, and the chain goes on from there.
          std::vector<const Node *> side = gatingChain(value);
          if (side.empty())
            break;
          for (const Node *member : side)
            group_[member] = group_[node];
          value = side.back()->output(0);
          continue;
        }
        // A reshape keeps every element where it is: the epilogue goes on through one when an
        // elementwise link follows it (GPT-2's Gemm over [tokens, features] and the bias add or
        // GELU over [batch, sequence, features] after it).
        if (reshapeLink(*next, *value)) {
          const Node *after = soleUser(graph_, next->output(0));
          if (!after || !epilogueLink(*after, *next->output(0)))
            break;
          group_[next] = group_[node];
          value = next->output(0);
          continue;
        }
        if (!epilogueLink(*next, *value))
          break;
        // A widening Cast read by a kernel node alone (directly or through views) is that
        // kernel's prologue: stored here, it would write wider values (an f16 GELU widened for a
        // MatMul that keeps f32 sums would be stored as f32, and the MatMul would read f32 that
        // no longer shows it is f16).
        if (next->kind() == OpKind::Cast && dtypeSize(next->output(0)->dtype()) > dtypeSize(value->dtype())) {
          const Node *reader = soleUser(graph_, next->output(0));
          while (reader && opInfo(reader->kind()).fusion == FusionClass::DataMovement && reader->numOutputs() == 1)
            reader = soleUser(graph_, reader->output(0)); // through views: a head split before Q.K^T
          if (reader && !isInjective(*reader))
            break;
        }
        group_[next] = group_[node];
        value = next->output(0);
      }
      fuseSideCasts(*node, value);
    }
  }

  /// An elementwise node that may extend an epilogue whose last value is `value`: one output,
  /// of value's static shape.
  bool epilogueLink(const Node &next, const Value &value) const {
    return opInfo(next.kind()).fusion == FusionClass::Elementwise && isInjective(next) && next.numOutputs() == 1 &&
           next.output(0) && isStatic(next.output(0)->shape()) &&
           staticDims(next.output(0)->shape()) == staticDims(value.shape());
  }

  /// A node that gives `value`'s elements in the same order under another static shape.
  bool reshapeLink(const Node &next, const Value &value) const {
    switch (next.kind()) {
    case OpKind::Reshape: case OpKind::Flatten: case OpKind::Squeeze: case OpKind::Unsqueeze: break;
    default: return false;
    }
    return next.numOutputs() == 1 && next.output(0) && next.input(0) == &value && isStatic(next.output(0)->shape()) &&
           isStatic(value.shape()) && elementCount(next.output(0)->shape()) == elementCount(value.shape());
  }

  /// When `value` (not a graph output) has two uses, one a chain of epilogue links each the
  /// sole user of the one before, the other the node that chain ends in (x * f(x)), or one node
  /// reading it twice (x * x): that chain and the meeting node, in order. Empty otherwise.
  std::vector<const Node *> gatingChain(const Value *value) const {
    if (graph_.isOutput(value) || value->uses().size() != 2)
      return {};
    const Node *first = value->uses()[0].user, *second = value->uses()[1].user;
    if (first == second)
      return epilogueLink(*first, *value) ? std::vector<const Node *>{first} : std::vector<const Node *>{};
    for (auto [start, meet] : {std::pair{first, second}, std::pair{second, first}}) {
      if (!epilogueLink(*meet, *value))
        continue;
      std::vector<const Node *> chain;
      for (const Node *link = start; link && link != meet && epilogueLink(*link, *value);
           link = soleUser(graph_, link->output(0))) {
        chain.push_back(link);
        if (soleUser(graph_, link->output(0)) == meet) {
          chain.push_back(meet);
          return chain;
        }
      }
    }
    return {};
  }

  /// Narrowing casts of a kernel's last value beside its other uses join the kernel, which
  /// stores both (a LayerNorm's f32 output for a residual add, and its f16 rounding for the next
  /// MatMul). A widening Cast stays out: stored here it would write a second, wider copy, where
  /// its reader widens the narrow value in its prologue (with --norm-inputs stored, a pre-norm
  /// transformer's f16 residual sum is read by the next residual add and, widened, by the
  /// LayerNorm: as a side cast ViT-B/16's residual GEMMs wrote an f32 copy of it and its
  /// LayerNorms read that). The group runs at its last node's position, so a Cast joins only
  /// when every other use of the value comes after it.
  void fuseSideCasts(const Node &kernel, const Value *value) {
    if (value->uses().size() < 2)
      return;
    for (const Use &use : value->uses()) {
      const Node *cast = use.user;
      if (cast->kind() != OpKind::Cast || cast->numInputs() != 1 || cast->numOutputs() != 1 ||
          group_[cast] != position_[cast] || !isStatic(cast->output(0)->shape()) ||
          staticDims(cast->output(0)->shape()) != staticDims(value->shape()) ||
          dtypeSize(cast->output(0)->dtype()) > dtypeSize(value->dtype()))
        continue;
      bool laterUses = std::all_of(value->uses().begin(), value->uses().end(), [&](const Use &other) {
        return other.user == cast || position_[other.user] > position_[cast];
      });
      if (laterUses)
        group_[cast] = group_[&kernel];
    }
  }

  void fusePrologues() {
    for (auto it = order_.rbegin(); it != order_.rend(); ++it) {
      const Node *node = *it;
      if (!isInjective(*node) || node->numOutputs() != 1 || group_[node] != position_[node])
        continue; // not injective, or already part of a group (an epilogue)
      const Node *user = soleUser(graph_, node->output(0));
      if (!user)
        continue;
      // Into a kernel node, directly or through other prologue nodes, only what is cheap to
      // recompute per read.
      bool feedsKernel = !isInjective(*user) || feedsKernel_.count(user);
      if (feedsKernel && !cheapPrologue(*node))
        continue;
      const Node *kernel = !isInjective(*user) ? user : feedsKernel ? kernelOf_.at(user) : nullptr;
      // Without deep prologues, a contraction reads its run-time operands directly (a Conv) or
      // through views (a MatMul, Gemm), and a Concat is stored: recomputed in its readers, a
      // chain of channel shuffles nests one more selection per block into every read.
      if (!deepPrologues_ && !constantOnly_.count(node) &&
          (node->kind() == OpKind::Concat ||
           (kernel && isContractionNode(*kernel) && (kernel->kind() == OpKind::Conv || !viewLike(*node)))))
        continue;
      group_[node] = group_[user];
      if (feedsKernel) {
        feedsKernel_.insert(node);
        kernelOf_[node] = kernel;
      }
    }
  }

  std::vector<KernelGroup> groups() const {
    std::map<int, std::vector<const Node *>> members;
    for (const Node *node : order_)
      members[group_.at(node)].push_back(node);
    // Each group runs at its last node's position.
    std::vector<std::vector<const Node *>> ordered;
    for (auto &[id, nodes] : members)
      ordered.push_back(nodes);
    std::sort(ordered.begin(), ordered.end(), [&](const auto &a, const auto &b) {
      return position_.at(a.back()) < position_.at(b.back());
    });
    std::vector<KernelGroup> groups;
    std::set<const Value *> available;
    for (Value *input : graph_.inputs())
      available.insert(input);
    for (const auto &nodes : ordered) {
      KernelGroup group;
      group.nodes = nodes;
      std::set<const Value *> produced;
      for (const Node *node : nodes)
        for (Value *output : node->outputs())
          if (output)
            produced.insert(output);
      for (const Node *node : nodes)
        for (Value *input : node->inputs())
          if (input && !produced.count(input) &&
              std::find(group.inputs.begin(), group.inputs.end(), input) == group.inputs.end()) {
            SINTER_ASSERT(input->isConstant() || available.count(input), "fusion scheduled a group reading '",
                          input->name(), "' before it is written");
            group.inputs.push_back(input);
          }
      for (const Node *node : nodes)
        for (Value *output : node->outputs()) {
          if (!output)
            continue;
          bool usedOutside = graph_.isOutput(output) || !output->hasUses();
          for (const Use &use : output->uses())
            usedOutside |= std::find(nodes.begin(), nodes.end(), use.user) == nodes.end();
          if (usedOutside) {
            group.outputs.push_back(output);
            available.insert(output);
          }
        }
      group.name = kernelName(group.nodes, int(groups.size()));
      groups.push_back(std::move(group));
    }
    return groups;
  }

private:
  const Graph &graph_;
  std::vector<const Node *> order_;
  std::map<const Node *, int> position_, group_;
  bool deepPrologues_;
  std::set<const Node *> feedsKernel_;            ///< prologue nodes whose values a kernel node reads
  std::map<const Node *, const Node *> kernelOf_; ///< for each of those, that kernel node
  std::set<const Node *> constantOnly_;           ///< nodes computed from constants alone
};

} // namespace

std::vector<KernelGroup> formKernelGroups(const Graph &graph, bool fuse, bool deepPrologues) {
  Partition partition(graph, deepPrologues);
  if (fuse) {
    partition.fuseEpilogues();
    partition.fusePrologues();
  }
  return partition.groups();
}

} // namespace sinter::codegen
