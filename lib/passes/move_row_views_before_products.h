// move-row-views-before-products: a product whose rows are rearranged by views afterwards
// multiplies the rearranged rows of its input instead, so that its output is already in the
// order its readers take:
//
//   %g = Gemm(%a, %w, %b) {transB = 1} : [L*B, N]           %a.r = Reshape(%a) : [L, B, K]
//   %r = Reshape(%g) : [L, B, N]                      ->     %a.t = Transpose(%a.r) {perm = [1, 0, 2]}
//   %t = Transpose(%r) {perm = [1, 0, 2]} : [B, L, N]        %p = MatMul(%a.t, Transpose(%w)) : [B, L, N]
//   %y = Add(%t, %x)                                         %t = Add(%p, %b)
//                                                            %y = Add(%t, %x)
//
// The views must keep the last axis whole (Reshapes that leave it as it is, Transposes that
// leave it last): they then move whole rows, and moving rows commutes with multiplying each
// row by the same matrix (and adding the same bias row). Each view's output has one use, and
// so does the product's. Why: a view between a product and an elementwise reader ends the
// product's epilogue, so the reader is a kernel of its own that copies the whole output (ViT's
// residual add after the attention's output projection, which torch's sequence-first attention
// writes as [L, B, E] and transposes back); before the product the views are its prologue, read
// through index arithmetic, and the add joins the product's epilogue.
#pragma once

#include "sinter/passes/pass.h"

namespace sinter {

class MoveRowViewsBeforeProducts : public Pass {
public:
  std::string_view name() const override { return "move-row-views-before-products"; }
  bool run(Graph &graph) override;
};

} // namespace sinter
