// Elementwise kernels whose index arithmetic divides the flat parallel index (a channel shuffle's
// reshape-transpose-slice chain, a gate broadcast over a plane, a concatenation's choice of
// input) cost a division or two per element and keep LLVM's loop vectorizer off their loop. On
// the CPU such a kernel runs in rows: gid = row * L + column, the parallel index over rows and a
// loop over the L columns of each, and every index that is, along a row, constant or one more per
// column is computed once per row (base(row) + column). Which indices are so is checked by
// proving it from the expression's structure (row_forms.h) or else evaluating them at every point
// of the parallel index, so the split kernel computes exactly what the flat one did.
#pragma once

#include "sinter/codegen/kernel/kernel_ir.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace sinter::codegen::llvmgen {

struct RowKernel {
  /// parallelExtent rows of L points, its body a loop over the columns; its buffers the flat
  /// kernel's, then one per column table.
  Kernel kernel;
  /// The column tables' contents, in the order of their buffers: the launch's derived constants.
  std::vector<std::vector<uint8_t>> columnTables;
};

/// `kernel` run in rows, when that takes every division by a constant out of the per-column
/// work; what is computed from the column alone at more than a load's cost (a resize's source
/// column and weight) is read from a table of L values made now. nullopt for a kernel with
/// loops, without divisions of gid, or whose divisions could not be taken out.
std::optional<RowKernel> splitIntoRows(const Kernel &kernel);

} // namespace sinter::codegen::llvmgen
