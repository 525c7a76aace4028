// move-scales-after-matmuls: a MatMul operand scaled by a constant scalar is multiplied unscaled,
// and the product is scaled instead.
//
//   MatMul(Mul(a, s), b)  ->  Mul(MatMul(a, b), s)       (Mul(s, a) likewise, and either operand)
//   MatMul(Div(a, s), b)  ->  Div(MatMul(a, b), s)
//
// Attention scales its query (and often its key too, by the fourth root of the head size each)
// before Q.K^T: as a node of its own that is a kernel copying the whole operand; after the
// product it is the product's epilogue. s must be a constant with one element and no more
// dimensions than the product, the scaled value must have one use and not be a graph output,
// and the scaling must not broadcast a, so the rewrite changes results by rounding only (one
// rounding of the product's scaling instead of one of each operand's).
#pragma once

#include "sinter/passes/pass.h"

namespace sinter {

class MoveScalesAfterMatMuls : public Pass {
public:
  std::string_view name() const override { return "move-scales-after-matmuls"; }
  bool run(Graph &graph) override;
};

} // namespace sinter
