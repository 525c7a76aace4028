// fold-batch-norm: an inference BatchNormalization, or a Mul/Div/Add/Sub by a per-channel
// constant, right after a Conv, Gemm or MatMul with constant weights, is folded into the
// weights and bias, when the contraction's output has no other user.
//
//   %c = Conv(%x, %w, %b)                         %c = Conv(%x, %w', %b')
//   %y = BatchNormalization(%c, %s, %t, %m, %v)   =>
//                                                  (%y's users read %c)
//
// With k = s / sqrt(v + epsilon): w'[o, ...] = w[o, ...] * k[o] and b' = (b - m) * k + t; a Mul
// by c scales w by c and b by c, an Add of c adds c to b. Arithmetic is in double and rounded
// once to the weights' dtype. The channel is the output's axis 1 for Conv and Gemm (whose B
// column, or row with transB, is scaled and whose C becomes the bias, with beta folded in),
// and the last axis for a MatMul with a 2-D constant rhs: its columns are scaled, and since
// MatMul has no bias input, a BatchNormalization's shift stays behind as an Add of a constant.
// Constants must be finite; the rewritten operation must not broadcast its output larger.
#pragma once

#include "sinter/passes/pass.h"

namespace sinter {

class FoldBatchNorm : public Pass {
public:
  std::string_view name() const override { return "fold-batch-norm"; }
  bool run(Graph &graph) override;
};

} // namespace sinter
