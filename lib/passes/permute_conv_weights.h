// permute-conv-weights: a convolution's constant weights are stored with the input channels
// innermost, [Cout, k1, .., kn, Cin / group], and the convolution reads them through a Transpose
// back to ONNX's [Cout, Cin / group, k1, .., kn]:
//
//   %y = Conv(%x, %w)   ->   %w.permuted = constant [Cout, k1, .., kn, C]   (the same numbers)
//                            %w.view = Transpose(%w.permuted) {perm = [0, n + 1, 1, .., n]}
//                            %y = Conv(%x, %w.view)
//
// Why: a convolution is an implicit GEMM whose reduction runs over (window position, input
// channel), channels innermost (describeConv in lib/codegen/lower_contraction.cpp), so that a
// run of consecutive reduction steps is consecutive channels at one window position: one
// bounds test and one address for the run. Through the Transpose, weight row `o` of that
// reduction is contiguous (o * K + r), so the tiled kernels copy it in 16-byte runs. The
// Transpose is a view: fusion puts it in the convolution's kernel as a prologue, and no kernel
// copies it. Convolutions that reduce the window innermost (fewer than a multiple of eight
// channels per group: include/sinter/ir/conv_layout.h), weights whose bytes would not move (a 1x1
// window) and weights that are not constants are left alone.
#pragma once

#include "sinter/passes/pass.h"

namespace sinter {

class PermuteConvWeights : public Pass {
public:
  std::string_view name() const override { return "permute-conv-weights"; }
  bool run(Graph &graph) override;
};

} // namespace sinter
