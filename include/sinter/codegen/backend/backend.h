// Code generation backends. Each backend is a class private to its own .cpp, behind this
// interface and the factory of targets/targets.h; a backend left out of the build is a user
// error at run time, not a link error.
//
// The compile driver (compiler.h) first asks a backend what it can do (capabilities: whether the
// passes should form fused attention, whether lowering should describe it), then what each
// kernel group lowered once (LoweredGroup) will need of the arena (needs: a workspace), plans
// memory, hands it each group in plan order (addKernel), and finally asks it to finish: a
// backend may compile kernels one by one or all at once (the CUDA C backend deals a model's
// distinct kernels into a few modules: one NVRTC run and one ptxas run per architecture each).
// A backend never reads graph nodes: what it needs of the group, the LoweredGroup carries. A
// backend that finds a kernel's code equal to an earlier one's returns the earlier one's name
// from addKernel, and the driver gives both launches that one manifest entry.
#pragma once

#include "sinter/codegen/cpu/cpu_options.h"
#include "sinter/codegen/cuda/cuda_options.h"
#include "sinter/codegen/kernel/kernel_ir.h"
#include "sinter/codegen/lowering/attention.h"
#include "sinter/codegen/lowering/concatenation.h"
#include "sinter/codegen/lowering/contraction.h"
#include "sinter/codegen/lowering/lowering.h"
#include "sinter/codegen/lowering/pooling.h"
#include "sinter/ir/tensor.h"
#include "sinter/package/manifest.h"
#include "sinter/support/kernel_cache.h"
#include "sinter/support/progress.h"

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace sinter::codegen {

/// How a backend runs its toolchain work. Neither option changes what the artifact holds.
struct BuildOptions {
  /// Workers for the toolchain runs (NVRTC, ptxas; `sinter compile -j`); 0: the host's cores.
  unsigned jobs = 0;
  /// The persistent kernel cache (support/kernel_cache.h) in front of the toolchains; null: none.
  std::shared_ptr<const KernelCache> cache;
  /// Where the driver and the backend report their phases' progress (support/progress.h); may
  /// be null.
  ProgressCallback progress;
};

/// Which target to build for, with each backend's own options (declared beside it).
struct TargetOptions {
  package::Target target = package::Target::Cpu;
  CpuOptions cpu;
  CudaOptions cuda;
  BuildOptions build;
  /// When set, every generated source (CUDA C, PTX, SASS listing, LLVM IR, assembly) is written
  /// here, kernel by kernel.
  std::string emitSourceDirectory;
};

/// How a kernel is launched, as the backend decided.
struct LaunchShape {
  uint32_t grid[3] = {1, 1, 1};
  uint32_t block[3] = {1, 1, 1};
  uint32_t sharedBytes = 0;
  int64_t parallelExtent = 1;
  /// Data the backend derived at compile time for this kernel (weights packed into the layout its
  /// loops read, ...): the compiler appends each to the weights blob and passes it to the launch
  /// as an extra argument after the group's outputs, in this order.
  std::vector<std::vector<uint8_t>> derivedConstants;
  /// Per kernel buffer (empty: none), whether the kernel no longer reads that constant input
  /// because a derived constant replaced it (weights packed into their kernel's layout). A
  /// constant that every kernel reading it has replaced is not stored in the artifact; its
  /// argument then points at the kernel's first derived constant, and is never read.
  std::vector<bool> replacedInputs;
};

/// What a kernel needs of the arena beyond its buffers, which the backend declares before memory
/// planning (Backend::needs) and honours when it generates the kernel.
struct KernelNeeds {
  /// Bytes of arena for the kernel's own step (a stream-K GEMM's partial sums): the compiler
  /// plans them with the activations and passes their address as the launch's last argument,
  /// after the derived constants. Their contents are undefined when the kernel starts.
  uint64_t workspaceBytes = 0;
};

/// What a backend can do, which the driver asks before the passes run and before lowering.
struct BackendCapabilities {
  /// The backend has a fused-attention kernel for values stored in 16 bits (f16, bf16), so the
  /// pass pipeline's fuse-attention forms Attention nodes at those precisions.
  bool fusedAttention16Bit = false;
  /// Lowering should describe fused-attention groups (attention.h) for the backend to print.
  bool describesFusedAttention = false;
  /// Fusion may recompute any data movement inside the kernels that read it (fusion.h): concats,
  /// slices and channel shuffles into a contraction's operands, chains of them into copies.
  /// Without it a Conv reads its run-time input directly, a MatMul or Gemm through views only,
  /// and every Concat is stored: the CPU backend packs a run-time operand once per tile of the
  /// other, evaluating its whole index expression each time, reads a convolution's window through
  /// its tables only when the input is read directly, and runs a nested selection per element
  /// as written (ShuffleNetV2's shuffles: 44 -> 26 ms, then less with the concats stored).
  bool deepPrologues = true;
};

/// A kernel group lowered once, by the driver, into every form a backend consumes. The buffers of
/// each kernel are the group's inputs, then its outputs, in that order.
struct LoweredGroup {
  /// The group as kernel IR, which every backend can build (lowering.h).
  Kernel kernel;
  /// The batched-GEMM description when the group is one contraction (contraction.h), for a
  /// backend's tiled or packed kernel.
  std::optional<Contraction> contraction;
  /// The fused-attention description when the capabilities ask for it and the group is one
  /// (attention.h).
  std::optional<FusedAttention> attention;
  /// The window pooling when the group is one MaxPool or AveragePool the description covers
  /// (pooling.h), for a backend's direct kernel.
  std::optional<Pooling> pooling;
  /// The block copies when the group is one Concat the description covers (concatenation.h).
  std::optional<Concatenation> concatenation;
  /// Per group input (kernel buffer), its value when it is a constant, else null: a backend may
  /// pack constant operands at compile time.
  std::vector<const Tensor *> constantInputs;
  /// The group's ops, in order, and the bytes its inputs and outputs occupy (for the manifest).
  std::vector<OpKind> ops;
  double bytesMoved = 0;
};

class Backend {
public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;

  virtual BackendCapabilities capabilities() const { return {}; }

  /// What the kernel of `group` will need of the arena, asked before memory planning so that
  /// generation consumes a plan and never feeds one: the same choice addKernel makes later.
  virtual KernelNeeds needs(const LoweredGroup &group) const {
    (void)group;
    return {};
  }

  /// Adds one kernel to the artifact: the group's kernel IR, or a specialised kernel the
  /// backend generates from its contraction or attention description. Returns the manifest's
  /// kernel entry (without binaries yet) and the launch shape; the launch's arguments are the
  /// kernel's buffers (inputs, then outputs), then what LaunchShape adds.
  virtual package::Kernel addKernel(const LoweredGroup &group, LaunchShape &launch) = 0;

  /// Compiles everything added and stores the results in the manifest (CUDA modules), or in
  /// object files for the artifact writer (CPU). Returns the object files to link into model.so.
  virtual std::vector<std::string> finish(package::Manifest &manifest,
                                          const std::string &workDirectory) = 0;
};

/// Lowers a group once into what `capabilities` say the backend consumes: its kernel IR, its
/// contraction description, its fused-attention description when asked for, its constants.
/// Throws UserError naming the node when an op or a form of it cannot be lowered.
LoweredGroup lowerForBackend(const KernelGroup &group, const BackendCapabilities &capabilities);

/// The manifest entry every backend reports for a kernel: its name, the generator that built it,
/// the ops it computes, its flops and the bytes its group reads and writes.
package::Kernel describeKernel(const LoweredGroup &group, const Kernel &kernel,
                               const std::string &generator);

/// What decides whether two kernels are one (a model's repeated layers), for a backend that
/// gives such kernels one entry point: the kernel's code (CUDA C, LLVM IR) with the kernel's
/// name, as a whole identifier, and any comment line naming its buffers (`// buffers:`) taken
/// out, and every field of the manifest entry but the name (generator, ops, flops, bytes), so a
/// shared entry describes each launch exactly. Names inside longer identifiers stay (a stream-K
/// kernel's `NAME_arrivals` counters, state of its own in the module), so such kernels are
/// never merged.
std::string distinctKernelKey(const std::string &code, const std::string &name, const package::Kernel &entry);

} // namespace sinter::codegen
