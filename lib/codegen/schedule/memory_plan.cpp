#include "sinter/codegen/schedule/memory_plan.h"

#include <algorithm>
#include <limits>
#include <numeric>

namespace sinter::codegen {

static uint64_t alignUp(uint64_t value, uint64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

ArenaPlan planArena(const std::vector<BufferLifetime> &buffers, uint64_t alignment) {
  ArenaPlan plan;
  plan.offsets.assign(buffers.size(), 0);
  std::vector<size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), 0);
  // Largest first; ties by first use, then index, so the plan is deterministic.
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (buffers[a].bytes != buffers[b].bytes)
      return buffers[a].bytes > buffers[b].bytes;
    return buffers[a].firstStep < buffers[b].firstStep;
  });

  struct Placed {
    uint64_t begin, end;
    size_t index;
  };
  std::vector<Placed> placed;
  for (size_t index : order) {
    const BufferLifetime &buffer = buffers[index];
    uint64_t size = alignUp(std::max<uint64_t>(buffer.bytes, 1), alignment);
    plan.totalBytes += size;
    std::vector<Placed> conflicts;
    for (const Placed &other : placed) {
      const BufferLifetime &o = buffers[other.index];
      if (o.firstStep <= buffer.lastStep && buffer.firstStep <= o.lastStep)
        conflicts.push_back(other);
    }
    std::sort(conflicts.begin(), conflicts.end(),
              [](const Placed &a, const Placed &b) { return a.begin < b.begin; });
    uint64_t best = std::numeric_limits<uint64_t>::max();
    uint64_t bestGap = std::numeric_limits<uint64_t>::max();
    uint64_t cursor = 0;
    for (const Placed &other : conflicts) {
      if (other.begin > cursor && other.begin - cursor >= size && other.begin - cursor < bestGap) {
        best = cursor;
        bestGap = other.begin - cursor;
      }
      cursor = std::max(cursor, other.end);
    }
    if (best == std::numeric_limits<uint64_t>::max())
      best = cursor; // after every conflicting buffer
    plan.offsets[index] = best;
    placed.push_back({best, best + size, index});
    plan.arenaBytes = std::max(plan.arenaBytes, best + size);
  }
  return plan;
}

} // namespace sinter::codegen
