// Small helpers the rewriting passes share: reading constants, single-user checks, and
// replacing a value while keeping graph output names (a graph output's name is the artifact's
// signature, so no rewrite may change it).
#pragma once

#include "sinter/ir/graph.h"

#include <optional>
#include <vector>

namespace sinter::passes {

/// The only node reading `value`, when it has exactly one use and is not a graph output.
Node *soleUser(const Graph &graph, const Value *value);

/// The value of a constant with one element (any rank), as a double; nullopt otherwise.
std::optional<double> scalarConstant(const Value *value);

/// Whether `value` is a one-element float constant within a few float32 ulps of `expected`
/// (exporters write constants such as sqrt(2) rounded to float32).
bool isScalarNear(const Value *value, double expected);

/// Whether two one-element float values agree to float32 rounding (relative 2^-21).
bool nearlyEqual(double value, double expected);

/// The other input of a binary node, given one of them; null if `known` is not an input.
Value *otherInput(const Node &node, const Value *known);

/// Replaces every use of `from` by `to` (same type). When `from` is a graph output, `to` takes
/// its name so the signature is unchanged; that needs `to` to be a node output that is not
/// itself a graph output. Returns false (and changes nothing) when that is impossible.
bool replaceValue(Graph &graph, Value *from, Value *to);

/// Adds a node before `before` producing one output with `replaced`'s type, and replaces
/// `replaced` by it (keeping a graph output's name). The old producers are left for
/// eliminate-dead-code. Returns the new node.
Node *replaceWithNode(Graph &graph, Value *replaced, OpKind kind,
                      const std::vector<Value *> &inputs, Node *before);

/// A product of factors: the value of a tree of Mul nodes (and Div and Pow by constants) as
/// constant * factors[0] * factors[1] * ... . The root's producer is expanded whatever its uses;
/// inner values only while they have one use and are not graph outputs, so every node in
/// `nodes` serves the root alone.
struct Product {
  double constant = 1.0;
  std::vector<Value *> factors;
  std::vector<Node *> nodes;
  /// How many factors are `value`.
  int count(const Value *value) const;
};
Product flattenProduct(const Graph &graph, Value *root);

/// Removes nodes none of whose outputs is used or a graph output (constants are left for
/// eliminate-dead-code). Rewrites call it so a pattern's old nodes do not count as users.
/// Returns whether it removed any.
bool eraseDeadNodes(Graph &graph);

} // namespace sinter::passes
