// prove-independent-dim: an analysis (it never changes the graph) that proves a symbolic dim
// independent, that is, that no op mixes elements along it, so that slice i of every output along
// the dim depends on slice i of the inputs alone. The runtime relies on it to run an input smaller
// than a shape bucket in the next bucket up, padded with zeros, and trim the outputs (docs/runtime.md,
// "Shape buckets").
//
// It follows the dim from the graph inputs that carry it (given by axis) forward through every
// node, with one rule per op family saying where the dim lands in each output or why the op mixes
// along it. A value carries the dim at most once.
//
//   graph @main(%x: f32[8,16]) -> (%y) {          x carries the dim at axis 0
//     %w = constant f32[16,4] [...]
//     %m = MatMul(%x, %w) : f32[8,4]               rows of a product: axis 0
//     %y = Softmax(%m) {axis = 1} : f32[8,4]       normalises along axis 1: axis 0 kept
//   }                                              => independent; y carries it at axis 0
//
// With {axis = 0} the Softmax mixes along the dim and the proof fails, naming that node. The rules
// accept elementwise ops (with broadcasting), BatchNormalization in inference, normalisations,
// softmaxes and reductions over other axes, MatMul and Gemm where the dim is a batch or row dim,
// Conv and pooling along the batch axis, attention along its batch axis, views and Transposes that
// keep the dim a dim of its own, and Concat, Split, Slice, Gather, Pad and Tile that leave it
// whole. Everything else that reads the dim (an op without a rule, a Reshape that merges it with
// another dim, Shape, which reads its size) fails the proof: a failure is never wrong, only
// conservative.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace sinter {

class Graph;
class Value;

/// Where a symbolic dim enters the graph: graph input `input`'s axis `axis`.
struct DimOrigin {
  std::string input;
  int axis = 0;
};

struct DimIndependence {
  bool independent = false;
  /// Why not, naming the node and the axis ("Softmax 'prob' normalises along axis 0, which
  /// carries the dim"); empty when independent.
  std::string reason;
  /// Per graph output, the axis that carries the dim, or -1 when the output does not depend on it.
  std::vector<int> outputAxes;
};

/// Proves the dim entering at `origins` independent in `graph`, whose shapes must be static.
DimIndependence proveIndependentDim(const Graph &graph, const std::vector<DimOrigin> &origins);

} // namespace sinter
