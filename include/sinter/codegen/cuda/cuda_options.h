// The options of the CUDA target (--target cuda), owned by its backends: the CUDA C backend
// (cuda_backend.h) and the NVPTX route (nvptx/nvptx_backend.h). The generic TargetOptions
// (backend/backend.h) carries them as `cuda`.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <vector>

namespace sinter::codegen {

struct CudaOptions {
  /// SASS for each of these, and PTX (for the oldest) for JIT on newer GPUs. sm_80 SASS runs on
  /// sm_86 and sm_89 too; sm_90 gets its own for wgmma (docs/architectures.md).
  std::vector<std::string> archs = {"sm_80", "sm_90"};
  /// "cuda-c" (CUDA C, NVRTC, ptxas) or "llvm" (LLVM NVPTX, ptxas), with fallback to cuda-c
  /// for groups the NVPTX route cannot lower.
  std::string gpuCodegen = "cuda-c";
  /// On sm_80 and newer: how float32 contractions whose operands are not exact 16-bit
  /// values run. Tf32x3 (the default) splits each operand into a tf32 value and a tf32
  /// remainder and sums three tensor-core products, which keeps fp32's accuracy; Tf32
  /// (--precision tf32) rounds the operands to tf32 for one product; Simt keeps the f32 FMA
  /// kernel (--fp32-contractions simt). docs/precision.md has the measurements.
  enum class Fp32Contractions { Tf32x3, Tf32, Simt };
  Fp32Contractions fp32Contractions = Fp32Contractions::Tf32x3;
  /// Tensor-core contractions: when set, every one of them uses this block tile (rows,
  /// columns; one of the generator's tiles) instead of the one it would choose
  /// (--tensor-core-tile, for tuning and ablations); with a wgmma tile (128x128, 128x64) and
  /// warpgroupMma, their wgmma body.
  std::optional<std::array<int, 2>> tensorCoreTile;
  /// With sm_90 among the architectures: 16-bit contractions with a 128x128 tile get a
  /// warpgroup-MMA (wgmma) body in their sm_90 code, which is then built for sm_90a
  /// (--wgmma on|off; docs/performance.md).
  bool warpgroupMma = true;
  /// Tensor-core contractions: the epilogue walks the tile by rows through shared memory
  /// (coalesced stores and reads; the default), or each thread evaluates its own accumulator
  /// fragments (--tensor-core-epilogue rows|fragments, for ablations; docs/performance.md).
  bool rowWalkEpilogue = true;
  /// wgmma contractions with a reduction of more than 16 slices whose tiles leave at most
  /// half a round of blocks over take whole rounds of tiles, then split the leftover tiles into
  /// parts of their reductions, a block a part (stream-K; --stream-k auto|off;
  /// cuda_mma_choice.cpp decides; docs/performance.md). A stream-K kernel counts its leftover
  /// tiles' arrivals in counters of its CUDA module, so the runtime gives each session its own
  /// copy of such a module (runtime/cuda_device.h); while modules were shared per device,
  /// concurrent sessions raced on the counters (H200: 4 of 80 runs wrong from 4 threads).
  bool streamK = true;
  /// Depthwise and grouped convolutions and pooling whose input is read directly run as
  /// cuda_window.h's kernel (bands of planes staged in shared memory, a thread a run of outputs),
  /// not as the generic kernel or a GEMM (--depthwise-kernel direct|generic, for ablations;
  /// docs/performance.md).
  bool directDepthwise = true;
};

} // namespace sinter::codegen
