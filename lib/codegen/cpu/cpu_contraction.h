// Blocked, packed, vectorised MatMul, Gemm and Conv for the CPU backend, built from the
// contraction description (contraction.h) as LLVM IR.
//
// The scheme is the GotoBLAS/BLIS one. The output of each batch is cut into MC x NC tiles; a tile
// is one point of the kernel's parallel index, so the runtime's thread pool spreads tiles over
// its threads. Within a tile, the reduction runs in KC-long blocks: for each, both operands are in
// packed panels (lhs: MR rows interleaved per r; rhs: NR columns interleaved per r) and a
// register-blocked micro-kernel accumulates MR x NR outputs in vector registers (SSE 4-wide for
// x86-64-v2, AVX2 8-wide for v3, AVX-512 16-wide for v4) into a tile buffer. After the last
// block the contraction's epilogue (bias, alpha and beta, the output's index) stores the tile.
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

namespace sinter::codegen::llvmgen {

/// The register block of the micro-kernel: `rows` x (`vectors` * `width`) accumulators.
struct MicroKernelShape {
  int64_t width = 4;   ///< f32 lanes of a vector register
  int64_t rows = 6;    ///< MR
  int64_t vectors = 2; ///< NR / width
  int64_t columns() const { return width * vectors; }
};

/// The micro-kernel shape for a --cpu level ("x86-64-v2", "x86-64-v3", "x86-64-v4", "native").
MicroKernelShape microKernelShapeFor(const std::string &cpuLevel);

/// The cache blocking of one contraction.
struct ContractionBlocking {
  MicroKernelShape micro;
  int64_t mc = 0, nc = 0, kc = 0;            ///< mc % MR == 0, nc % NR == 0
  int64_t mBlocks = 0, nBlocks = 0, tiles = 0; ///< tiles = batch * mBlocks * nBlocks
};

ContractionBlocking chooseBlocking(const ContractionSpec &spec, const MicroKernelShape &micro);

/// When `group`'s contraction is f32 and worth tiling, adds its blocked kernel to `module` (entry
/// point `void NAME(void *const *args, int64_t begin, int64_t end)` over tiles), fills `launch`
/// (parallel extent, derived constants) and returns the described kernel (buffers, flops) for
/// the manifest. nullopt otherwise: the caller builds the naive kernel. `hasF16c`: the target
/// converts f16 <-> f32 in hardware (packing 16-bit operands then costs one instruction each).
std::optional<Kernel> addBlockedContraction(const LoweredGroup &group, const std::string &cpuLevel,
                                            llvm::Module &module, LaunchShape &launch,
                                            bool hasF16c = false);

} // namespace sinter::codegen::llvmgen
