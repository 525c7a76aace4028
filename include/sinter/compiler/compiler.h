// The compile driver: from an imported graph to model.so, in stages that run in this order
// (lib/compiler/compiler.cpp's buildManifest lists them, with the reason for each place):
//
//   the target's backend (codegen/targets/targets.h), asked for its capabilities
//   -> passes (passes/pipeline.h: graph to graph)
//   -> schedule: kernel groups (codegen/schedule/fusion.h), view aliases and
//      lifetimes (codegen/schedule/buffer_assignment.h)
//   -> lowering: each group once, into what the backend consumes (codegen/backend/backend.h's
//      LoweredGroup: kernel IR, contraction and attention descriptions)
//   -> weights: the constants into the weights blob
//   -> backend code generation: each kernel's source and launch shape (backend.h)
//   -> memory plan: values, scratch and workspace in one arena (codegen/schedule/memory_plan.h)
//   -> the plan: every launch's arguments, the signature's slots
//   -> packaging: the backend compiles (NVRTC/ptxas or LLVM), the writer links model.so
//      (package/writer.h)
//
// Nothing flows backwards: codegen never edits the graph, backends never read it, and each stage
// reads only what the stages before it made.
#pragma once

#include "sinter/codegen/backend/backend.h"
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
};

struct CompileStatistics {
  double passSeconds = 0, codegenSeconds = 0, finishSeconds = 0, writeSeconds = 0;
  /// Kernel launches in the plan, and the distinct kernels they launch (identical bodies are one).
  int kernelCount = 0, distinctKernelCount = 0;
  /// Toolchain units (an NVRTC or ptxas run each) the kernel cache had, did not have, and found
  /// damaged (and rebuilt); all 0 without a cache.
  uint64_t cacheHits = 0, cacheMisses = 0, cacheCorrupt = 0;
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
