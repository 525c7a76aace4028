#include "batcher.h"

#include <cstring>

namespace sinter::serving {
namespace {

std::vector<size_t> rowBytes(const std::vector<sinter_tensor_info> &infos) {
  std::vector<size_t> bytes;
  for (const sinter_tensor_info &info : infos)
    bytes.push_back(sinter::rt::elementCount(info) / size_t(info.dims[0]) *
                    sinter::rt::dtypeSize(info.dtype));
  return bytes;
}

/// `info` with `rows` in its batch dim.
sinter_tensor_info withRows(sinter_tensor_info info, int64_t rows) {
  info.dims[0] = rows;
  return info;
}

} // namespace

Batcher::Batcher(const sinter::rt::Pool &pool, std::vector<sinter_tensor_info> inputs,
                 std::vector<sinter_tensor_info> outputs, sinter::rt::BatchShapes shapes,
                 Options options)
    : pool_(pool), inputs_(std::move(inputs)), outputs_(std::move(outputs)),
      inputRowBytes_(rowBytes(inputs_)), outputRowBytes_(rowBytes(outputs_)),
      shapes_(std::move(shapes)), options_(options) {
  for (int w = 0; w < std::max(1, options_.workers); ++w)
    workers_.emplace_back([this] { work(); });
}

Batcher::~Batcher() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  turnFree_.notify_all();
  queued_.notify_all();
  for (std::thread &worker : workers_)
    worker.join();
}

std::vector<Batcher::Bytes> Batcher::run(int64_t rows, std::vector<Bytes> inputs) {
  auto pending = std::make_unique<Pending>();
  pending->rows = rows;
  pending->inputs = std::move(inputs);
  pending->arrived = Clock::now();
  std::future<std::vector<Bytes>> result = pending->result.get_future();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queuedRows_ += rows;
    queue_.push_back(std::move(pending));
  }
  // The worker gathering now may have enough; else an idle worker may take the turn.
  queued_.notify_one();
  turnFree_.notify_one();
  return result.get();
}

void Batcher::work() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    turnFree_.wait(lock, [&] {
      return (!gathering_ && !queue_.empty()) || (stopping_ && queue_.empty());
    });
    if (queue_.empty())
      return; // stopping, and nothing is left to run
    gathering_ = true;
    Clock::time_point deadline = queue_.front()->arrived + options_.maxDelay;
    while (!stopping_ && queuedRows_ < options_.maxBatchRows && Clock::now() < deadline)
      queued_.wait_until(lock, deadline);
    std::vector<std::unique_ptr<Pending>> batch;
    int64_t rows = 0;
    while (!queue_.empty() &&
           (batch.empty() || rows + queue_.front()->rows <= options_.maxBatchRows)) {
      rows += queue_.front()->rows;
      queuedRows_ -= queue_.front()->rows;
      batch.push_back(std::move(queue_.front()));
      queue_.pop_front();
    }
    gathering_ = false;
    lock.unlock();
    turnFree_.notify_one(); // the next free worker takes the turn for what is left or comes next
    execute(batch);
    lock.lock();
  }
}

void Batcher::execute(std::vector<std::unique_ptr<Pending>> &batch) {
  std::vector<int64_t> requestRows;
  for (const auto &pending : batch)
    requestRows.push_back(pending->rows);
  sinter::rt::BatchPlan plan = sinter::rt::planBatches(requestRows, shapes_);

  std::vector<std::vector<Bytes>> results(batch.size());
  std::vector<bool> failed(batch.size(), false);
  auto fail = [&](size_t request, std::exception_ptr error) {
    if (!failed[request])
      batch[request]->result.set_exception(error);
    failed[request] = true;
  };
  for (size_t r = 0; r < batch.size(); ++r) {
    if (!plan.rejected[r].empty()) // the caller checks first; this is a safety net
      fail(r, std::make_exception_ptr(
                  sinter::rt::Error(SINTER_ERROR_INVALID_ARGUMENT, plan.rejected[r])));
    for (size_t o = 0; o < outputs_.size(); ++o)
      results[r].emplace_back(size_t(batch[r]->rows) * outputRowBytes_[o]);
  }

  for (const sinter::rt::Run &run : plan.runs) {
    int64_t rows = run.rows();
    // The run's inputs: each slice's rows, in order.
    std::vector<Bytes> inputBytes(inputs_.size());
    std::vector<sinter_tensor> inputTensors, outputTensors;
    for (size_t i = 0; i < inputs_.size(); ++i) {
      inputBytes[i].resize(size_t(rows) * inputRowBytes_[i]);
      size_t at = 0;
      for (const sinter::rt::Slice &slice : run.slices) {
        size_t bytes = size_t(slice.rows) * inputRowBytes_[i];
        std::memcpy(inputBytes[i].data() + at,
                    batch[slice.request]->inputs[i].data() +
                        size_t(slice.firstRow) * inputRowBytes_[i],
                    bytes);
        at += bytes;
      }
      inputTensors.push_back(sinter::rt::makeTensor(withRows(inputs_[i], rows),
                                                    inputBytes[i].data()));
    }
    std::vector<Bytes> outputBytes(outputs_.size());
    for (size_t o = 0; o < outputs_.size(); ++o) {
      outputBytes[o].resize(size_t(rows) * outputRowBytes_[o]);
      outputTensors.push_back(sinter::rt::makeTensor(withRows(outputs_[o], rows),
                                                     outputBytes[o].data()));
    }
    try {
      pool_.runHost(inputTensors, outputTensors);
    } catch (...) {
      for (const sinter::rt::Slice &slice : run.slices)
        fail(slice.request, std::current_exception());
      continue;
    }
    // Each slice's rows of the outputs back to its request.
    for (size_t o = 0; o < outputs_.size(); ++o) {
      size_t at = 0;
      for (const sinter::rt::Slice &slice : run.slices) {
        size_t bytes = size_t(slice.rows) * outputRowBytes_[o];
        std::memcpy(results[slice.request][o].data() + size_t(slice.firstRow) * outputRowBytes_[o],
                    outputBytes[o].data() + at, bytes);
        at += bytes;
      }
    }
  }

  {
    std::lock_guard<std::mutex> lock(statsMutex_);
    stats_.requests += batch.size();
    stats_.runs += plan.runs.size();
    for (const sinter::rt::Run &run : plan.runs) {
      ++stats_.runsByRows[run.rows()];
      ++stats_.runsByRequests[run.slices.size()];
    }
    if (plan.runs.size() == 1 && batch.size() > 1)
      stats_.requestsInSharedRuns += batch.size();
  }
  for (size_t r = 0; r < batch.size(); ++r)
    if (!failed[r])
      batch[r]->result.set_value(std::move(results[r]));
}

BatchStats Batcher::stats() const {
  std::lock_guard<std::mutex> lock(statsMutex_);
  return stats_;
}

} // namespace sinter::serving
