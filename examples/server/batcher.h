// Dynamic batching for the example server: concurrent requests of one model are queued, and a
// worker gathers them into one run of the artifact's batch buckets (sinter/batching.hpp), then
// hands each request its rows of the outputs.
//
// Only for an artifact whose batch symbol is paddable (the compiler proved that no op mixes rows):
// then the rows of several requests may share a run, and a run of n rows between buckets runs in
// the next bucket up, padded by the runtime and trimmed. When the proof failed, rows of different
// requests could affect each other, so the server does not batch (inference.cpp runs each request
// alone, at a bucket size).
//
// The gathering: a free worker takes the queue's turn; it waits until the queued rows reach
// maxBatchRows or the oldest queued request has waited maxDelay (0: no waiting: whatever is queued
// when a worker is free), takes whole requests in arrival order while they fit in maxBatchRows (at
// least one), and gives the turn to the next free worker before it runs. A failed run fails every
// request in it. Nothing here knows HTTP. Thread-safe.
#pragma once

#include "sinter/batching.hpp"
#include "sinter/runtime.hpp"

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace sinter::serving {

/// What the batcher has run so far.
struct BatchStats {
  uint64_t requests = 0;               ///< requests that went through the batcher
  uint64_t runs = 0;                   ///< runs of the artifact
  uint64_t requestsInSharedRuns = 0;   ///< requests that shared their run with another request
  std::map<int64_t, uint64_t> runsByRows;     ///< rows of a run (before padding) -> runs
  std::map<size_t, uint64_t> runsByRequests;  ///< requests in a run -> runs
};

class Batcher {
public:
  using Clock = std::chrono::steady_clock;
  using Bytes = std::vector<uint8_t>;

  struct Options {
    int64_t maxBatchRows = 1;              ///< the most rows one run gathers
    std::chrono::microseconds maxDelay{0}; ///< how long a run waits for more requests
    int workers = 1;                       ///< runs at once (the pool's sessions)
  };

  /// `inputs` and `outputs` are the model's (plan 0) infos: every one leads with the batch dim.
  Batcher(const sinter::rt::Pool &pool, std::vector<sinter_tensor_info> inputs,
          std::vector<sinter_tensor_info> outputs, sinter::rt::BatchShapes shapes,
          Options options);
  /// Runs what is queued, then stops the workers.
  ~Batcher();
  Batcher(const Batcher &) = delete;
  Batcher &operator=(const Batcher &) = delete;

  /// Runs a request of `rows` rows (inputs[i]: rows x one row of input i, checked by the caller)
  /// together with others; returns each output's bytes for these rows. Throws sinter::rt::Error
  /// when the run it was part of failed.
  std::vector<Bytes> run(int64_t rows, std::vector<Bytes> inputs);

  BatchStats stats() const;

private:
  struct Pending {
    int64_t rows;
    std::vector<Bytes> inputs;
    std::promise<std::vector<Bytes>> result;
    Clock::time_point arrived;
  };

  void work();
  void execute(std::vector<std::unique_ptr<Pending>> &batch);

  const sinter::rt::Pool &pool_;
  std::vector<sinter_tensor_info> inputs_, outputs_;
  std::vector<size_t> inputRowBytes_, outputRowBytes_;
  sinter::rt::BatchShapes shapes_;
  Options options_;

  std::mutex mutex_;
  std::condition_variable turnFree_; ///< idle workers wait here for the queue's turn
  std::condition_variable queued_;   ///< the worker with the turn waits here for more requests
  std::deque<std::unique_ptr<Pending>> queue_;
  int64_t queuedRows_ = 0;
  bool gathering_ = false; ///< a worker has the turn
  bool stopping_ = false;

  mutable std::mutex statsMutex_;
  BatchStats stats_;

  std::vector<std::thread> workers_;
};

} // namespace sinter::serving
