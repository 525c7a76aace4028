// recognize-layer-normalization: the decomposed layer norm exporters and hand-written models
// leave becomes one LayerNormalization node (a single two-pass reduction kernel instead of two
// reductions and a chain of elementwise kernels).
//
//   %mean = ReduceMean(%x, axes) {keepdims = 1}
//   %d    = Sub(%x, %mean)
//   %sq   = Pow(%d, 2)            (or Mul(%d, %d))
//   %var  = ReduceMean(%sq, axes) {keepdims = 1}
//   %ve   = Add(%var, eps)
//   %s    = Sqrt(%ve)
//   %n    = Div(%d, %s)           (or Mul(%d, Reciprocal(%s)))
//   %g    = Mul(%n, gamma)        (optional, either operand order)
//   %y    = Add(%g, beta)         (optional)
//      =>  %y = LayerNormalization(%x, gamma', beta') {axis = rank - len(axes), epsilon = eps}
//
// Conditions: axes are the trailing dims (in any order and sign), equal for both means; eps,
// gamma and beta are constants, gamma and beta broadcast within the normalised dims only (they
// are materialised to exactly those dims); every intermediate value has only the users above and
// is not a graph output; x and y are float32 of one type. LayerNormalization computes the same
// two-pass mean and variance, so results change by rounding only.
#pragma once

#include "sinter/passes/pass.h"

namespace sinter {

class RecognizeLayerNormalization : public Pass {
public:
  std::string_view name() const override { return "recognize-layer-normalization"; }
  bool run(Graph &graph) override;
};

} // namespace sinter
