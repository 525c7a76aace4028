// The fused attention kernel (attention.h) in CUDA C: flash-style, on warp-level mma.sync.
#pragma once

#include "sinter/codegen/lowering/attention.h"
#include "sinter/codegen/backend/backend.h"

#include <optional>
#include <string>

namespace sinter::codegen::cuda {

/// The 16-bit type Q, K and V all hold exactly (widened f16 or bf16 loads), when the kernel
/// takes the shapes (head sizes multiples of 16, at most 128); nullopt otherwise.
std::optional<DType> fusedAttentionOperands(const AttentionSpec &spec);

/// The kernel's CUDA C and its launch shape; `operands` is fusedAttentionOperands' answer.
std::string printFusedAttention(const FusedAttention &attention, DType operands, LaunchShape &launch);

} // namespace sinter::codegen::cuda
