// The artifact's content as the compiler builds it: what `sinter compile` writes into model.so
// and what libsinter_rt reads back (docs/artifact-format.md has the byte layout). The manifest is
// the artifact's ABI: a signature, a weights blob, kernels, a plan of steps over three memory
// regions, and the arena size. Nothing in it depends on addresses or hash order, so identical
// inputs give identical bytes.
#pragma once

#include "sinter/ir/dtype.h"

#include <cstdint>
#include <deque>
#include <span>
#include <string>
#include <variant>
#include <vector>

namespace sinter::package {

enum class Target : uint32_t { Cpu = 1, Cuda = 2 };

/// A graph input or output: static dims (the artifact is specialised), with the symbol each dim
/// came from ("" for dims that were static in the model), for display.
struct TensorSignature {
  std::string name;
  DType dtype = DType::Float32;
  std::vector<int64_t> dims;
  std::vector<std::string> dimSymbols;
  /// Byte offset of this tensor in the arena: the runtime copies inputs in before the plan and
  /// outputs out after it.
  uint64_t arenaOffset = 0;
};

/// Where a kernel argument points.
enum class Region : uint32_t { Arena = 0, Weights = 1 };
struct BufferRef {
  Region region = Region::Arena;
  uint64_t offset = 0; ///< bytes from the region's start
};

/// One compiled form of a CUDA module: SASS for one architecture, or PTX for JIT.
struct CudaBinary {
  std::string arch; ///< "sm_90" for a cubin, "compute_90" for PTX
  bool isPtx = false;
  std::vector<uint8_t> bytes;
};

/// A CUDA module: many kernels compiled together (one NVRTC and ptxas run per module).
struct CudaModule {
  std::vector<CudaBinary> binaries;
};

struct Kernel {
  /// Names what it fused: "fused_conv_add_relu_12". Also the CUDA entry point or CPU symbol.
  std::string name;
  /// Which code generator built it: "cuda-c", "llvm-nvptx", "llvm-x86".
  std::string generator;
  /// The IR ops it computes, in order (for `sinter inspect --plan`).
  std::vector<std::string> ops;
  uint32_t cudaModule = 0; ///< CUDA target: index into Manifest::cudaModules
  double flops = 0;
  double bytesMoved = 0;
};

/// Runs a kernel. CUDA: grid x block threads with dynamic shared memory; each argument is passed
/// as a device pointer. CPU: the kernel `void name(void *const *args, int64_t begin, int64_t end)`
/// is called by the thread pool on disjoint chunks of [0, parallelExtent).
struct Launch {
  uint32_t kernel = 0; ///< index into Manifest::kernels
  uint32_t grid[3] = {1, 1, 1};
  uint32_t block[3] = {1, 1, 1};
  uint32_t sharedBytes = 0;
  int64_t parallelExtent = 1;
  std::vector<BufferRef> args;
  /// Bytes each argument spans from its offset (one per argument), when the producer records
  /// them; empty otherwise. With them the validator checks every argument's whole range (inputs,
  /// outputs, scratch, derived constants, workspace) against its region, not only its start.
  std::vector<uint64_t> argBytes;
};

/// Copies bytes between regions (views that cannot alias, outputs that are constants).
struct Copy {
  BufferRef source;
  BufferRef destination;
  uint64_t bytes = 0;
};

using Step = std::variant<Launch, Copy>;

struct WeightEntry {
  std::string name;
  uint64_t offset = 0; ///< in the weights blob; aligned to kWeightAlignment
  uint64_t bytes = 0;
};

/// A graph input given a value at compile time (`sinter compile --bind-input NAME=FILE`): it is a
/// constant of the compiled graph, not part of the signature. Recorded so `sinter inspect` can
/// say what the artifact was specialised to; the runtime does not read it.
struct BoundInput {
  std::string name;
  DType dtype = DType::Float32;
  std::vector<int64_t> dims;
  uint64_t valueHash = 0;     ///< hashBytes() of the value's bytes
  std::vector<uint8_t> value; ///< the bytes, when at most kMaxRecordedBoundBytes; else empty
};
inline constexpr uint64_t kMaxRecordedBoundBytes = 1024;

/// One plan of a bucketed artifact: the steps for one combination of shape buckets, with the
/// signature at those sizes and the arena they need. The manifest's own inputs, outputs, arena and
/// steps are the first plan; Manifest::additionalPlans holds the others.
struct Plan {
  std::vector<TensorSignature> inputs, outputs;
  uint64_t arenaBytes = 0;
  uint64_t activationBytes = 0;
  std::vector<Step> steps;
};

/// A symbolic dim compiled for several sizes (`sinter compile --dim batch=1,2,4,8`): a plan per
/// bucket (per combination of buckets, with several symbols), sharing one weights blob. Each
/// signature dim whose dimSymbols entry is the name has the plan's bucket there.
struct ShapeSymbol {
  std::string name;
  std::vector<int64_t> buckets; ///< ascending, each at least 1
  /// The compiler proved the dim independent (passes/independent_dims.h) in every plan but the
  /// smallest bucket's: a size between buckets runs in the next bucket up, padded with zeros, and
  /// the outputs are trimmed.
  bool paddable = false;
  std::string paddingRefusal; ///< why it is not paddable (the proof's reason); "" when it is
};

inline constexpr uint64_t kWeightAlignment = 256;
inline constexpr uint64_t kArenaAlignment = 256;

struct Manifest {
  Target target = Target::Cpu;
  std::string producer;      ///< "sinter 0.1.0"
  /// CPU target: the x86-64 levels ("x86-64-v2", "x86-64-v3", "x86-64-v4"), ascending, that the
  /// artifact has kernels for; the runtime runs the highest the CPU has (cpuKernelSymbol).
  std::vector<std::string> cpuLevels;
  std::vector<std::string> cudaArchs; ///< CUDA target: "sm_80", ...
  std::vector<TensorSignature> inputs, outputs;
  uint64_t arenaBytes = 0;
  /// Sum of every activation's size: what the arena would be without reuse.
  uint64_t activationBytes = 0;
  /// The weights blob, owned. Or, when its builder lays the blob out without copying it (the
  /// compiler, from its graph's constants), empty, and the blob is `borrowedWeights` end to end:
  /// spans of bytes that stay alive and unchanged until the artifact is written, with the
  /// alignment padding between them as spans of zeros and derived bytes kept in
  /// `derivedWeights`. weightPieces() and weightsSize() read either form; ownWeights() turns the
  /// second into the first.
  std::vector<uint8_t> weights;
  std::vector<std::span<const uint8_t>> borrowedWeights;
  std::deque<std::vector<uint8_t>> derivedWeights; ///< owners of borrowed pieces made here
  std::vector<WeightEntry> weightTable;
  std::vector<CudaModule> cudaModules;
  std::vector<Kernel> kernels;
  std::vector<Step> steps;
  /// Number of nodes in the source model (for the fusion summary).
  int64_t sourceNodeCount = 0;
  /// Inputs bound at compile time, in name order (empty for most artifacts).
  std::vector<BoundInput> boundInputs;
  /// Where the compiler stored the model's float32 weights and activations (`sinter compile
  /// --precision`): Float32, Float16 or BFloat16. Kernels compute in f32 whatever it is, and the
  /// signature keeps the model's types; recorded for `sinter inspect`, the runtime ignores it.
  DType storagePrecision = DType::Float32;
  /// Shape buckets (empty for an artifact of one shape). Plans are ordered by the symbols' bucket
  /// indices, the last symbol's fastest: plan 0 (the fields above) has every smallest bucket.
  std::vector<ShapeSymbol> symbols;
  /// Plans 1 and up; the product of the symbols' bucket counts is 1 + their number.
  std::vector<Plan> additionalPlans;
};

/// A weights blob as pieces laid end to end.
using WeightPieces = std::span<const std::span<const uint8_t>>;

/// The weights blob's bytes, in order: `weights`, or the borrowed pieces.
inline std::vector<std::span<const uint8_t>> weightPieces(const Manifest &manifest) {
  if (manifest.borrowedWeights.empty())
    return {std::span<const uint8_t>(manifest.weights)};
  return manifest.borrowedWeights;
}

/// The weights blob's size in bytes.
inline uint64_t weightsSize(const Manifest &manifest) {
  uint64_t size = manifest.weights.size();
  for (std::span<const uint8_t> piece : manifest.borrowedWeights)
    size += piece.size();
  return size;
}

/// Copies borrowed pieces into `weights`, so that the manifest no longer depends on them.
inline void ownWeights(Manifest &manifest) {
  if (manifest.borrowedWeights.empty())
    return;
  std::vector<uint8_t> owned;
  owned.reserve(weightsSize(manifest));
  for (std::span<const uint8_t> piece : manifest.borrowedWeights)
    owned.insert(owned.end(), piece.begin(), piece.end());
  manifest.weights = std::move(owned);
  manifest.borrowedWeights.clear();
  manifest.derivedWeights.clear();
}

} // namespace sinter::package
