// Which tensor-core kernel a contraction gets: the form of its operands (16-bit values, or f32
// as tf32 pairs or tf32 roundings) and the block tile, from a model of the grid's rounds on the
// SMs and the tiles' measured rates. cuda_mma_contraction.cpp prints the kernel.
#include "cuda_contraction.h"
#include "cuda_tile_schedule.h"

#include "sinter/support/error.h"

#include <algorithm>
#include <string>

namespace sinter::codegen::cuda {

namespace {

/// Whether every value `e` can take is exactly a value of `half`: a widening of a `half` value,
/// or zero, or a choice between such.
bool exactIn(const ExprRef &e, DType half) {
  switch (e->kind) {
  case ExprKind::Cast: return e->operands[0]->type == half;
  case ExprKind::Constant: return isFloat(e->type) && e->floatValue == 0.0;
  case ExprKind::Select: return exactIn(e->operands[1], half) && exactIn(e->operands[2], half);
  default: return false;
  }
}

bool sixteenBit(MmaOperands operands) {
  return operands == MmaOperands::Float16 || operands == MmaOperands::BFloat16;
}

/// A tile and its rates: outputs per unit time of an SM busy with such blocks, relative to the
/// 128x128 tile's, for 16-bit and for tf32 operands; 0 where the tile is not used. Measured on
/// an H200 (bench/gpu_contraction_rate.py with --precisions fp32@ROWSxCOLUMNS ...: the median,
/// over the GEMM, batched-GEMM and convolution shapes of ViT-B/16, BERT-base and ResNet-50 at
/// batch 32, of each tile's outputs per second counted as chooseMmaTile counts them, over the
/// 128x128 tile's; docs/performance.md). The tf32 128x128 tile takes 185 registers a thread,
/// one block per SM, while several 4-warp blocks share one, which is why those are close for
/// tf32. The 4-warp tiles with a 64-row warp tile gather a convolution's window with fewer
/// threads per row: 128x64 was 2.6x slower than 96x128 for 16-bit operands on ResNet-50's 1x1
/// reduce (0.233 against 0.090 ms), and 64x128 took 0.485 ms on ResNet-50's b32 layer2 3x3
/// convolutions at tf32 where 128x128 took 0.358; the choice leaves 64x128 out (rate 0: only
/// --tensor-core-tile uses it), and 128x64 for 16-bit operands.
struct TileRate {
  MmaTile tile;
  double rate16, rateTf32;
};

constexpr TileRate kMmaTiles[] = {
    {{128, 128, 32, 2, 4}, 1.0, 1.0},  // 8 warps, each 64x32: 4x4 mma tiles
    {{96, 128, 32, 2, 4}, 1.06, 0.84}, // 8 warps, each 48x32: 3x4
    {{128, 64, 32, 2, 2}, 0, 0.79},    // 4 warps, each 64x32
    {{64, 128, 32, 1, 4}, 0, 0},       // 4 warps, each 64x32 (measured 0.96 for tf32 GEMMs)
    {{64, 64, 32, 2, 2}, 0.8, 0.91},   // 4 warps, each 32x32: 2x4
    {{32, 64, 32, 1, 2}, 0.65, 0.6},   // 2 warps, each 32x32
};

/// A block per SM at least: the H100/H200 has 132.
constexpr int64_t kEnoughBlocks = 132;

/// Reductions of more than 16 slices of 64 steps, whose main loop is a loop anyway
/// (mainLoopUnroll), may take a stream-K launch (streamKBlocks).
constexpr int64_t kLoopedReduction = 16 * 64;

/// A grid of at most this many tiles (an eighth of the SMs) is split into stream-K parts from
/// eight slices on. Measured on the H200 (docs/performance.md, k = 768 at b1 fp16, one call):
/// BERT-base's and GPT-2's output projections (12 tiles of 128x64) went 0.027 -> 0.012 ms a
/// layer in six parts, where ViT-B/16's (24 tiles) went 0.011 -> 0.014 against mma.sync, and
/// splitting its QKV (72 tiles) and MLP-in (96) slowed them by half.
constexpr int64_t kFewTiles = 16;

/// The wgmma tiles: two warpgroups of 64 rows each, the columns one wgmma's n, and their blocks
/// an SM (launch bounds: 128 registers a thread for 128 columns, 85 for 64; rings of three
/// slices, 97 and 73 KiB).
constexpr MmaTile kWgmmaWide{128, 128, 32, 2, 4}, kWgmmaNarrow{128, 64, 32, 2, 4};

bool sameSize(const MmaTile &a, const MmaTile &b) { return a.bm == b.bm && a.bn == b.bn; }

/// The contraction's output tiles of `tile`'s size: a block each, in a launch of a block per tile.
int64_t tilesOf(const ContractionSpec &spec, const MmaTile &tile) {
  return ceilDiv(spec.m, tile.bm) * ceilDiv(spec.n, tile.bn) * spec.batch;
}

} // namespace

int wgmmaBlocksPerSm(const MmaTile &tile) {
  SINTER_ASSERT(sameSize(tile, kWgmmaWide) || sameSize(tile, kWgmmaNarrow), "no wgmma tile of ", tile.bm, "x", tile.bn);
  return tile.bn == 64 ? 3 : 2;
}

std::optional<MmaTile> wgmmaBlockTile(const ContractionSpec &spec, MmaOperands operands,
                                      const std::optional<std::array<int, 2>> &forced) {
  if (!sixteenBit(operands))
    return std::nullopt;
  if (forced) {
    for (const MmaTile &tile : {kWgmmaWide, kWgmmaNarrow})
      if (tile.bm == (*forced)[0] && tile.bn == (*forced)[1])
        return tile;
    return std::nullopt;
  }
  // 128x128 when every SM gets a block, and no more than a quarter of the tile's outputs are
  // padding (attention's P.V with 64 columns per head would waste half). And a reduction of
  // four 64-step slices at least: measured when the wgmma ring held five slices (161 KiB, one
  // block an SM), a shorter reduction left each SM one block that loaded, multiplied and stored
  // in turn, where the mma.sync kernel's smaller ring let several blocks overlap. On ResNet-50
  // b32 fp16 the 1x1 convolutions with k = 64 (layer1's expansions, with the residual add) took
  // 0.178 ms on wgmma against 0.128 on mma.sync, and those with k = 128 0.092 against 0.072;
  // from k = 256 wgmma was as fast or faster (layer2's 3x3, k = 1152: 0.058 against 0.093). The
  // ring now holds three slices and two blocks an SM; the bound has not been measured again.
  constexpr int64_t kShortestReduction = 256;
  if (tilesOf(spec, kWgmmaWide) >= kEnoughBlocks &&
      tilesOf(spec, kWgmmaWide) * kWgmmaWide.bm * kWgmmaWide.bn * 4 <= spec.batch * spec.m * spec.n * 5 &&
      spec.k >= kShortestReduction)
    return kWgmmaWide;
  // Otherwise 128x64, three blocks an SM, for a long reduction of whole 16-byte runs on at least
  // half the SMs. Measured on an H200 (bench/gpu_contraction_rate.py, fp16 against
  // fp16@128x64, docs/performance.md): where 128x128 fills the GPU, 128x64 was slower on every
  // GEMM of ViT-B/16 and BERT-base at b32 (0.041 -> 0.050 ms for ViT's output projection, 0.111
  // -> 0.176 for its MLP-in), but on the grids 128x128 leaves short it beat the mma.sync tiles:
  // ResNet-50 b32's layer4 3x3 convolution (104 blocks, k = 4608) 0.723 -> 0.159 ms, layer3's
  // 3x3 (196 blocks) 0.361 -> 0.122, layer4's 1x1 reduce 0.094 -> 0.035, layer1's 3x3 with 64
  // channels (k = 576) 0.286 -> 0.231; ViT-B/16 b1's MLP-in (96 blocks) 0.0143 -> 0.0081. It
  // lost with k = 256 (layer1's 1x1 reduce, 0.073 -> 0.107), k = 147 (the stem, 0.354 -> 0.842)
  // and k = 999 or 1001 read element by element (0.065 -> 0.070).
  // With fewer blocks, a reduction long enough for stream-K (streamKBlocks: more than 16 slices,
  // or eight for a few tiles) is split into parts that fill more SMs. ResNet-50 b1's 3x3
  // convolutions from layer2 on (8 to 14 tiles, k = 1152 to 4608) took 0.11 to 0.28 ms each on
  // the f32 tiled kernel's 32 to 100 blocks; its sixteen 3x3 convolutions went 1.693 -> 0.290
  // ms, BERT-base b1's MLP-out (12 tiles, k = 3072) 0.087 -> 0.015 ms a layer.
  constexpr int64_t kNarrowReduction = 512;
  const int64_t narrowBlocks = tilesOf(spec, kWgmmaNarrow);
  if ((narrowBlocks >= kEnoughBlocks / 2 || spec.k > kLoopedReduction || narrowBlocks <= kFewTiles) &&
      spec.k >= kNarrowReduction && spec.k % 8 == 0)
    return kWgmmaNarrow;
  return std::nullopt;
}

std::optional<int64_t> streamKBlocks(const ContractionSpec &spec, const MmaTile &tile) {
  // The tile's wgmma blocks an SM (the kernel's launch bounds).
  const int64_t places = wgmmaBlocksPerSm(tile) * kEnoughBlocks;
  // The tiles past the whole rounds are split into at least two parts each (a block per part);
  // with more than half the places left over they are not split, and the launch gains nothing.
  const int64_t tiles = tilesOf(spec, tile), leftover = tiles % places;
  if (leftover == 0 || leftover * 2 > places)
    return std::nullopt;
  // Only reductions of more than 16 slices of 64 steps, whose main loop is a loop anyway
  // (mainLoopUnroll): the stream-K loop's bounds are known at run time only, and on ViT-B/16 b32
  // fp16 (H200) its QKV projection (900 tiles, k = 768) went 0.559 -> 0.670 ms and its output
  // projection (300 tiles, k = 768) 0.352 -> 0.483, where its MLP-out (300 tiles, k = 3072) went
  // 0.878 -> 0.835 (docs/performance.md).
  // A grid of fewer tiles than places (no whole rounds) launches a block a piece, in pieces of two
  // slices at least (partsOf); a few tiles are split from eight slices on (kFewTiles).
  const bool fewTiles = tiles <= kFewTiles && spec.k >= 8 * 64;
  if (spec.k <= kLoopedReduction && !fewTiles)
    return std::nullopt;
  return tiles < places ? std::min(places, leftover * partsOf(ceilDiv(spec.k, 64))) : places;
}

std::optional<MmaOperands> mmaOperands(const ContractionSpec &spec, CudaOptions::Fp32Contractions fp32) {
  if (spec.type != DType::Float32)
    return std::nullopt;
  if (spec.k >= 16) {
    if (exactIn(spec.lhs, DType::Float16) && exactIn(spec.rhs, DType::Float16))
      return MmaOperands::Float16;
    if (exactIn(spec.lhs, DType::BFloat16) && exactIn(spec.rhs, DType::BFloat16))
      return MmaOperands::BFloat16;
  }
  if (spec.k < 8)
    return std::nullopt;
  switch (fp32) {
  case CudaOptions::Fp32Contractions::Tf32x3: return MmaOperands::Tf32x3;
  case CudaOptions::Fp32Contractions::Tf32: return MmaOperands::Tf32;
  case CudaOptions::Fp32Contractions::Simt: break;
  }
  return std::nullopt;
}

std::optional<MmaTile> chooseMmaTile(const ContractionSpec &spec, MmaOperands operands,
                                     const std::optional<std::array<int, 2>> &forced) {
  // A slice is 32 bytes of reduction per row either way: 32 16-bit steps or 16 f32 ones.
  auto sized = [&](MmaTile tile) {
    tile.bk = sixteenBit(operands) ? tile.bk : tile.bk / 2;
    return tile;
  };
  if (forced) {
    std::string known;
    for (const auto &[tile, rate16, rateTf32] : kMmaTiles) {
      if (tile.bm == (*forced)[0] && tile.bn == (*forced)[1])
        return sized(tile);
      known += (known.empty() ? "" : ", ") + std::to_string(tile.bm) + "x" + std::to_string(tile.bn);
    }
    userError("--tensor-core-tile ", (*forced)[0], "x", (*forced)[1], " is not a tensor-core tile; use one of ", known);
  }
  // The time of the grid, in units of one 128x128 block's: the blocks are dealt evenly to the
  // SMs, so the busiest SM runs ceil(blocks / SMs) of them, each bm x bn outputs at the tile's
  // rate. Padding counts (a 128x128 tile over an attention head's 64 x 16 scores multiplies
  // sixteen times what it keeps), and so does the last round's idle SMs: on 132 SMs, ViT-B/16
  // b32's MLP-out (6304 x 768 outputs) is 300 blocks of 128x128, three rounds of which the last
  // is a quarter full, against 396 blocks of 96x128, three full rounds.
  const bool sixteen = sixteenBit(operands);
  auto rate = [&](const TileRate &candidate) { return sixteen ? candidate.rate16 : candidate.rateTf32; };
  auto time = [&](const TileRate &candidate) {
    const MmaTile &tile = candidate.tile;
    return double(ceilDiv(tilesOf(spec, tile), kEnoughBlocks)) * tile.bm * tile.bn / (128.0 * 128.0) / rate(candidate);
  };
  const TileRate *best = nullptr;
  for (const TileRate &candidate : kMmaTiles)
    if (rate(candidate) > 0 && tilesOf(spec, candidate.tile) >= kEnoughBlocks &&
        (!best || time(candidate) < time(*best)))
      best = &candidate;
  if (best)
    return sized(best->tile);
  // Without a split of the reduction, a grid that leaves most SMs idle walks the whole of k
  // on a few of them: a classifier's or a late convolution's 16 tiles over k = 4608 took
  // longer on tensor cores than the f32 kernel, which splits k across slices of its block.
  // tf32 pairs gain less over the f32 kernel (1.4x on large GEMMs, against 5x for 16-bit
  // operands): a ViT-B/16 b1 MLP-out GEMM (197x3072x768, 84 tiles) took 0.132 ms on them
  // against 0.106 ms on the f32 kernel's k-slices, so they need every SM busy.
  const MmaTile &smallest = kMmaTiles[std::size(kMmaTiles) - 1].tile;
  if (sixteen && tilesOf(spec, smallest) >= kEnoughBlocks / 2)
    return sized(smallest);
  return std::nullopt;
}

} // namespace sinter::codegen::cuda
