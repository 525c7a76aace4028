// recognize-gelu: the exported forms of GELU become one Gelu node (ops.def: Gelu, opset 20,
// attribute approximate = "none" | "tanh").
//
//   erf form:   0.5 * x * (1 + erf(x / sqrt(2)))
//                 -> Gelu(x) {approximate = "none"}
//   tanh form:  0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))
//                 -> Gelu(x) {approximate = "tanh"}
//
// Products may be associated and ordered any way (x * 0.5 * (...), (0.5 * x) * (...)), scalings
// may be Mul or Div by a constant, and x^3 may be Pow(x, 3) or x * x * x. Every constant must be
// within float32 rounding of its exact value, every intermediate value must have one user and not
// be a graph output, and the result must have x's type (float32), so the rewrite changes results
// by rounding only.
#pragma once

#include "sinter/passes/pass.h"

namespace sinter {

class RecognizeGelu : public Pass {
public:
  std::string_view name() const override { return "recognize-gelu"; }
  bool run(Graph &graph) override;
};

} // namespace sinter
