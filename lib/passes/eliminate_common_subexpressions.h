// eliminate-common-subexpressions: nodes that compute the same thing are computed once.
//
//   %a = Mul(%x, %w)                         %a = Mul(%x, %w)
//   %b = Mul(%w, %x)                   =>    %y = Add(%a, %a)
//   %y = Add(%a, %b)
//
// Two nodes are the same when they have the same op, the same attributes (tensors compared by
// content) and the same inputs, in order, or in either order for commutative binary ops. Two
// constants are the same when their dtype, dims and bytes are. The later one is replaced by the
// earlier. A graph output is replaced only where its name can be kept (graph output names are
// the artifact's signature). Every op in ops.def is deterministic, so any node qualifies.
#pragma once

#include "sinter/passes/pass.h"

namespace sinter {

class EliminateCommonSubexpressions : public Pass {
public:
  std::string_view name() const override { return "eliminate-common-subexpressions"; }
  bool run(Graph &graph) override;
};

} // namespace sinter
