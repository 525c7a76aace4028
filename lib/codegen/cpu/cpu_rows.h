// Elementwise kernels whose index arithmetic divides the flat parallel index (a channel shuffle's
// reshape-transpose-slice chain, a gate broadcast over a plane, a concatenation's choice of
// input) cost a division or two per element and keep LLVM's loop vectorizer off their loop. On
// the CPU such a kernel runs in rows: gid = row * L + column, the parallel index over rows and a
// loop over the L columns of each, and every index that is, along a row, constant or one more per
// column is computed once per row (base(row) + column). Which indices are so is checked by
// evaluating them at every point of the parallel index, so the split kernel computes exactly what
// the flat one did.
#pragma once

#include "sinter/codegen/kernel/kernel_ir.h"

#include <optional>

namespace sinter::codegen::llvmgen {

/// `kernel` run in rows, when that takes every division by a constant out of the per-column
/// work: the same buffers, parallelExtent rows of L points, its body a loop over the columns.
/// nullopt for a kernel with loops, without divisions of gid, or too large to check.
std::optional<Kernel> splitIntoRows(const Kernel &kernel);

} // namespace sinter::codegen::llvmgen
