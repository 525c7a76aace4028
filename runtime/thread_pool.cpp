// Workers wait for a job to be published: spinning on the generation for up to kSpin, then
// asleep on a condition variable. A worker registers with the job (busyWorkers_) under the mutex,
// and the caller withdraws the job under the same mutex only after every chunk is done and every
// registered worker has left, so no worker can touch a job after parallelFor returns; spinning
// only decides when to take the mutex, never replaces it.
#include "thread_pool.h"

#include <algorithm>
#include <chrono>
#include <sched.h>
#include <unistd.h>

namespace sinter::rt {
namespace {

/// How long a thread spins before it sleeps: longer than the gap between two launches of a
/// model, short against the time between requests.
constexpr std::chrono::microseconds kSpin{200};

inline void relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

/// Spins until `done()` or kSpin has passed; whether `done()` came true.
template <typename Done> bool spinUntil(Done done) {
  auto until = std::chrono::steady_clock::now() + kSpin;
  for (unsigned i = 1;; ++i) {
    if (done())
      return true;
    relax();
    if (i % 64 == 0 && std::chrono::steady_clock::now() >= until)
      return false;
  }
}

} // namespace

ThreadPool::ThreadPool(int threads) {
  for (int i = 1; i < threads; ++i)
    workers_.emplace_back([this] { workerLoop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread &worker : workers_)
    worker.join();
}

int ThreadPool::availableCores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    int count = CPU_COUNT(&set);
    if (count > 0)
      return count;
  }
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  return online > 0 ? static_cast<int>(online) : 1;
}

void ThreadPool::runChunks(Job &job) {
  int64_t base = job.extent / job.chunks;
  int64_t extra = job.extent % job.chunks; // the first `extra` chunks get one more index
  for (;;) {
    int64_t chunk = job.nextChunk.fetch_add(1, std::memory_order_relaxed);
    if (chunk >= job.chunks)
      return;
    int64_t begin = chunk * base + std::min(chunk, extra);
    int64_t end = begin + base + (chunk < extra ? 1 : 0);
    job.body(job.context, begin, end);
    job.doneChunks.fetch_add(1, std::memory_order_acq_rel);
  }
}

void ThreadPool::workerLoop() {
  uint64_t seen = 0;
  for (;;) {
    spinUntil([&] { return stopping_.load(std::memory_order_relaxed) || generation_.load(std::memory_order_acquire) != seen; });
    std::unique_lock<std::mutex> lock(mutex_);
    wake_.wait(lock, [&] { return stopping_ || (job_ && generation_ != seen); });
    if (stopping_)
      return;
    seen = generation_;
    Job *job = job_;
    ++busyWorkers_;
    lock.unlock();
    runChunks(*job);
    lock.lock();
    --busyWorkers_;
    finished_.notify_all();
  }
}

void ThreadPool::parallelFor(int64_t extent, ChunkFunction body, void *context) {
  if (extent <= 0)
    return;
  if (workers_.empty() || extent == 1) {
    body(context, 0, extent);
    return;
  }
  Job job;
  job.body = body;
  job.context = context;
  job.extent = extent;
  // A few chunks per thread evens out uneven chunks and threads taken by other processes.
  job.chunks = std::min<int64_t>(extent, int64_t(threads()) * 4);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = &job;
    ++generation_;
  }
  wake_.notify_all();
  runChunks(job);
  spinUntil([&] {
    return job.doneChunks.load(std::memory_order_acquire) == job.chunks &&
           busyWorkers_.load(std::memory_order_acquire) == 0;
  });
  std::unique_lock<std::mutex> lock(mutex_);
  finished_.wait(lock, [&] {
    return busyWorkers_ == 0 && job.doneChunks.load(std::memory_order_acquire) == job.chunks;
  });
  job_ = nullptr;
}

} // namespace sinter::rt
