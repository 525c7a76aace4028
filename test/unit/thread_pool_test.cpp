// The CPU runtime's thread pool (runtime/thread_pool.h): every index of every parallelFor runs
// exactly once, whether the workers are still spinning from the last job (calls back to back) or
// asleep (calls far apart), for extents below, at and above the chunk count.
#include "../../runtime/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

using sinter::rt::ThreadPool;

namespace {

struct Counts {
  std::vector<std::atomic<int>> hits;
  explicit Counts(int64_t extent) : hits(size_t(extent)) {}
};

void countChunk(void *context, int64_t begin, int64_t end) {
  auto &counts = *static_cast<Counts *>(context);
  for (int64_t i = begin; i < end; ++i)
    counts.hits[size_t(i)].fetch_add(1, std::memory_order_relaxed);
}

void expectEachIndexOnce(ThreadPool &pool, int64_t extent) {
  Counts counts(extent);
  pool.parallelFor(extent, countChunk, &counts);
  for (int64_t i = 0; i < extent; ++i)
    ASSERT_EQ(counts.hits[size_t(i)].load(), 1) << "index " << i << " of " << extent;
}

} // namespace

TEST(ThreadPool, BackToBackCallsRunEveryIndexOnce) {
  for (int threads : {1, 2, 3, 8}) {
    ThreadPool pool(threads);
    for (int round = 0; round < 2000; ++round)
      expectEachIndexOnce(pool, 1 + round % 97);
  }
}

TEST(ThreadPool, CallsAfterTheWorkersSleptRunEveryIndexOnce) {
  ThreadPool pool(3);
  for (int round = 0; round < 5; ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5)); // past the workers' spin
    expectEachIndexOnce(pool, 1000 + round);
  }
}

TEST(ThreadPool, APoolIsDestroyedWhileItsWorkersSpinOrSleep) {
  for (int round = 0; round < 50; ++round) {
    ThreadPool pool(4);
    expectEachIndexOnce(pool, 64);
    if (round % 2)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}
