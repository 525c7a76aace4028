// `sinter verify --bisect`: the first node, in topological order, whose output diverges from the
// reference evaluator beyond tolerance.
//
// Without touching the compiler: the tool copies the imported graph, adds chosen intermediate
// values as graph outputs, compiles that copy for the same target with the same flags, runs it on
// the diverging input set and compares each exposed value with the reference evaluator's value of
// the same name. Each round exposes up to eight nodes spread over the interval still in doubt,
// between the last node known to agree and the first known to diverge (the ancestors of the
// diverging output only), so a model of N nodes takes about log9(N) compiles. The node found is
// then confirmed: compiled with its inputs exposed too, its inputs must agree; when one does not,
// the search goes on before it. Exposing a value keeps it in memory, which can change fusion; a
// divergence that exposing makes vanish is reported as such.
#pragma once

#include "verify_compare.h"
#include "verify_report.h"

#include "sinter/compiler/compiler.h"
#include "sinter/ir/graph.h"

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace sinter::cli {

struct BisectRequest {
  const Graph *imported = nullptr;      ///< the compiled model as imported (before any pass)
  const Graph *compiled = nullptr;      ///< the verified artifact's graph after the passes (kernel names)
  CompileOptions options;               ///< the verified artifact's compile options
  std::vector<const Tensor *> inputs;   ///< the diverging input set, in imported->inputs() order
  std::map<std::string, Tensor> truth;  ///< the reference evaluator's value of every node output, by name
  std::string divergingOutput;          ///< the first graph output that diverged
  std::string caseName;
  /// The tolerance of an intermediate value, given its truth (the global flags over the defaults).
  std::function<Tolerance(const Tensor &truth)> toleranceFor;
  int64_t opset = 0;
  int threads = 0;
};

/// Runs the search; compile or run failures of the exposed copies are reported in the result's
/// summary rather than thrown when the search can go on.
BisectResult bisectDivergence(const BisectRequest &request);

} // namespace sinter::cli
