#include "sinter/support/job_pool.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace sinter {

unsigned defaultJobCount() { return std::max(1u, std::thread::hardware_concurrency()); }

void runJobs(size_t count, unsigned workers, const std::function<void(size_t)> &job) {
  if (workers == 0)
    workers = defaultJobCount();
  const size_t threadCount = std::min<size_t>(workers, count);
  std::vector<std::exception_ptr> failures(count);
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < count; i = next++) {
      try {
        job(i);
      } catch (...) {
        failures[i] = std::current_exception();
      }
    }
  };
  if (threadCount <= 1) {
    work(); // no thread for a pool of one: -j 1 runs the jobs in order on the caller's thread
  } else {
    std::vector<std::thread> threads;
    for (size_t w = 0; w < threadCount; ++w)
      threads.emplace_back(work);
    for (std::thread &thread : threads)
      thread.join();
  }
  for (const std::exception_ptr &failure : failures)
    if (failure)
      std::rethrow_exception(failure);
}

void runReportedJobs(const ProgressCallback &progress, const char *phase, const char *unit, size_t count,
                     unsigned workers, const std::function<void(size_t)> &job) {
  if (progress)
    progress({phase, unit, 0, count});
  size_t done = 0;
  std::mutex order; // guards done, so reports come in increasing order of it
  runJobs(count, workers, [&](size_t index) {
    job(index);
    if (progress) {
      std::lock_guard<std::mutex> lock(order);
      progress({phase, unit, ++done, count});
    }
  });
}

} // namespace sinter
