// Memory planning: one arena for all activations. Each buffer has a size and a lifetime (the
// first and last plan step that touch it); buffers whose lifetimes overlap must not overlap in
// memory. Offsets are chosen greedily, largest buffer first, each into the smallest gap that
// fits it (best fit) among the buffers already placed that it conflicts with.
#pragma once

#include <cstdint>
#include <vector>

namespace sinter::codegen {

struct BufferLifetime {
  uint64_t bytes = 0;
  int64_t firstStep = 0; ///< inclusive
  int64_t lastStep = 0;  ///< inclusive
};

struct ArenaPlan {
  std::vector<uint64_t> offsets; ///< one per buffer, aligned
  uint64_t arenaBytes = 0;
  uint64_t totalBytes = 0; ///< sum of all (aligned) sizes: the arena without reuse
};

ArenaPlan planArena(const std::vector<BufferLifetime> &buffers, uint64_t alignment);

} // namespace sinter::codegen
