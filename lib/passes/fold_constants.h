// fold-constants: evaluates every node whose inputs are all constants with the reference
// evaluator and replaces its outputs by constants.
//
//   %s = Shape(%x)            ; x: f32[2,3]        %s = constant i64[2] [2, 3]
//   %n = Gather(%s, %zero)    ; zero constant  =>  %n = constant i64[] [2]
//
// Shape and Size of statically shaped values fold too. Nodes the evaluator cannot run are left
// alone. Output names are kept.
#pragma once

#include "sinter/passes/pass.h"

namespace sinter {

class FoldConstants : public Pass {
public:
  std::string_view name() const override { return "fold-constants"; }
  bool run(Graph &graph) override;
};

} // namespace sinter
