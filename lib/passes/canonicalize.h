// canonicalize: removes ops that do nothing and collapses chains of data movement, so later
// passes (common subexpressions, batch-norm folding, the recognisers) and fusion see one form.
//
//   %a = Identity(%x)                           =>   (removed; %a's users read %x)
//   %t = Transpose(%x) {perm = [0, 2, 1]}
//   %u = Transpose(%t) {perm = [0, 2, 1]}        =>   (removed; %u's users read %x)
//   %r = Reshape(%x, %s1) : f32[6,4]
//   %q = Reshape(%r, %s2) : f32[2,12]            =>   %q = Reshape(%x, [2, 12]) : f32[2,12]
//
// Rules: Identity, inference Dropout, Cast to the input's own dtype, one-input Concat/Sum/Max/
// Min/Mean, and Reshape/Flatten/Squeeze/Unsqueeze/Expand whose output type is the input's are
// removed; a Transpose of a Transpose becomes one Transpose (or nothing when the composed
// permutation is the identity); a view (Reshape, Flatten, Squeeze, Unsqueeze) of a view becomes
// one Reshape of the original value; CastLike becomes Cast, a two-input Sum becomes Add; Gemm's
// alpha and beta fold into constant operands.
// Graph output names never change. Nodes a rewrite leaves unused are removed.
#pragma once

#include "sinter/passes/pass.h"

namespace sinter {

class Canonicalize : public Pass {
public:
  std::string_view name() const override { return "canonicalize"; }
  bool run(Graph &graph) override;
};

} // namespace sinter
