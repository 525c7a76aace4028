// The fused-attention description: an Attention node (4-D, no cache, no causal or window mask,
// no softcap, one head per key head) with the views and casts before it and the elementwise
// epilogue after it, as expressions a backend can print inside its own loops, the way
// contraction.h describes products. The CUDA backend prints it as one flash-style kernel
// (lib/codegen/cuda/cuda_attention.cpp); any other Attention node, or any other backend, takes
// the generic rule (lib/codegen/lower_attention.cpp).
#pragma once

#include "sinter/codegen/kernel/kernel_ir.h"
#include "sinter/codegen/lowering/lowering.h"

#include <optional>
#include <vector>

namespace sinter::codegen {

struct AttentionSpec {
  int64_t batch = 1;          ///< batch x heads, flattened into b
  int64_t lq = 1, lk = 1;     ///< queries and keys per head
  int64_t d = 1, dv = 1;      ///< head size of Q and K, and of V
  int b = -1, i = -1, j = -1, c = -1; ///< i64 variables: head, query, key, channel
  int acc = -1;               ///< the output element (f32) the epilogue stores
  ExprRef query, key, value;  ///< f32: query(b, i, c), key(b, j, c), value(b, j, c)
  ExprRef mask;               ///< f32 mask(b, i, j) added to the scaled logits; null if none
  double scale = 1.0;         ///< logits = scale * query . key (+ mask)
  /// Stores the output element (b, i, c) from acc, with the group's epilogue.
  std::vector<StmtRef> epilogue;
  int64_t flops() const { return 2 * batch * lq * lk * (d + dv); }
};

struct FusedAttention {
  Kernel kernel; ///< buffers and variables; its body is empty (a backend writes the loops)
  AttentionSpec spec;
};

/// The fused attention of a group made of one Attention node of that form (and injective
/// nodes); nullopt for any other group.
std::optional<FusedAttention> lowerFusedAttention(const KernelGroup &group);

} // namespace sinter::codegen
