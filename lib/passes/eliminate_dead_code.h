// eliminate-dead-code: removes nodes none of whose outputs is used or a graph output, and
// constants nothing reads.
//
//   %a = Relu(%x)          (unused)     =>   (removed)
//   %y = Neg(%x)  return %y                  %y = Neg(%x)  return %y
#pragma once

#include "sinter/passes/pass.h"

namespace sinter {

class EliminateDeadCode : public Pass {
public:
  std::string_view name() const override { return "eliminate-dead-code"; }
  bool run(Graph &graph) override;
};

} // namespace sinter
