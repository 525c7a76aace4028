// duplicate-shared-views: a view (a data-movement node with one output: Reshape, Transpose,
// Squeeze, Gather by constant indices, ...) that several nodes read, when every reader is a
// MatMul, Gemm, Conv or Attention, directly or through other views and Casts, is copied once per
// reader.
//
//   %s = Squeeze(%t)             %s.1 = Squeeze(%t)    %s.2 = Squeeze(%t)
//   %q = Gather(%s, 0)     ->    %q = Gather(%s.1, 0)
//   %k = Gather(%s, 1)           %k = Gather(%s.2, 1)
//
// Each copy then has one reader and joins that reader's kernel as a prologue (docs/fusion.md), so
// the contraction reads through the view and the view is never stored: ViT's QKV output, split
// into query, key and value by one materialised [3, L, B, E] copy, is read by the fused
// attention (or by Q.K^T and P.V) directly (the tensor-core printer's index simplification makes those reads affine again).
// Views shared with anything else (an elementwise reader would also recompute it, but then the
// stored value is cheaper) are left alone. The copies compute the same indices, so the rewrite
// changes no value.
#pragma once

#include "sinter/passes/pass.h"

namespace sinter {

class DuplicateSharedViews : public Pass {
public:
  std::string_view name() const override { return "duplicate-shared-views"; }
  bool run(Graph &graph) override;
};

} // namespace sinter
