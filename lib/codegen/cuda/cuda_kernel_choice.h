// Which kernel the CUDA C backend prints for a lowered group, decided before any printing (as
// Triton's AccelerateMatmul decides before DotOpToLLVM prints). In order of preference:
//   1. fused attention (cuda_attention.cpp): an attention description with 16-bit operands;
//      described only when the oldest architecture is sm_80 or newer (mma.sync);
//   2. the window kernel (cuda_window.cpp): a depthwise or grouped convolution (a few channels a
//      group) or a pooling reading its input directly, whose band of rows fits the kernel's
//      shared memory (unless --depthwise-kernel generic);
//   3. tensor cores (cuda_mma_contraction.cpp): a contraction worth tiling whose operands the
//      tensor cores take (mmaOperands; sm_80 and newer), with a wgmma body when sm_90 is among
//      the architectures and a wgmma tile fits (wgmmaBlockTile), else mma.sync's tile
//      (chooseMmaTile), when that tile's grid fits the launch limits;
//   4. the tiled f32 kernel (cuda_contraction.cpp): a contraction worth tiling whose tile's grid
//      fits;
//   5. the generic kernel: the group's kernel IR printed as it is (cuda_source.cpp).
#pragma once

#include "cuda_contraction.h"
#include "cuda_window.h"

#include "sinter/codegen/backend/backend.h"

#include <string>

namespace sinter::codegen::cuda {

enum class KernelForm { FusedAttention, Window, TensorCore, Tiled, Generic };

struct KernelChoice {
  KernelForm form = KernelForm::Generic;
  DType attentionOperands = DType::Float16; ///< FusedAttention: f16 or bf16
  MmaOperands operands = MmaOperands::Float16; ///< TensorCore
  MmaTile mmaTile{};                        ///< TensorCore
  MmaKernelOptions mmaOptions;              ///< TensorCore: wgmma body, epilogue, stream-K
  TileShape tile{};                         ///< Tiled
  std::optional<WindowPlan> window;         ///< Window
};

/// The choice for `group` on `archs` (sorted, oldest first; each a number: 80 for sm_80).
KernelChoice chooseKernel(const LoweredGroup &group, const CudaOptions &options,
                          const std::vector<int> &archs);

/// The generator the manifest names for a choice: "cuda-c", "cuda-c tiled",
/// "cuda-c tensor-core f16 wgmma stream-k", "cuda-c fused-attention bf16", ...
std::string generatorName(const KernelChoice &choice);

} // namespace sinter::codegen::cuda
