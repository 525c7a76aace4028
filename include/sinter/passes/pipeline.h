// The pass pipeline is data: an ordered list (lib/passes/pipeline.cpp), each entry with the
// reason it is there and where it must run again. The runner verifies the graph after every pass
// that changed it and names the pass that broke an invariant.
#pragma once

#include "sinter/ir/dtype.h"
#include "sinter/passes/pass.h"

#include <functional>
#include <iosfwd>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace sinter {

struct PipelineOptions;

struct PipelineEntry {
  std::string name;
  std::string reason;
  /// A new instance of the pass, configured by the options it reads (most read none).
  std::function<std::unique_ptr<Pass>(const PipelineOptions &)> create;
  /// Run the pass again until it reports no change (bounded).
  bool untilFixedPoint = false;
};

/// The default pipeline, in order.
const std::vector<PipelineEntry> &defaultPipeline();

struct PipelineOptions {
  std::set<std::string> disabled;   ///< --disable-pass
  std::string dumpAfter;            ///< --dump-ir-after=PASS|all
  std::ostream *dumpStream = nullptr;
  bool verify = true;               ///< verify after every pass that changed the graph
  /// --precision: where float32 weights and activations are stored (f32, f16 or bf16).
  DType precision = DType::Float32;
  /// With 16-bit storage: whether the normalisations that subtract a mean (LayerNorm, ...) pin
  /// the producers of their inputs to f32 (--norm-inputs f32, bf16's default) or read their
  /// inputs as stored (--norm-inputs stored, fp16's default: a transformer's residual stream in
  /// 16 bits, as a model converted with torch's model.half() keeps it). docs/precision.md.
  bool pinNormalizationInputs = true;
  /// Whether the target runs an Attention node as one fused kernel (CUDA does), so that
  /// fuse-attention rewrites attention into one.
  bool fusedAttention = true;
};

/// The pipeline's name for a pass name or an older spelling of one that the CLI still accepts
/// ("recognise-gelu" -> "recognize-gelu"); any other name as it is.
std::string canonicalPassName(std::string_view name);

/// Runs the pipeline. Names in disabled/dumpAfter may be older spellings (canonicalPassName);
/// unknown ones are UserErrors listing the passes.
void runPipeline(Graph &graph, const PipelineOptions &options = {});

/// A new instance of the pipeline's pass of that name, configured by `options` (for tests and
/// tools); null if none.
std::unique_ptr<Pass> createPass(std::string_view name, const PipelineOptions &options);
std::unique_ptr<Pass> createPass(std::string_view name);

/// "1. fold-constants: evaluate nodes whose inputs are all constants ..." one per line.
std::string describePipeline();

} // namespace sinter
