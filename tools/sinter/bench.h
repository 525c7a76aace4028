// `sinter bench`'s parts shared by its two modes: the plan alone on one session (bench.cpp) and
// many threads through a pool (bench_concurrent.cpp).
#pragma once

#include "sinter/runtime.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace sinter::cli {

struct BenchFlags {
  std::string model;
  int warmup = 10;
  int iterations = 100;
  int threads = 0;
  int device = 0;
  bool noGraphs = false;
  int64_t intHigh = 2;
  bool json = false;
  bool perStep = false;
  int concurrency = 0; ///< 0: the plan alone on one session; N: N threads through a pool
  int batch = 0;       ///< reserved for bucketed artifacts; refused when given
};

struct LatencyStats {
  double p50 = 0, p90 = 0, p99 = 0, mean = 0, min = 0, max = 0, stddev = 0;
};

/// Deterministic random bytes for input `index` of this signature (bench.cpp says how).
std::vector<uint8_t> makeInput(const sinter_tensor_info &info, size_t index, int64_t intHigh);
/// The model's inputs: their bytes (makeInput, kept in `storage`) and tensors over them.
std::vector<sinter_tensor> makeInputs(const std::vector<sinter_tensor_info> &infos, int64_t intHigh,
                                      std::vector<std::vector<uint8_t>> &storage);
/// The inputs' and outputs' shapes to measure: the artifact's (plan 0's) or, with `batch` > 0, those
/// of batch `batch`: the bucketed symbol at input 0's axis 0 set to it in every input that carries
/// it, and the outputs the runtime gives those inputs (a bucket, or a size it pads to the next one).
void benchShapes(const rt::Model &model, int64_t batch, std::vector<sinter_tensor_info> &inputs,
                 std::vector<sinter_tensor_info> &outputs);
/// Percentiles (numpy's linear interpolation), mean, min, max and stddev of the latencies.
LatencyStats summarize(std::vector<double> latencies);
/// Throws a runtime failure as InternalError (SINTER_ERROR_INTERNAL) or UserError (the rest).
[[noreturn]] void rethrow(const rt::Error &error);

/// `--concurrency N`: N threads run the model through a pool of at most N sessions.
void runConcurrentBench(const BenchFlags &flags);

} // namespace sinter::cli
