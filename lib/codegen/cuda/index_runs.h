// How an index expression moves along one variable over runs of a few consecutive values: what
// decides whether a run of elements can be copied as one 16-byte vector (tensor-core operand
// staging, the warp-per-row kernels' row loads and stores).
#pragma once

#include "sinter/codegen/kernel_ir.h"

namespace sinter::codegen::cuda {

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

} // namespace sinter::codegen::cuda
