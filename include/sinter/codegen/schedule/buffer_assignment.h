// Buffer assignment: which bytes each value of a scheduled graph lives in, and for which steps.
//
// Step i is kernel group i (fusion.h's order); graph inputs are live from step -1 (they are
// copied into the arena before the first kernel) and graph outputs until step groups.size()
// (copied out after the last). Constants live in the weights blob and get no lifetime, except a
// constant graph output, which is copied into an arena slot at the end.
//
// A group that only reinterprets one value (Reshape, Flatten, Squeeze, Unsqueeze, Identity: the
// same bytes under another shape) is no kernel: its output aliases the value that owns those
// bytes, whose lifetime then covers every alias's (DESIGN.md: views never copy). Chains of views
// alias the first owner.
//
// The lifetimes feed memory_plan.h's planArena, in the order of first touch; the compile driver
// appends scratch and workspace buffers after them.
#pragma once

#include "sinter/codegen/lowering/lowering.h"
#include "sinter/codegen/schedule/memory_plan.h"
#include "sinter/ir/graph.h"

#include <cstdint>
#include <map>
#include <vector>

namespace sinter::codegen {

struct BufferAssignment {
  /// One per group: true when the group is views only and needs no kernel.
  std::vector<bool> viewGroup;
  /// Each aliasing value -> the value that owns its bytes (never itself an alias).
  std::map<const Value *, const Value *> storage;
  /// The values that own arena bytes, in the order of first touch, with their lifetimes
  /// (index-aligned; arenaIndex maps an owner to its index).
  std::vector<const Value *> arenaValues;
  std::vector<BufferLifetime> lifetimes;
  std::map<const Value *, size_t> arenaIndex;

  /// The value that owns `value`'s bytes: `value` itself unless it is an alias.
  const Value *storageOf(const Value *value) const;
};

/// The value a group of reinterpreting views reads (the same bytes under another shape), or
/// null when the group computes something, writes more than one value, or changes the size or
/// the type of its bytes.
const Value *viewSource(const KernelGroup &group);

/// Aliases and lifetimes of the graph's values, its nodes scheduled as `groups`. Every dim must
/// be static.
BufferAssignment assignBuffers(const Graph &graph, const std::vector<KernelGroup> &groups);

} // namespace sinter::codegen
