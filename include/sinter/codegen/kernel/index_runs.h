// How an index expression moves along one variable over runs of a few consecutive values: what
// decides whether a run of elements can be copied as one 16-byte vector (tensor-core operand
// staging, the warp-per-row kernels' row loads and stores) or gathered at a fixed stride.
// Target-neutral analyses of kernel IR; the CUDA printers are their users today.
#pragma once

#include "sinter/codegen/kernel/kernel_ir.h"

#include <cstdint>
#include <optional>

namespace sinter::codegen {

/// How an integer expression moves over a run: `variable` taking the values v0 .. v0 + run - 1
/// for a v0 that is a multiple of `run`, every other variable fixed.
enum class RunForm {
  Fixed,   ///< the same value all along the run
  Unit,    ///< e(v0 + s) = e(v0) + s, and e(v0) is a multiple of the run
  Unknown, ///< anything else (as far as these rules can tell)
};

/// The rules: sums of a unit term and a fixed multiple of the run stay unit; a unit term
/// divided by a multiple of the run is fixed over the run (the run starts at a multiple of
/// the run, so it does not cross a multiple of the divisor), and its remainder stays unit. They
/// see through the div/rem chains of a flattened transpose: attention's head merge reads
/// [batch, head, position, dim] as rows of head x dim, whose runs of dim are contiguous.
/// Index values are non-negative, as every buffer index is.
RunForm runForm(const ExprRef &e, int variable, int run);

/// The constant by which an integer expression grows per step of `variable`, when it is linear in
/// it (sums, differences and products by constants of the variable and of terms without it);
/// nullopt otherwise (a remainder, a division, a product of two variables).
std::optional<int64_t> linearStride(const ExprRef &e, int variable);

/// The constant by which an expression moves per step of `variable` over a run of `run` steps
/// that starts at a multiple of the run (0: fixed over the run); nullopt when it is not affine
/// over such runs as far as these rules can tell. Beyond linearStride, a division or remainder
/// is what runForm says of it (fixed, or unit), and any other operation of fixed operands is
/// fixed: a convolution's window position (r / C) % 3 and its padding test are fixed over a run
/// of channels when C is a multiple of the run, and the input's index moves by H * W a step.
std::optional<int64_t> runStride(const ExprRef &e, int variable, int run);

/// A scalar operand that reads one element per step, `select(test, value, 0)` or `value` where
/// value is a load or its widening to f32, whose index moves by a constant stride over each run
/// of `run` steps of `variable` and whose test is fixed over the run: a convolution's window
/// gather, where a run is `run` input channels at one window position (H * W elements apart in
/// NCHW). The run's test and address can be evaluated once, and its elements loaded at fixed
/// offsets from that address, instead of the whole expression per element.
struct StridedGather {
  ExprRef test;          ///< zero the run where false; null when the load is unconditional
  const Expr *load;      ///< the load
  int64_t stride;        ///< elements between consecutive steps' elements
};

/// The strided gather behind `value`, whose loads are of `stored` (16-bit patterns, or f32) or
/// f32; nullopt when it is not one.
std::optional<StridedGather> stridedGather(const ExprRef &value, DType stored, int variable, int run);

} // namespace sinter::codegen
