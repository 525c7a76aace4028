// Fusion: partitions a graph's nodes into kernel groups (lowering.h), each one kernel.
//
// Rules, in order (docs/fusion.md gives the reasons):
//  1. Epilogues: a kernel node (contraction, reduction, normalisation, pooling) absorbs the chain
//     of elementwise nodes after it while each link's value has one use and keeps the shape:
//     Conv -> BatchNormalization -> Add(residual) -> Relu is one kernel that stores once.
//  2. Prologues: an injective node whose one output has one use joins its consumer's group:
//     any injective node into an elementwise consumer (vertical chains), only data movement and
//     casts into a kernel node, which may read each element many times. Without deep
//     prologues (a backend's choice, BackendCapabilities), a Conv reads its run-time input
//     directly, a MatMul or Gemm through views (reshape, transpose, cast) only, and a Concat
//     is stored, never recomputed in its readers; what is computed from constants alone joins
//     any kernel, which packs it at compile time.
// A group runs where its last node ran, so every value a group reads was written before it.
#pragma once

#include "sinter/codegen/lowering/lowering.h"
#include "sinter/ir/graph.h"

#include <vector>

namespace sinter::codegen {

/// The graph's nodes as kernel groups in an order that respects dependencies. With `fuse`
/// false, one group per node. Group names are kernelName(nodes, position).
std::vector<KernelGroup> formKernelGroups(const Graph &graph, bool fuse, bool deepPrologues = true);

} // namespace sinter::codegen
