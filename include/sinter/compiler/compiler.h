// The compile driver: from an imported graph to model.so, in stages that run in this order
// (lib/compiler/compiler.cpp's buildManifest lists them, with the reason for each place):
//
//   the target's backend (codegen/targets/targets.h), asked for its capabilities
//   -> passes (passes/pipeline.h: graph to graph)
//   -> schedule: kernel groups (codegen/schedule/fusion.h), view aliases and
//      lifetimes (codegen/schedule/buffer_assignment.h)
//   -> lowering: each group once, into what the backend consumes (codegen/backend/backend.h's
//      LoweredGroup: kernel IR, contraction and attention descriptions)
//   -> kernel needs: what each kernel will need of the arena beyond its buffers (a workspace),
//      declared by the backend (backend.h's Backend::needs)
//   -> memory plan: values, lowering's scratch and the declared workspace in one arena
//      (codegen/schedule/memory_plan.h)
//   -> backend code generation: each kernel's source and launch shape (backend.h), from the
//      lowered group alone
//   -> weights: the constants into the weights blob, each once, in the form its kernels read
//   -> the plan: every launch's arguments, the signature's slots
//   -> packaging: the backend compiles (NVRTC/ptxas or LLVM), the writer links model.so
//      (package/writer.h)
//
// Nothing flows backwards: codegen never edits the graph, backends never read it, and each stage
// reads only what the stages before it made.
#pragma once

#include "sinter/codegen/backend/backend.h"
#include "sinter/package/manifest.h"
#include "sinter/passes/independent_dims.h"
#include "sinter/passes/pipeline.h"

#include "sinter/ir/tensor.h"

#include <functional>
#include <map>
#include <memory>
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
  /// Wall seconds by phase: the passes; lowering and the backend's code generation; planning
  /// (scheduling, memory plan, weights laid out, launches recorded); the backend's toolchain
  /// work (finish); linking and writing model.so.
  double passSeconds = 0, codegenSeconds = 0, planSeconds = 0, finishSeconds = 0, writeSeconds = 0;
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

/// A symbolic dim compiled for several sizes (`--dim batch=1,2,4,8`): its buckets, ascending, and
/// the graph inputs' axes that carry it.
struct DimBuckets {
  std::string symbol;
  std::vector<int64_t> buckets;
  std::vector<DimOrigin> origins;
};
/// The most plans one artifact holds (the product of the symbols' bucket counts).
inline constexpr size_t kMaxPlans = 256;
/// Imports the model with each bucketed symbol bound to the given size.
using GraphImporter =
    std::function<std::unique_ptr<Graph>(const std::map<std::string, int64_t> &sizes)>;

/// A bucketed artifact: one plan per combination of buckets (the last symbol's fastest), each
/// imported and compiled through stages 1 to 7 with one backend, sharing one weights blob (equal
/// constants are stored once) and compiled together in stage 8. Records, per symbol, whether
/// prove-independent-dim held in every plan that padding may run (passes/independent_dims.h).
package::Manifest buildBucketedManifest(const GraphImporter &importGraph,
                                        const std::vector<DimBuckets> &symbols,
                                        const CompileOptions &options,
                                        const std::string &workDirectory,
                                        std::vector<std::string> &objectFiles,
                                        CompileStatistics &stats);
CompileStatistics compileBucketedGraphs(const GraphImporter &importGraph,
                                        const std::vector<DimBuckets> &symbols,
                                        const CompileOptions &options,
                                        const std::string &outputPath);

} // namespace sinter
