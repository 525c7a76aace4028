// fuse-attention: scaled dot-product attention written out as products and a softmax becomes one
// Attention node (ai.onnx opset 23, the 4-D form), which the CUDA backend runs as one kernel
// that never writes the scores to memory (docs/attention.md).
//
//   S  = MatMul(Q, KT)                  Q [..., Lq, D], KT [..., D, Lk]
//   S1 = Mul(S, c) | Div(S, c) ...      zero or more scalings by one-element constants
//   S2 = Add(S1, mask)                  optional; mask float, broadcast onto S
//   P  = Softmax(S2, axis = -1)
//   P1 = Where(IsNaN(P), 0, P)          optional (torch's guard for rows with every key masked)
//   O  = MatMul(P1, V)                  V [..., Lk, Dv]
//     ->  O = Attention(Q, Transpose(KT), V, mask) {scale = product of the scalings}
//
// Q, KT and V must have the same batch dims (one or two of them: rank 3 or 4; rank 3 is
// reshaped to [N, 1, L, D] and back), every intermediate one use, and the scale must be
// positive (the op's reference multiplies each of Q and K by its square root). The result
// differs from the original by rounding only.
//
// A row whose every logit is -inf (all keys masked) gives 0 where the softmax gave NaN (0 / 0):
// the op's rule, and what the guard, where there is one, gives. The pass runs only where the target has the fused kernel
// (PipelineOptions::fusedAttention): the CUDA target with 16-bit storage. The CPU backend's
// blocked products beat its Attention loop, and so do the tf32 tensor-core products at float32.
#pragma once

#include "sinter/passes/pass.h"

namespace sinter {

class FuseAttention : public Pass {
public:
  explicit FuseAttention(bool enabled = true) : enabled_(enabled) {}
  std::string_view name() const override { return "fuse-attention"; }
  bool run(Graph &graph) override;

private:
  bool enabled_;
};

} // namespace sinter
