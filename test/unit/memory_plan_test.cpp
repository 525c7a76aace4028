// The arena planner (codegen/memory_plan.h): reuse across disjoint lifetimes, best fit among
// gaps, alignment, and the invariant that buffers alive at the same step never share bytes.
// Expected offsets are worked out by hand from the rule (largest first, smallest gap that fits).
#include "sinter/codegen/schedule/memory_plan.h"

#include <gtest/gtest.h>

#include <random>

using namespace sinter::codegen;

TEST(MemoryPlan, BuffersWithDisjointLifetimesShareBytes) {
  ArenaPlan plan = planArena({{100, 0, 1}, {60, 2, 3}, {80, 4, 4}}, 1);
  EXPECT_EQ(plan.offsets, (std::vector<uint64_t>{0, 0, 0}));
  EXPECT_EQ(plan.arenaBytes, 100u);
  EXPECT_EQ(plan.totalBytes, 240u);
}

TEST(MemoryPlan, LargestFirstIntoTheSmallestGapThatFits) {
  // a, b, c, d, e are alive at step 0 and lie back to back, largest first: a [0,100),
  // b [100,190), c [190,270), d [270,320), e [320,368). At step 5 only a, c, e are alive, so the
  // gaps are [100,190) (90 bytes) and [270,320) (50 bytes): f (45 bytes, placed last as the
  // smallest) takes the smaller one, where first fit would have taken 100.
  std::vector<BufferLifetime> buffers = {{100, 0, 9}, {90, 0, 0}, {80, 0, 9},
                                         {50, 0, 0},  {48, 0, 9}, {45, 5, 5}};
  ArenaPlan plan = planArena(buffers, 1);
  EXPECT_EQ(plan.offsets, (std::vector<uint64_t>{0, 100, 190, 270, 320, 270}));
  EXPECT_EQ(plan.arenaBytes, 368u);
}

TEST(MemoryPlan, OffsetsAndSizesAreAligned) {
  ArenaPlan plan = planArena({{1, 0, 0}, {300, 0, 0}, {3, 0, 0}}, 256);
  // 300 rounds to 512 and goes first; then the 3- and the 1-byte buffer, 256 each.
  EXPECT_EQ(plan.offsets, (std::vector<uint64_t>{768, 0, 512}));
  EXPECT_EQ(plan.arenaBytes, 1024u);
  EXPECT_EQ(plan.totalBytes, 1024u);
}

TEST(MemoryPlan, RandomPlansNeverOverlapLiveBuffers) {
  std::mt19937 generator(11);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<BufferLifetime> buffers(1 + generator() % 40);
    for (BufferLifetime &buffer : buffers) {
      buffer.bytes = generator() % 5000;
      buffer.firstStep = generator() % 30;
      buffer.lastStep = buffer.firstStep + generator() % 10;
    }
    const uint64_t alignment = 64;
    ArenaPlan plan = planArena(buffers, alignment);
    ASSERT_EQ(plan.offsets.size(), buffers.size());
    uint64_t peakLive = 0;
    for (int64_t step = 0; step < 40; ++step) {
      uint64_t live = 0;
      for (const BufferLifetime &buffer : buffers)
        if (buffer.firstStep <= step && step <= buffer.lastStep)
          live += (std::max<uint64_t>(buffer.bytes, 1) + alignment - 1) / alignment * alignment;
      peakLive = std::max(peakLive, live);
    }
    EXPECT_GE(plan.arenaBytes, peakLive); // no plan can beat the live peak
    EXPECT_LE(plan.arenaBytes, plan.totalBytes);
    for (size_t i = 0; i < buffers.size(); ++i) {
      EXPECT_EQ(plan.offsets[i] % alignment, 0u);
      EXPECT_LE(plan.offsets[i] + buffers[i].bytes, plan.arenaBytes);
      for (size_t j = i + 1; j < buffers.size(); ++j) {
        bool together = buffers[i].firstStep <= buffers[j].lastStep &&
                        buffers[j].firstStep <= buffers[i].lastStep;
        bool apart = plan.offsets[i] + std::max<uint64_t>(buffers[i].bytes, 1) <= plan.offsets[j] ||
                     plan.offsets[j] + std::max<uint64_t>(buffers[j].bytes, 1) <= plan.offsets[i];
        EXPECT_TRUE(!together || apart) << "trial " << trial << ": buffers " << i << " and " << j;
      }
    }
  }
}
