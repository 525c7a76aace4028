// Tiled CUDA C kernels for contractions (contraction.h): a block computes a BM x BN tile of one
// batch's output, staging BK-deep slices of lhs and rhs in shared memory; each thread keeps a
// TM x TN block of accumulators in registers. Operands are read through the contraction's own
// expressions, so a convolution gathers its input window straight into shared memory.
// On sm_80 and newer a tensor-core variant (cuda_mma_contraction.cpp) multiplies them with
// warp-level mma.sync instead: 16-bit operands exactly, f32 operands as tf32 pairs; on sm_90a
// 16-bit operands also with warpgroup MMA (wgmma). cuda_mma_choice.cpp decides which operand
// form and block tile a contraction gets, and whether a wgmma kernel takes a stream-K schedule
// (cuda_tile_schedule.h).
#pragma once

#include "sinter/codegen/backend/backend.h"
#include "sinter/codegen/lowering/contraction.h"
#include "sinter/codegen/kernel/index_ranges.h"

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

/// The largest tile that still gives enough warps to hide latency on a large GPU; when even the
/// smallest leaves SMs idle, the smallest with the reduction split across more threads.
/// Whether to tile at all is worthTiling's call.
TileShape chooseTile(const ContractionSpec &spec);

/// Whether a launch of bm x bn output tiles fits the grid limits (column tiles in grid.x, row
/// tiles in grid.y, batch in grid.z).
bool fitsGrid(const ContractionSpec &spec, int bm, int bn);

/// That launch: one block of `threads` per bm x bn tile of each batch.
void setTiledLaunch(const ContractionSpec &spec, int bm, int bn, int threads, LaunchShape &launch);

/// The epilogue for one output element whose accumulator is the C expression `accumulator` (i
/// and j are set), at an indentation depth. With `testBounds` it runs only when the element is
/// inside the output; a caller that knows it is passes false: with no branch around each
/// element, the compiler may issue the epilogue's loads (a residual, a bias) of many elements
/// before their stores instead of one round trip at a time.
std::string printEpilogue(CudaPrinter &printer, const ContractionSpec &spec, const std::string &accumulator,
                          int depth, bool testBounds = true);

/// The kernel's CUDA C and its launch shape.
std::string printTiledContraction(const Contraction &contraction, const TileShape &tile,
                                  LaunchShape &launch);

/// The load behind an operand `value` that is copied as it is stored: `cast<f32>(load)` of the
/// 16-bit type `stored` (or a float32 load when `stored` is f32) whose runs of `run` elements
/// along `variable` (whose extent is `extent`) are contiguous and start at multiples of the run;
/// null otherwise. Such runs are copied 16 bytes at a time.
const Expr *runLoad(const ExprRef &value, DType stored, int run, int variable, int64_t extent);

/// The C expression of a 32-bit word holding two floats rounded by `toHalf` (sn_f2h or sn_f2bf),
/// `low` in the low half: two adjacent 16-bit operand elements, or an A fragment's register.
std::string packedHalves(const char *toHalf, const std::string &low, const std::string &high);

/// What the tensor cores multiply in a float32 contraction.
enum class MmaOperands {
  Float16,  ///< operands exact in f16 (widened f16 values, or zero): m16n8k16, exact products
  BFloat16, ///< likewise bf16
  Tf32x3,   ///< f32 operands, each a tf32 value plus a tf32 remainder: three m16n8k8 products
            ///< (small·big, big·small, big·big) carry about 22 significant bits, fp32's accuracy
  Tf32,     ///< f32 operands rounded to tf32 (10-bit significands): one product
};

/// The tensor-core tile: a block of warpsM x warpsN warps covers bm x bn outputs, each warp
/// (bm / warpsM) x (bn / warpsN) of them as 16x8 mma tiles; bk reduction steps per stage.
struct MmaTile {
  int bm, bn, bk;
  int warpsM, warpsN;
  int threads() const { return 32 * warpsM * warpsN; }
};

/// How an f32 contraction's operands go to the tensor cores: as 16-bit values when both are
/// exact in f16 or bf16, else as tf32 (split or rounded, as `fp32` says); nullopt for the f32
/// SIMT kernel (fp32 is Simt, or the reduction is shorter than one mma step).
std::optional<MmaOperands> mmaOperands(const ContractionSpec &spec, CudaOptions::Fp32Contractions fp32);

/// The tile the model of cuda_mma_choice.cpp expects to finish first (rounds of blocks on the
/// SMs at each tile's measured rate), among those that give every SM a block; for 16-bit
/// operands the smallest when it gives at least half of them one; nullopt when even that leaves
/// SMs idle (the f32 tiled kernel, which splits the reduction within its blocks, does better).
/// `forced` (rows, columns) names the tile to use instead; a size no tile has is a user error.
std::optional<MmaTile> chooseMmaTile(const ContractionSpec &spec, MmaOperands operands,
                                     const std::optional<std::array<int, 2>> &forced = std::nullopt);

/// The constant by which an operand's index moves from one slice of `bk` reduction steps to the
/// next, the slice's steps r = t * bk + s (0 <= s < bk, 0 <= t < slices) at every s alike;
/// nullopt when it does not (as far as linearStride tells once `ranges` has simplified the
/// split). Beyond an index linear in r, this takes a head merge read through its transposes:
/// ViT-B/16's attention output projection reads k = head * 64 + channel, which moves by a head's
/// stride from one slice of 64 to the next. The split's two variables take ids past the
/// kernel's; `ranges` keeps their ranges. The tensor-core kernels walk such operands' copies.
std::optional<int64_t> sliceStride(const ExprRef &index, int r, int bk, int64_t slices, const Kernel &kernel,
                                   IndexRanges &ranges);

/// How printMmaContraction builds a tensor-core kernel (TargetOptions' tensor-core switches).
struct MmaKernelOptions {
  /// A second body for sm_90a on warpgroup MMA (wgmma), chosen at compile time by
  /// __CUDA_ARCH_FEAT_SM90_ALL: the module's sm_90 code must then be built for sm_90a.
  bool warpgroupMma = false;
  /// The epilogue walks the tile by rows through shared memory (or each thread its fragments).
  bool rowWalkEpilogue = true;
  /// With warpgroupMma: 0 for a block per tile; otherwise a launch of this many blocks that take
  /// whole tiles, then parts of the tiles left over (stream-K; streamKBlocks decides).
  int64_t streamKBlocks = 0;
};

/// The arena bytes a tensor-core kernel needs for its own step: a stream-K launch's partial
/// sums, an f32 tile for each piece; 0 for a block per tile. The backend declares them before
/// memory planning (Backend::needs), from the same choice the printer takes.
uint64_t mmaWorkspaceBytes(const ContractionSpec &spec, const MmaTile &tile, MmaOperands operands,
                           const MmaKernelOptions &options);

/// The tensor-core kernel's CUDA C (mma.sync needs sm_80 or newer) and its launch shape.
std::string printMmaContraction(const Contraction &contraction, const MmaTile &tile, MmaOperands operands,
                                LaunchShape &launch, const MmaKernelOptions &options = {});

/// The block tile of a contraction with a wgmma body: 128x128 or 128x64 (its mma.sync form for
/// other architectures), for 16-bit operands on a grid that gives every SM a block, by the rounds
/// model of chooseMmaTile; nullopt otherwise. `forced` (--tensor-core-tile) names the tile to
/// use: a wgmma tile, or nullopt for the mma.sync kernel's choice.
std::optional<MmaTile> wgmmaBlockTile(const ContractionSpec &spec, MmaOperands operands,
                                      const std::optional<std::array<int, 2>> &forced = std::nullopt);

/// The blocks an SM of a wgmma tile's kernel (its launch bounds).
int wgmmaBlocksPerSm(const MmaTile &tile);

/// The blocks of a stream-K launch of a wgmma kernel with `tile` (its blocks an SM on 132 SMs): whole
/// rounds of tiles, then the tiles left over split into equal parts of their reductions, one
/// block a part (a grid short of one round: a block a piece, at most eight parts a tile). Nullopt
/// when the tiles fill whole rounds, or leave more than half a round over (a part per tile would
/// be the whole tile), or the reduction is 16 slices or fewer (eight or fewer for a grid of at
/// most 16 tiles).
std::optional<int64_t> streamKBlocks(const ContractionSpec &spec, const MmaTile &tile);

/// A short name for the generator column of `inspect --plan`: "f16", "bf16", "tf32x3", "tf32".
const char *mmaOperandsName(MmaOperands operands);

} // namespace sinter::codegen::cuda
