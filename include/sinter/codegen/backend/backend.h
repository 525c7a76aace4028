// Code generation backends. Each backend is a class private to its own .cpp, behind this
// interface and the factory of targets/targets.h; a backend left out of the build is a user
// error at run time, not a link error.
//
// The compile driver (compiler.h) hands a backend each kernel group, in plan order, and finally
// asks it to finish: a backend may compile kernels one by one or all at once (the CUDA C backend
// compiles every kernel of a model as one NVRTC program and one ptxas run per architecture).
#pragma once

#include "sinter/codegen/kernel/kernel_ir.h"
#include "sinter/codegen/lowering/lowering.h"
#include "sinter/package/manifest.h"

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace sinter::codegen {

struct TargetOptions {
  package::Target target = package::Target::Cpu;
  /// CUDA: SASS for each of these; PTX is added for the newest, for JIT on newer GPUs.
  std::vector<std::string> cudaArchs = {"sm_80", "sm_86", "sm_89", "sm_90"};
  /// CUDA: "cuda-c" (CUDA C, NVRTC, ptxas) or "llvm" (LLVM NVPTX, ptxas), with fallback to cuda-c
  /// for groups the NVPTX route cannot lower.
  std::string gpuCodegen = "cuda-c";
  /// CPU: "x86-64-v2" (default, portable), "x86-64-v3", "x86-64-v4" or "native".
  std::string cpuLevel = "x86-64-v2";
  /// CUDA on sm_80 and newer: how float32 contractions whose operands are not exact 16-bit
  /// values run. Tf32x3 (the default) splits each operand into a tf32 value and a tf32
  /// remainder and sums three tensor-core products, which keeps fp32's accuracy; Tf32
  /// (--precision tf32) rounds the operands to tf32 for one product; Simt keeps the f32 FMA
  /// kernel (--fp32-contractions simt). docs/precision.md has the measurements.
  enum class Fp32Contractions { Tf32x3, Tf32, Simt };
  Fp32Contractions fp32Contractions = Fp32Contractions::Tf32x3;
  /// CUDA tensor-core contractions: when set, every one of them uses this block tile (rows,
  /// columns; one of the generator's tiles) instead of the one it would choose
  /// (--tensor-core-tile, for tuning and ablations); with a wgmma tile (128x128, 128x64) and
  /// warpgroupMma, their wgmma body.
  std::optional<std::array<int, 2>> tensorCoreTile;
  /// CUDA with sm_90 among the architectures: 16-bit contractions with a 128x128 tile get a
  /// warpgroup-MMA (wgmma) body in their sm_90 code, which is then built for sm_90a
  /// (--wgmma on|off; docs/performance.md).
  bool warpgroupMma = true;
  /// CUDA tensor-core contractions: the epilogue walks the tile by rows through shared memory
  /// (coalesced stores and reads; the default), or each thread evaluates its own accumulator
  /// fragments (--tensor-core-epilogue rows|fragments, for ablations; docs/performance.md).
  bool rowWalkEpilogue = true;
  /// CUDA wgmma contractions with a reduction of more than 16 slices whose tiles leave at most
  /// half a round of blocks over take whole rounds of tiles, then split the leftover tiles into
  /// parts of their reductions, a block a part (stream-K; --stream-k auto|off;
  /// cuda_mma_choice.cpp decides; docs/performance.md).
  bool streamK = true;
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
  /// Bytes of arena the kernel needs for its own step (a stream-K GEMM's partial sums): the
  /// compiler plans them with the activations and passes their address as the launch's last
  /// argument, after the derived constants. Their contents are undefined when the kernel starts.
  uint64_t workspaceBytes = 0;
};

class Backend {
public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;

  /// Adds one kernel to the artifact. `kernel` is the group lowered to kernel IR; a backend may
  /// instead generate a specialised kernel from `group` (tiled GEMM and convolution). Returns the
  /// manifest's kernel entry (without binaries yet) and the launch shape; the kernel's buffers
  /// are the group's inputs then outputs, in that order, and so are the launch's arguments.
  virtual package::Kernel addKernel(const KernelGroup &group, const Kernel &kernel,
                                    LaunchShape &launch) = 0;

  /// Compiles everything added and stores the results in the manifest (CUDA modules), or in
  /// object files for the artifact writer (CPU). Returns the object files to link into model.so.
  virtual std::vector<std::string> finish(package::Manifest &manifest,
                                          const std::string &workDirectory) = 0;
};

/// The manifest entry every backend reports for a kernel: its name, the generator that built it,
/// the ops it computes, its flops and the bytes its group reads and writes.
package::Kernel describeKernel(const KernelGroup &group, const Kernel &kernel,
                               const std::string &generator);

} // namespace sinter::codegen
