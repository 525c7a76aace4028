// Tiled CUDA C kernels for contractions (contraction.h): a block computes a BM x BN tile of one
// batch's output, staging BK-deep slices of lhs and rhs in shared memory; each thread keeps a
// TM x TN block of accumulators in registers. Operands are read through the contraction's own
// expressions, so a convolution gathers its input window straight into shared memory.
#pragma once

#include "sinter/codegen/backend.h"
#include "sinter/codegen/contraction.h"

#include <string>

namespace sinter::codegen::cuda {

struct TileShape {
  int bm, bn, bk; ///< block tile: rows, columns, reduction depth per stage
  int tm, tn;     ///< accumulators per thread
  /// Reduction slices: the block's threads form this many groups, each summing every
  /// slices-th BK stage of the reduction into its own accumulators; the groups' sums are added
  /// in shared memory at the end (in a fixed order, so results do not vary between runs).
  int slices = 1;
  int sliceThreads() const { return (bm / tm) * (bn / tn); }
  int threads() const { return sliceThreads() * slices; }
};

/// The largest tile that still gives enough warps to hide latency on a large GPU; when even the
/// smallest leaves SMs idle, the smallest with the reduction split across more threads.
/// Whether to tile at all is worthTiling's call.
TileShape chooseTile(const ContractionSpec &spec);

/// Whether the launch fits the grid limits (batch in grid.z, row tiles in grid.y).
bool fitsGrid(const ContractionSpec &spec, const TileShape &tile);

/// The kernel's CUDA C and its launch shape.
std::string printTiledContraction(const Contraction &contraction, const TileShape &tile,
                                  LaunchShape &launch);

} // namespace sinter::codegen::cuda
