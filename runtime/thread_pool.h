// A fixed pool of worker threads for CPU launches. parallelFor splits [0, extent) into disjoint
// chunks that the workers and the calling thread claim one at a time, and returns when all are
// done. One parallelFor at a time (a session is used by one thread at a time).
//
// A model at batch 1 is a hundred or more launches of a few tens of microseconds each, so a
// worker that has finished a job spins for a while (kSpin) watching for the next before it
// sleeps, and the caller spins on the job's last chunks before it sleeps: waking a sleeping
// thread through the kernel costs about as much as a small launch.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace sinter::rt {

class ThreadPool {
public:
  /// The body of a parallel loop: runs the chunk [begin, end).
  using ChunkFunction = void (*)(void *context, int64_t begin, int64_t end);

  /// `threads` counts the calling thread: a pool of 1 starts no worker.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool &) = delete;
  ThreadPool &operator=(const ThreadPool &) = delete;

  int threads() const { return static_cast<int>(workers_.size()) + 1; }
  void parallelFor(int64_t extent, ChunkFunction body, void *context);

  /// Online cores this process may use (its CPU affinity), at least 1.
  static int availableCores();

private:
  struct Job {
    ChunkFunction body;
    void *context;
    int64_t extent;
    int64_t chunks;
    std::atomic<int64_t> nextChunk{0};
    std::atomic<int64_t> doneChunks{0};
  };

  void workerLoop();
  static void runChunks(Job &job);

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable finished_;
  // Written under mutex_; atomic so that spinning threads may read them without it.
  Job *job_ = nullptr;                  ///< the published job; null between parallelFor calls
  std::atomic<uint64_t> generation_{0}; ///< bumped for each published job
  std::atomic<int> busyWorkers_{0};     ///< workers that took the current job and have not left it
  std::atomic<bool> stopping_{false};
};

} // namespace sinter::rt
