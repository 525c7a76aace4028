// Lowering: from a kernel group (IR nodes fused into one kernel) to kernel IR (kernel_ir.h).
//
// Injective ops (elementwise math, casts, and index-remapping data movement: Transpose, Slice,
// Gather, Expand, Concat, Pad, Reshape, ...) lower to an *accessor*: the value of the output at a
// multi-index, as an expression over its inputs' accessors. Composing accessors is how a group of
// injective ops becomes one kernel that never writes its intermediates. Other ops (reductions,
// normalisation, softmax, pooling, naive contractions) lower to a kernel body that reads its
// inputs through accessors, so injective producers can fuse into them as prologues.
//
// Per-op rules are registered by family in lib/codegen/lower_*.cpp and looked up by kind.
#pragma once

#include "sinter/codegen/kernel/kernel_ir.h"
#include "sinter/ir/graph.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace sinter::codegen {

/// Nodes that become one kernel. Inputs are read from memory (graph inputs, constants, or other
/// groups' outputs); outputs are written to memory. All shapes are static.
struct KernelGroup {
  std::string name; ///< kernel name, e.g. "fused_conv_add_relu_12"
  std::vector<const Node *> nodes; ///< in topological order
  std::vector<const Value *> inputs;
  std::vector<const Value *> outputs;
};

/// The value of a tensor at a multi-index (one i64 expression per dim; empty for rank 0).
using Accessor = std::function<ExprRef(const std::vector<ExprRef> &index)>;

/// True when lowering has a rule for this node (with its attributes and types).
bool canLower(const Node &node);

/// True when the node lowers to an accessor (an injective rule: elementwise math, casts, index
/// remappings), which fusion may compose into its consumer's kernel.
bool isInjective(const Node &node);

/// Lowers a group. The kernel's buffers are the group's inputs in order, then its outputs.
/// Throws UserError naming the node when an op or a form of it cannot be lowered.
Kernel lowerGroup(const KernelGroup &group);

/// Names a kernel after what it computes: "fused_conv_add_relu_12" (index keeps names unique).
std::string kernelName(const std::vector<const Node *> &nodes, int index);

} // namespace sinter::codegen
