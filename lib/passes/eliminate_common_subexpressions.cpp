#include "eliminate_common_subexpressions.h"

#include "rewrite.h"

#include <cstring>
#include <map>
#include <algorithm>
#include <optional>
#include <tuple>

namespace sinter {
namespace {

/// Binary ops whose result does not depend on the order of their inputs (IEEE-754 addition
/// and multiplication are commutative; Max/Min are left out for their NaN conventions).
bool isCommutative(OpKind kind) {
  switch (kind) {
  case OpKind::Add:
  case OpKind::Mul:
  case OpKind::And:
  case OpKind::Or:
  case OpKind::Xor:
  case OpKind::Equal:
  case OpKind::BitwiseAnd:
  case OpKind::BitwiseOr:
  case OpKind::BitwiseXor:
    return true;
  default:
    return false;
  }
}

bool sameInputs(const Node &a, const Node &b) {
  if (a.inputs() == b.inputs())
    return true;
  return isCommutative(a.kind()) && a.numInputs() == 2 && b.numInputs() == 2 &&
         a.input(0) == b.input(1) && a.input(1) == b.input(0);
}

bool sameComputation(const Node &a, const Node &b) {
  if (a.kind() != b.kind() || a.numOutputs() != b.numOutputs() || !sameInputs(a, b) ||
      a.attributes().size() != b.attributes().size())
    return false;
  for (const auto &[name, attribute] : a.attributes()) {
    auto it = b.attributes().find(name);
    if (it == b.attributes().end() || !attributesEqual(attribute, it->second))
      return false;
  }
  for (int i = 0; i < a.numOutputs(); ++i)
    if ((a.output(i) == nullptr) != (b.output(i) == nullptr) ||
        (a.output(i) && a.output(i)->type() != b.output(i)->type()))
      return false;
  return true;
}

/// Replaces every output of `duplicate` by the same output of `original`, if every graph
/// output among them can keep its name.
bool replaceOutputs(Graph &graph, Node &duplicate, Node &original) {
  for (int i = 0; i < duplicate.numOutputs(); ++i)
    if (graph.isOutput(duplicate.output(i)) && graph.isOutput(original.output(i)))
      return false;
  bool changed = false;
  for (int i = 0; i < duplicate.numOutputs(); ++i) {
    Value *from = duplicate.output(i);
    if (from && (from->hasUses() || graph.isOutput(from)))
      changed |= passes::replaceValue(graph, from, original.output(i));
  }
  return changed;
}

/// FNV-1a's step over 8-byte words, then the tail's bytes (a byte at a time was slow).
uint64_t fnv1a(const unsigned char *bytes, size_t size, uint64_t hash = 1469598103934665603ull) {
  const size_t whole = size / 8 * 8;
  for (size_t i = 0; i < whole; i += 8) {
    uint64_t word;
    std::memcpy(&word, bytes + i, 8);
    hash = (hash ^ word) * 1099511628211ull;
  }
  for (size_t i = whole; i < size; ++i)
    hash = (hash ^ bytes[i]) * 1099511628211ull;
  return hash;
}

/// A content key that reads at most 128 bytes: the first and last 64. Different weights nearly
/// always differ there, so the whole of a constant is hashed only when another shares its key
/// (this pass runs several times on every weight; hashing all of them each time took 3% of a
/// warm ResNet-50 compile).
uint64_t sampleHash(const Tensor &tensor) {
  const auto *bytes = reinterpret_cast<const unsigned char *>(tensor.data());
  const size_t size = tensor.byteSize(), edge = std::min<size_t>(size, 64);
  return fnv1a(bytes + size - edge, edge, fnv1a(bytes, edge));
}

uint64_t contentHash(const Tensor &tensor) {
  return fnv1a(reinterpret_cast<const unsigned char *>(tensor.data()), tensor.byteSize());
}

/// A constant kept as a merge target, its whole-content hash computed on first need.
struct Kept {
  Value *value;
  std::optional<uint64_t> hash;
  uint64_t contentHash() {
    if (!hash)
      hash = sinter::contentHash(value->constant());
    return *hash;
  }
};

bool mergeConstants(Graph &graph) {
  bool changed = false;
  // Keyed by type and sampled content; each bucket in graph order, so the first of equal
  // constants is kept. Within a bucket, whole-content hashes before byte comparisons, so a
  // bucket of many constants alike at both ends stays linear in their bytes.
  std::map<std::tuple<int, std::vector<int64_t>, uint64_t>, std::vector<Kept>> buckets;
  std::vector<Value *> constants = graph.constants();
  for (Value *constant : constants) {
    const Tensor &tensor = constant->constant();
    auto &bucket = buckets[{int(tensor.dtype()), tensor.dims(), sampleHash(tensor)}];
    Kept candidate{constant, std::nullopt};
    Value *same = nullptr;
    for (Kept &earlier : bucket)
      if (!same && earlier.contentHash() == candidate.contentHash() &&
          earlier.value->constant().identical(tensor))
        same = earlier.value;
    if (same && constant->hasUses() && !graph.isOutput(constant)) {
      graph.replaceAllUsesWith(constant, same);
      changed = true;
    } else if (!same) {
      bucket.push_back(candidate);
    }
  }
  return changed;
}

} // namespace

bool EliminateCommonSubexpressions::run(Graph &graph) {
  bool changed = mergeConstants(graph);
  // Candidates by op and first input; looked up, never iterated, so pointer keys are fine.
  std::map<std::pair<OpKind, const Value *>, std::vector<Node *>> seen;
  for (const auto &owned : graph.nodes()) {
    Node *node = owned.get();
    const Value *first = node->input(0);
    // A commutative node may match one whose inputs are swapped: file both orders.
    std::vector<const Value *> keys = {first};
    if (isCommutative(node->kind()) && node->numInputs() == 2 && node->input(1) != first)
      keys.push_back(node->input(1));
    Node *original = nullptr;
    for (Node *candidate : seen[{node->kind(), first}])
      if (!original && sameComputation(*node, *candidate))
        original = candidate;
    if (original && replaceOutputs(graph, *node, *original)) {
      changed = true;
      continue;
    }
    for (const Value *key : keys)
      seen[{node->kind(), key}].push_back(node);
  }
  return passes::eraseDeadNodes(graph) || changed;
}

} // namespace sinter
