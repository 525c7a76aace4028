#include "cuda_kernel_choice.h"

#include "cuda_attention.h"

#include <algorithm>

namespace sinter::codegen::cuda {

KernelChoice chooseKernel(const LoweredGroup &group, const CudaOptions &options,
                          const std::vector<int> &archs) {
  KernelChoice choice;
  const bool mmaSync = archs.front() >= 80; // sorted: the oldest decides
  if (group.attention)
    if (std::optional<DType> operands = fusedAttentionOperands(group.attention->spec)) {
      choice.form = KernelForm::FusedAttention;
      choice.attentionOperands = *operands;
      return choice;
    }
  const std::optional<Contraction> &contraction = group.contraction;
  if ((contraction || group.pooling) && options.directDepthwise)
    if ((choice.window = planWindowKernel(group))) {
      choice.form = KernelForm::Window;
      return choice;
    }
  if (!contraction || !worthTiling(contraction->spec))
    return choice;
  const ContractionSpec &spec = contraction->spec;
  TileShape tile = chooseTile(spec);
  std::optional<MmaOperands> operands;
  if (mmaSync)
    operands = mmaOperands(spec, options.fp32Contractions);
  std::optional<MmaTile> mmaTile;
  bool wgmma = false;
  const bool hasSm90 = std::find(archs.begin(), archs.end(), 90) != archs.end();
  if (operands && hasSm90 && options.warpgroupMma)
    if ((mmaTile = wgmmaBlockTile(spec, *operands, options.tensorCoreTile)))
      wgmma = true;
  if (operands && !mmaTile)
    mmaTile = chooseMmaTile(spec, *operands, options.tensorCoreTile);
  if (mmaTile && fitsGrid(spec, mmaTile->bm, mmaTile->bn)) {
    choice.form = KernelForm::TensorCore;
    choice.operands = *operands;
    choice.mmaTile = *mmaTile;
    choice.mmaOptions.warpgroupMma = wgmma;
    choice.mmaOptions.rowWalkEpilogue = options.rowWalkEpilogue;
    if (wgmma && options.streamK)
      choice.mmaOptions.streamKBlocks = streamKBlocks(spec, *mmaTile).value_or(0);
  } else if (fitsGrid(spec, tile.bm, tile.bn)) {
    choice.form = KernelForm::Tiled;
    choice.tile = tile;
  }
  return choice;
}

std::string generatorName(const KernelChoice &choice) {
  switch (choice.form) {
  case KernelForm::FusedAttention:
    return std::string("cuda-c fused-attention ") + (choice.attentionOperands == DType::BFloat16 ? "bf16" : "f16");
  case KernelForm::TensorCore:
    return std::string("cuda-c tensor-core ") + mmaOperandsName(choice.operands) +
           (choice.mmaOptions.warpgroupMma ? " wgmma" : "") + (choice.mmaOptions.streamKBlocks ? " stream-k" : "");
  case KernelForm::Tiled: return "cuda-c tiled";
  case KernelForm::Window: {
    const DepthwiseWindow &window = choice.window->window;
    if (choice.window->combine != WindowPlan::Combine::MultiplyAdd)
      return "cuda-c pooling-window";
    return window.channelsPerGroup == 1 && window.outputsPerGroup == 1 ? "cuda-c depthwise" : "cuda-c grouped-window";
  }
  case KernelForm::Generic: break;
  }
  return "cuda-c";
}

} // namespace sinter::codegen::cuda
