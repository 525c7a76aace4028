// Stream-K tile schedules for the tensor-core contractions (cuda_tile_schedule.h).
#include "cuda_tile_schedule.h"

#include "sinter/support/error.h"

#include <algorithm>

namespace sinter::codegen::cuda {

Schedule scheduleOf(const ContractionSpec &spec, const MmaTile &wgmmaTile, int64_t blocks) {
  Schedule schedule;
  schedule.blocks = blocks;
  schedule.tilesM = ceilDiv(spec.m, wgmmaTile.bm);
  schedule.tilesN = ceilDiv(spec.n, wgmmaTile.bn);
  schedule.tiles = schedule.tilesM * schedule.tilesN * spec.batch;
  schedule.slices = ceilDiv(spec.k, wgmmaTile.bk);
  if (blocks) {
    SINTER_ASSERT(schedule.leftover() > 0, "a stream-K launch without tiles left over");
    schedule.parts = std::min(blocks / schedule.leftover(), partsOf(schedule.slices));
    SINTER_ASSERT(schedule.parts >= 2, "a stream-K launch whose leftover tiles are not split");
  }
  return schedule;
}

uint64_t streamKWorkspaceBytes(const Schedule &schedule, const MmaTile &tile) {
  return uint64_t(schedule.pieces()) * tile.bm * tile.bn * 4;
}

void printScheduleOpening(std::ostringstream &out, const Schedule &schedule, const MmaTile &tile,
                          const std::string &batch, bool split) {
  const std::string blocks = std::to_string(schedule.blocks) + "LL", slices = std::to_string(schedule.slices);
  if (split) {
    const std::string whole = std::to_string(schedule.wholeTiles()) + "LL",
                      leftover = std::to_string(schedule.leftover()) + "LL",
                      parts = std::to_string(schedule.parts);
    out << "  // stream-K: of the " << schedule.tiles << " tiles, the first " << schedule.wholeTiles()
        << " whole (blockIdx.x and every " << schedule.blocks << "th after it), then the last " << schedule.leftover()
        << " in " << schedule.parts << " parts of their " << schedule.slices << " slices (piece blockIdx.x)\n";
    out << "  __shared__ bool lastArrival;\n";
    out << "  for (long long work = blockIdx.x; work < " << schedule.wholeTiles() + schedule.pieces()
        << "LL; work += " << blocks << ") {\n";
    out << "  const long long piece = work - " << whole << ";\n";
    out << "  const long long tileIndex = piece < 0 ? work : " << whole << " + piece % " << leftover << ";\n";
    out << "  const int part = piece < 0 ? 0 : (int)(piece / " << leftover << ");\n";
    out << "  const int kBegin = piece < 0 ? 0 : part * " << slices << " / " << parts
        << ", kEnd = piece < 0 ? " << slices << " : (part + 1) * " << slices << " / " << parts << ";\n";
  } else {
    out << "  // whole tiles: blockIdx.x and every " << schedule.blocks << "th after it, of " << schedule.tiles << "\n";
    out << "  for (long long tileIndex = blockIdx.x; tileIndex < " << schedule.tiles << "LL; tileIndex += " << blocks
        << ") {\n";
  }
  out << "  const long long rowBase = tileIndex / " << schedule.tilesN << " % " << schedule.tilesM << " * " << tile.bm
      << ", columnBase = tileIndex % " << schedule.tilesN << " * " << tile.bn << ";\n";
  out << "  " << batch << " = tileIndex / " << schedule.tilesN * schedule.tilesM << ";\n";
}

// A piece's partial sums: each of a leftover tile's parts stores its sums in its piece's slot
// of the workspace and counts itself in at the tile's arrivals counter; the last to arrive adds
// the parts' sums in part order (so the result does not depend on which block was last), resets
// the counter for the next launch, and goes on to the epilogue; the others are done. No block
// waits for another, so a GPU with fewer SMs than the launch has blocks runs it as well (more
// slowly). Thread tid holds the same sums in every part, so it reads back only its own places.
void printPieceExchange(std::ostringstream &out, const Schedule &schedule, const MmaTile &tile,
                        const std::string &arrivals) {
  const int sums = tile.bn / 8, threads = tile.threads();
  const std::string tileFloat4s = std::to_string(tile.bm * tile.bn / 4),
                    leftover = std::to_string(schedule.leftover()) + "LL";
  out << "  if (piece >= 0) {\n";
  out << "    const long long leftoverTile = piece % " << leftover << ";\n";
  out << "    float4 *mine = sn_workspace + piece * " << tileFloat4s << " + tid;\n";
  out << "#pragma unroll\n    for (int q = 0; q < " << sums << "; ++q)\n";
  out << "      __stcg(mine + q * " << threads
      << ", make_float4(acc[0][q][0], acc[0][q][1], acc[0][q][2], acc[0][q][3]));\n";
  out << "    __threadfence();\n    __syncthreads();\n";
  out << "    if (tid == 0) {\n      const unsigned arrived = atomicAdd(&" << arrivals << "[leftoverTile], 1u);\n";
  out << "      lastArrival = arrived == " << schedule.parts - 1 << "u;\n";
  out << "      if (lastArrival)\n        " << arrivals << "[leftoverTile] = 0u;\n    }\n";
  out << "    __syncthreads();\n    if (!lastArrival)\n      continue;\n    __threadfence();\n";
  // A part at a time, its sums' loads issued together (the parts unrolled as well spilled).
  out << "#pragma unroll 1\n    for (int c = 0; c < " << schedule.parts << "; ++c) {\n";
  out << "      const float4 *part = sn_workspace + (c * " << leftover << " + leftoverTile) * " << tileFloat4s
      << " + tid;\n";
  out << "#pragma unroll\n      for (int q = 0; q < " << sums << "; ++q) {\n";
  out << "        const float4 sum = __ldcg(part + q * " << threads << ");\n";
  out << "        acc[0][q][0] = (c == 0 ? 0.f : acc[0][q][0]) + sum.x; acc[0][q][1] = (c == 0 ? 0.f : acc[0][q][1]) + sum.y;\n";
  out << "        acc[0][q][2] = (c == 0 ? 0.f : acc[0][q][2]) + sum.z; acc[0][q][3] = (c == 0 ? 0.f : acc[0][q][3]) + sum.w;\n";
  out << "      }\n    }\n  }\n";
}

} // namespace sinter::codegen::cuda
