// The compile driver: from an imported graph to model.so.
//
//   passes (pipeline.h) -> kernel groups -> memory plan -> lowering + backend per group
//   -> backend finish (NVRTC/ptxas or LLVM object) -> artifact writer
//
// Nothing flows backwards: codegen never edits the graph.
#pragma once

#include "sinter/codegen/backend.h"
#include "sinter/package/manifest.h"
#include "sinter/passes/pipeline.h"

#include "sinter/ir/tensor.h"

#include <functional>
#include <map>
#include <string>
#include <string_view>

namespace sinter {

class Graph;

/// The name --disable-pass takes to compile one kernel per node (no fusion).
inline constexpr std::string_view kFuseKernels = "fuse-kernels";

struct CompileOptions {
  codegen::TargetOptions target;
  PipelineOptions pipeline;
  /// Graph inputs the frontend bound to values (--bind-input), by name: already constants of the
  /// graph; recorded in the manifest so the artifact says what it was specialised to.
  std::map<std::string, Tensor> boundInputs;
  /// Progress messages ("lowering 12/160 kernels"); may be null.
  std::function<void(const std::string &)> progress;
};

struct CompileStatistics {
  double passSeconds = 0, codegenSeconds = 0, finishSeconds = 0, writeSeconds = 0;
  int kernelCount = 0;
  int64_t sourceNodeCount = 0;
  uint64_t arenaBytes = 0, activationBytes = 0, weightBytes = 0;
};

/// Builds the manifest and the objects to link, without writing the artifact.
package::Manifest buildManifest(Graph &graph, const CompileOptions &options,
                                const std::string &workDirectory,
                                std::vector<std::string> &objectFiles, CompileStatistics &stats);

/// Compiles the graph (whose dims must all be static) into an artifact at outputPath.
CompileStatistics compileGraph(Graph &graph, const CompileOptions &options,
                               const std::string &outputPath);

} // namespace sinter
