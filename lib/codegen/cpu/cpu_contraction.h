// Blocked, packed, vectorised MatMul, Gemm and Conv for the CPU backend, built from the
// contraction description (contraction.h) as LLVM IR.
//
// The scheme is the GotoBLAS/BLIS one. The output of each batch is cut into MC x NC tiles; a tile
// is one point of the kernel's parallel index, so the runtime's thread pool spreads tiles over
// its threads. Within a tile, the reduction runs in KC-long blocks: for each, both operands are in
// packed panels (lhs: MR rows interleaved per r; rhs: NR columns interleaved per r) and a
// register-blocked micro-kernel accumulates a slice of MR x NR outputs in vector registers
// (SSE 4-wide for x86-64-v2, AVX2 8-wide for v3, AVX-512 16-wide for v4) into a tile buffer.
// The panels and blocks are the same at every level (PanelShape), so one plan and its packed
// constants serve an artifact's kernels for several levels. After the last block the
// contraction's epilogue (bias, alpha and beta, the output's index) stores the tile.
//
// An operand that reads only constant inputs (a convolution's weights, a MatMul whose B is an
// initializer) is packed at compile time, for the whole matrix, by evaluating its expression on
// the constants' data; the result goes to the weights as a derived constant
// (LaunchShape::derivedConstants) and replaces the original there (LaunchShape::replacedInputs),
// so weights are stored once. The other operand is packed at run time, block by block, into
// scratch on the calling thread's stack, reading through its expression: that is where a
// convolution gathers its input window (im2col, one panel at a time). A convolution's window
// (ContractionSpec::window) is read through two small tables, also a derived constant: per r
// the channel offset and the window's displacement, per output position the window's origin;
// their size is k + positions entries (times the rank), whatever the batch.
#pragma once

#include "sinter/codegen/backend/backend.h"
#include "sinter/codegen/lowering/contraction.h"

#include <llvm/IR/Module.h>

#include <optional>
#include <string>
#include <vector>

namespace sinter::codegen::llvmgen {

/// The panels an operand packed at compile time is stored in (lhs: `rows` rows interleaved per
/// r; rhs: `columns` columns), chosen from the contraction alone. Every x86-64 level reads the
/// same panels, so the packed constants and the launch shape serve all of an artifact's levels;
/// a level whose micro-kernel is narrower walks a panel in slices. Operands packed at run time
/// use the level's own panels (its micro-kernel's rows or columns).
struct PanelShape {
  int64_t rows = 6;     ///< MR
  int64_t columns = 32; ///< NR
};

PanelShape choosePanels(const ContractionSpec &spec);

/// One level's register block: `rows` x (`vectors` * `width`) accumulators, all of a panel's
/// rows and a slice of its columns (columns() divides the panel's), which the tile loop calls
/// once per slice that holds a real column.
struct MicroKernelShape {
  int64_t width = 4;   ///< f32 lanes of a vector register
  int64_t rows = 6;
  int64_t vectors = 2;
  int64_t columns() const { return width * vectors; }
};

/// The micro-kernel of a resolved x86-64 level ("x86-64-v2", "x86-64-v3", "x86-64-v4") over
/// `panels`: as wide as the level's vectors allow, as many rows as its registers hold.
MicroKernelShape microKernelFor(const std::string &cpuLevel, const PanelShape &panels);

/// The cache blocking of one contraction.
struct ContractionBlocking {
  PanelShape panels;
  int64_t mc = 0, nc = 0, kc = 0;            ///< mc % MR == 0, nc % NR == 0
  int64_t mBlocks = 0, nBlocks = 0, tiles = 0; ///< tiles = batch * mBlocks * nBlocks
};

ContractionBlocking chooseBlocking(const ContractionSpec &spec, const PanelShape &panels);

/// A convolution's rhs read through its window tables (ContractionSpec::window): what the
/// kernel needs to know of the table, which is a derived constant.
struct WindowGather {
  int source = -1;                   ///< the buffer X
  DType sourceType = DType::Float32; ///< X's element type: f32, or f16/bf16 read into f32
  int64_t dims = 0, positionsAt = 0; ///< spatial rank; where the position rows start
  int64_t entries = 0;               ///< i32 entries of the table
  /// When positions run along output rows (row-major, `rowLength` to a row, base of the
  /// innermost dim `rowStep` apart within a row, the outer dims' bases equal): the packer copies
  /// rows (cpu_window_pack.h). 0: it packs element by element.
  int64_t rowLength = 0, rowStep = 0;
};

/// A pointwise convolution's rhs (a 1 x 1 window, stride 1, no padding) read in place: element
/// (r, j) of batch b is X[image * imageStride + b * groupStride + r * plane + position], with
/// image = j / positions, so a whole panel of columns is `plane`-strided rows of X that the
/// micro-kernel reads directly. Only the panels it cannot read so are packed (through the window
/// tables): a tile's last, partial one, and those across the end of an image. The transposed
/// product's lhs (BlockedContraction::transposed) is the same X, its rows the positions: a whole
/// row panel is MR contiguous floats of each channel's plane, also read in place.
struct DirectRhs {
  int source = -1;
  int64_t plane = 0, imageStride = 0, groupStride = 0, positions = 0;
};

/// A 2-D convolution's rhs read in place from padded input rows copied per tile, split into
/// phases by the strides (cpu_padded_window.h): the geometry of the copy and of the product's
/// columns on the padded pitch.
struct PaddedWindow {
  int source = -1;                       ///< the buffer X (f32)
  int64_t channels = 0;                  ///< X's channels the window reads (each at every tap)
  int64_t channelStride = 0, rowStride = 0; ///< elements of X between channels, rows
  int64_t height = 0, width = 0;         ///< X's spatial extents
  int64_t outputWidth = 0, positions = 0; ///< the output's row length and plane
  int64_t images = 1, imageStride = 0, groupStride = 0;
  int64_t strideY = 1, strideX = 1;      ///< the window's strides: the slab's row and column phases
  int64_t pitch = 0;                     ///< the padded row: columns per output row
  int64_t columns = 0;                   ///< product columns per image: (rows - 1) * pitch + outputWidth
  int64_t firstRow = 0, firstColumn = 0; ///< X's coordinates of slab (0, 0) for output row 0
  int64_t slabRows = 0;                  ///< rows of one phase of a channel's slab: what a tile reaches
  int64_t phaseFloats() const { return slabRows * pitch; }
  int64_t slabFloats() const { return strideY * strideX * phaseFloats(); } ///< one channel's slab
};

/// A blocked contraction as planned once for all levels: the blocking, which operands were
/// packed at compile time (derived constants of the launch, in this order: lhs, rhs, window).
struct BlockedContraction {
  ContractionBlocking blocking;
  bool lhsPacked = false, rhsPacked = false;
  bool lhsPerBatch = false, rhsPerBatch = false; ///< a packed copy per batch, not one for all
  std::optional<WindowGather> gather;
  std::optional<DirectRhs> directRhs; ///< with `gather`, for the tail panels
  /// Instead of `gather`: the rhs read from padded rows through a per-r offset table (the last
  /// derived constant), the blocking over the padded columns.
  std::optional<PaddedWindow> padded;
  /// A pointwise convolution computed as its transpose (transposedProduct): positions as rows
  /// (MR = 6 of them to a panel), output channels as columns, so a small plane wastes fewer of
  /// the micro-kernel's lanes (7x7: 49 positions are 54 rows, but 64 columns). The blocking and
  /// the packed rhs (the weights, transposed) are the transposed product's; its lhs is X, read
  /// in place (`directLhs`) but for the panels across an image's end or partial. Each tile is
  /// transposed back before the epilogue, which is the contraction's own.
  bool transposed = false;
  std::optional<DirectRhs> directLhs;
  size_t derivedCount() const {
    return size_t(lhsPacked) + size_t(rhsPacked) + size_t(gather.has_value() || padded.has_value());
  }
};

/// `contraction` transposed: m and n, i and j, lhs and rhs swapped (lhs'(b, i, r) = rhs(b, r, i),
/// rhs'(b, r, j) = lhs(b, j, r)), with no window (its rows are the window's positions); the
/// epilogue is the same statements, which read the swapped variables, so it stores the same
/// elements.
Contraction transposedProduct(const Contraction &contraction);

/// Whether every load of `expr` reads a constant input of the group (its data known now).
bool readsOnlyConstants(const ExprRef &expr, const LoweredGroup &group);

/// Marks every buffer that `expr` (or `statement`, with its nested statements) loads from.
void markLoads(const ExprRef &expr, std::vector<bool> &read);
void markLoads(const StmtRef &statement, std::vector<bool> &read);

/// An operand packed at compile time.
struct PackedOperand {
  std::vector<uint8_t> bytes;
  bool perBatch = true; ///< false: one copy serves every batch (weights broadcast over b)
};

/// The operand of `contraction` packed for the whole matrix at compile time, when it reads only
/// constants: batch x panels x k x width floats, panel p holding rows (lhs) or columns (rhs)
/// p * width ... + width - 1 interleaved per r, zero beyond the matrix. An operand that does not
/// depend on b is packed once. nullopt when the operand reads a run-time input.
std::optional<PackedOperand> packConstantOperand(const LoweredGroup &group, const Contraction &contraction,
                                                 bool lhs, int64_t width);

/// Per buffer of the contraction's kernel, whether a constant input is no longer read once the
/// operands marked packed read their compile-time packs: the packs read it and nothing else does
/// (the other operand, the epilogue, buffer `alsoRead` when >= 0). LaunchShape::replacedInputs.
std::vector<bool> inputsReplacedByPacks(const LoweredGroup &group, const Contraction &contraction, bool lhsPacked,
                                        bool rhsPacked, int alsoRead = -1);

/// When `group`'s contraction is f32 and worth tiling: chooses its blocking, packs its constant
/// operands and window tables into `launch` (derived constants, replaced inputs, the parallel
/// extent over tiles) and returns the plan every level's kernel is emitted from. nullopt
/// otherwise: the caller builds the naive kernel.
std::optional<BlockedContraction> planBlockedContraction(const LoweredGroup &group, LaunchShape &launch);

/// Adds `plan`'s kernel for `cpuLevel` to `module` (entry point `void NAME(void *const *args,
/// int64_t begin, int64_t end)` over tiles) and returns the described kernel (buffers, flops)
/// for the manifest. `hasF16c`: the target converts f16 <-> f32 in hardware (packing 16-bit
/// operands then costs one instruction each).
Kernel emitBlockedContraction(const LoweredGroup &group, const BlockedContraction &plan,
                              const std::string &cpuLevel, llvm::Module &module, bool hasF16c);

} // namespace sinter::codegen::llvmgen
