// How a tensor-core contraction's blocks cover its output tiles: a block per tile, or a
// stream-K launch (MmaKernelOptions::streamKBlocks; cuda_mma_choice.cpp decides) of a fixed number
// of blocks that take the whole rounds of tiles and then split the tiles left over into parts of
// their reductions, the last part to finish adding the partial sums. cuda_mma_contraction.cpp
// prints the kernel around these pieces.
#pragma once

#include "cuda_contraction.h"

#include <algorithm>
#include <cstdint>
#include <sstream>
#include <string>

namespace sinter::codegen::cuda {

/// The most parts a leftover tile is split into. The last part to finish reads the others' sums a
/// part at a time, each a round trip to L2, so that more parts shorten the pieces and lengthen
/// the exchange: ResNet-50 b1's layer4 3x3 convolution (8 tiles of 128x64, 72 slices) would
/// otherwise take 49 parts of one or two slices each.
constexpr int64_t kMostParts = 8;

/// The most parts a leftover tile of `slices` slices is split into: pieces of two slices at least
/// (the ring requests two ahead), and no more than kMostParts.
inline int64_t partsOf(int64_t slices) { return std::min(slices / 2, kMostParts); }

/// How a launch's blocks cover the output tiles.
struct Schedule {
  /// 0: a block per tile, on a grid of (column tiles, row tiles, batch). Otherwise a launch of
  /// this many blocks (G) in two phases. First the whole rounds: block g takes tiles g, g + G,
  /// ... below wholeTiles(), each whole, as a block per tile would. Then the leftover tiles are
  /// split: each into `parts` equal ranges of its slices, piece p = part * leftover + l (tile
  /// wholeTiles() + l) going to block p, so that the blocks on one part read the same slices of
  /// neighbouring tiles at about the same time, as the whole rounds do. The mma.sync body (the
  /// same launch on other architectures) takes every tile whole: g, g + G, ...
  int64_t blocks = 0;
  int64_t tilesM = 0, tilesN = 0, tiles = 0; ///< tiles in the order rows, then columns, batch outermost
  int64_t slices = 0;                        ///< the wgmma form's slices per tile
  int64_t parts = 1;                         ///< ranges of slices a leftover tile is split into
  int64_t wholeTiles() const { return tiles / blocks * blocks; }
  int64_t leftover() const { return tiles - wholeTiles(); }
  int64_t pieces() const { return leftover() * parts; }
};

/// The schedule of `blocks` blocks (0: a block per tile) over the contraction's tiles of the
/// wgmma form (its bk sets the slices).
Schedule scheduleOf(const ContractionSpec &spec, const MmaTile &wgmmaTile, int64_t blocks);

/// The partial sums' workspace of a stream-K launch: an f32 tile for each piece.
uint64_t streamKWorkspaceBytes(const Schedule &schedule, const MmaTile &tile);

/// The opening of a launch of schedule.blocks blocks: the loop over the block's work, whole tiles
/// then (`split`, the wgmma body) its piece of a leftover tile, the slices kBegin .. kEnd - 1 of
/// tile tileIndex; and each one's rowBase, columnBase and batch `batch`. The kernel closes the
/// loop after the epilogue.
void printScheduleOpening(std::ostringstream &out, const Schedule &schedule, const MmaTile &tile,
                          const std::string &batch, bool split);

/// After a piece's main loop: its partial sums exchanged through the workspace (sn_workspace) and
/// the tile's counter `arrivals`, leaving the tile's whole sums in acc for the last part to
/// arrive and sending the others on to their next work.
void printPieceExchange(std::ostringstream &out, const Schedule &schedule, const MmaTile &tile,
                        const std::string &arrivals);

} // namespace sinter::codegen::cuda
