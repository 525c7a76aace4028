// Tiled CUDA C kernels for contractions (contraction.h): a block computes a BM x BN tile of one
// batch's output, staging BK-deep slices of lhs and rhs in shared memory; each thread keeps a
// TM x TN block of accumulators in registers. Operands are read through the contraction's own
// expressions, so a convolution gathers its input window straight into shared memory.
// When both operands come from 16-bit storage, a tensor-core variant (cuda_mma_contraction.cpp)
// multiplies them with warp-level mma.sync instead.
#pragma once

#include "sinter/codegen/backend.h"
#include "sinter/codegen/contraction.h"
#include "sinter/codegen/index_ranges.h"

#include <optional>
#include <string>

namespace sinter::codegen::cuda {

class CudaPrinter;

inline int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

struct TileShape {
  int bm, bn, bk; ///< block tile: rows, columns, reduction depth per stage
  int tm, tn;     ///< accumulators per thread, multiples of 4 (read as 4-wide groups)
  /// Reduction slices: the block's threads form this many groups, each summing every
  /// slices-th BK stage of the reduction into its own accumulators; the groups' sums are added
  /// in shared memory at the end (in a fixed order, so results do not vary between runs).
  int slices = 1;
  int sliceThreads() const { return (bm / tm) * (bn / tn); }
  int threads() const { return sliceThreads() * slices; }
};

/// Tells `ranges` the extents of the contraction's b, i, j and r: the tiled kernels evaluate
/// lhs, rhs and the epilogue only inside them, so index arithmetic that fits may print in int.
void setContractionRanges(IndexRanges &ranges, const ContractionSpec &spec);

/// The largest tile that still gives enough warps to hide latency on a large GPU; when even the
/// smallest leaves SMs idle, the smallest with the reduction split across more threads.
/// Whether to tile at all is worthTiling's call.
TileShape chooseTile(const ContractionSpec &spec);

/// Whether a launch of bm x bn output tiles fits the grid limits (column tiles in grid.x, row
/// tiles in grid.y, batch in grid.z).
bool fitsGrid(const ContractionSpec &spec, int bm, int bn);

/// That launch: one block of `threads` per bm x bn tile of each batch.
void setTiledLaunch(const ContractionSpec &spec, int bm, int bn, int threads, LaunchShape &launch);

/// The epilogue for one output element whose accumulator is the C expression `accumulator`,
/// guarded by the element being inside the output (i and j are set), at an indentation depth.
std::string guardedEpilogue(CudaPrinter &printer, const ContractionSpec &spec,
                            const std::string &accumulator, int depth);

/// The kernel's CUDA C and its launch shape.
std::string printTiledContraction(const Contraction &contraction, const TileShape &tile,
                                  LaunchShape &launch);

/// The tensor-core tile: a block of warpsM x warpsN warps covers bm x bn outputs, each warp
/// (bm / warpsM) x (bn / warpsN) of them as 16x8 mma tiles; bk reduction steps per stage.
struct MmaTile {
  int bm, bn, bk;
  int warpsM, warpsN;
  int threads() const { return 32 * warpsM * warpsN; }
};

/// The 16-bit type (f16 or bf16) in which both operands of an f32 contraction are exact (each
/// is a widened 16-bit value or zero), so tensor cores can multiply them with f32 sums; nullopt
/// when they are not, or the reduction is shorter than one mma step.
std::optional<DType> mmaOperandType(const ContractionSpec &spec);

/// The largest tile that still gives every SM a block; the smallest when it gives at least half
/// of them one; nullopt when even that leaves most SMs idle (the f32 tiled kernel, which splits
/// the reduction within its blocks, does better there).
std::optional<MmaTile> chooseMmaTile(const ContractionSpec &spec);

/// The tensor-core kernel's CUDA C (mma.sync needs sm_80 or newer) and its launch shape.
std::string printMmaContraction(const Contraction &contraction, const MmaTile &tile, DType half,
                                LaunchShape &launch);

} // namespace sinter::codegen::cuda
