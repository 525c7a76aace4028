// One signature for every pass: run on the graph, return whether it changed anything; errors are
// thrown (UserError for bad models, InternalError for broken invariants). A pass that returns
// true must have changed the graph, and one that returns false must have left it as it was.
#pragma once

#include <memory>
#include <string_view>

namespace sinter {

class Graph;

class Pass {
public:
  virtual ~Pass() = default;
  /// The name used by --disable-pass and --dump-ir-after ("fold-constants").
  virtual std::string_view name() const = 0;
  virtual bool run(Graph &graph) = 0;
};

} // namespace sinter
