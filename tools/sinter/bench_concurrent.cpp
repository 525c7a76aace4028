// `sinter bench --concurrency N`: what a server sees. N threads run the model at once through one
// pool of at most N sessions (sinter_pool_run_host), each run end to end with host buffers (on
// CUDA the copies to and from the device are in its time, as in trtexec's end-to-end latency).
// Every thread runs --warmup untimed runs, all threads meet, then each runs --iterations timed
// runs, a steady clock around each; throughput is the batch times all timed runs over the wall
// time from the meeting to the last thread's end. Before the pool, N sessions are made one at a
// time to time session creation (the first pays for what the device's sessions share: on CUDA the
// kernels and the weights' upload); they are kept until the runs end, so the pool's sessions share
// those weights, and freed before the memory is read.
#include "bench.h"
#include "options.h"

#include "sinter/io/json.h"
#include "sinter/support/error.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <thread>

namespace sinter::cli {
namespace {

using Clock = std::chrono::steady_clock;

double millisecondsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

struct ConcurrentResult {
  std::vector<double> latencies; ///< every timed run of every thread
  double wallMs = 0;
  double firstSessionMs = 0;
  double laterSessionMs = 0; ///< the mean of the others (0 with one)
  sinter_device_usage usage{};
  int32_t sessions = 0;
  int threadsPerSession = 0;
  int64_t batch = 1;
  bool cuda = false;
};

ConcurrentResult measure(const BenchFlags &flags) {
  const int workers = flags.concurrency;
  ConcurrentResult result;
  rt::Model model(flags.model);
  result.cuda = model.target() == SINTER_TARGET_CUDA;
  std::vector<sinter_tensor_info> inputInfos, outputInfos;
  benchShapes(model, flags.batch, inputInfos, outputInfos);
  if (!inputInfos.empty() && inputInfos[0].rank > 0)
    result.batch = inputInfos[0].dims[0];
  std::vector<std::vector<uint8_t>> inputBytes;
  std::vector<sinter_tensor> inputs = makeInputs(inputInfos, flags.intHigh, inputBytes);

  sinter_pool_options options;
  sinter_pool_options_init(&options);
  // CPU: the cores split between the sessions unless --threads says how many each gets.
  result.threadsPerSession =
      flags.threads > 0 ? flags.threads
                        : std::max(1, int(std::thread::hardware_concurrency()) / workers);
  options.session.threads = result.threadsPerSession;
  options.session.device = flags.device;
  options.session.use_graphs = flags.noGraphs ? 0 : 1;

  std::vector<std::unique_ptr<rt::Session>> timedSessions;
  for (int i = 0; i < workers; ++i) {
    Clock::time_point start = Clock::now();
    timedSessions.push_back(std::make_unique<rt::Session>(model, &options.session));
    double ms = millisecondsSince(start);
    if (i == 0)
      result.firstSessionMs = ms;
    else
      result.laterSessionMs += ms / double(workers - 1);
  }

  rt::Pool pool(model, workers, &options);
  std::atomic<int> warmedUp{0};
  std::atomic<bool> failed{false};
  std::string failure;
  std::vector<std::vector<double>> latencies(static_cast<size_t>(workers));
  Clock::time_point timedStart;
  std::vector<std::thread> threads;
  for (int t = 0; t < workers; ++t)
    threads.emplace_back([&, t] {
      std::vector<std::vector<uint8_t>> outputBytes;
      std::vector<sinter_tensor> outputs;
      for (const sinter_tensor_info &info : outputInfos)
        outputBytes.emplace_back(rt::elementCount(info) * rt::dtypeSize(info.dtype));
      for (size_t i = 0; i < outputInfos.size(); ++i)
        outputs.push_back(rt::makeTensor(outputInfos[i], outputBytes[i].data()));
      try {
        for (int run = 0; run < flags.warmup; ++run)
          pool.runHost(inputs, outputs);
        if (++warmedUp == workers)
          timedStart = Clock::now();
        while (warmedUp.load() < workers)
          std::this_thread::yield();
        latencies[size_t(t)].reserve(size_t(flags.iterations));
        for (int run = 0; run < flags.iterations && !failed.load(); ++run) {
          Clock::time_point start = Clock::now();
          pool.runHost(inputs, outputs);
          latencies[size_t(t)].push_back(millisecondsSince(start));
        }
      } catch (const rt::Error &error) {
        if (!failed.exchange(true))
          failure = error.what();
        ++warmedUp; // never leave the others waiting
      }
    });
  for (std::thread &thread : threads)
    thread.join();
  timedSessions.clear(); // the pool's sessions hold the shared weights now
  if (failed.load())
    userError("a run failed: ", failure);
  result.wallMs = millisecondsSince(timedStart);
  result.sessions = pool.sessionCount();
  result.usage = model.deviceUsage(result.cuda ? flags.device : 0);
  for (const std::vector<double> &each : latencies)
    result.latencies.insert(result.latencies.end(), each.begin(), each.end());
  return result;
}

} // namespace

void runConcurrentBench(const BenchFlags &flags) {
  ConcurrentResult result;
  try {
    result = measure(flags);
  } catch (const rt::Error &error) {
    rethrow(error);
  }
  LatencyStats stats = summarize(result.latencies);
  double runs = double(result.latencies.size());
  double throughput = result.wallMs > 0 ? runs * double(result.batch) * 1000.0 / result.wallMs : 0;
  // The usage was read with the timing sessions freed: its arenas are the pool's.
  uint64_t weightBytes = result.usage.weight_bytes, arenaBytes = result.usage.arena_bytes;

  if (flags.json) {
    io::JsonWriter json;
    json.beginObject();
    json.key("model").value(flags.model);
    json.key("target").value(result.cuda ? "cuda" : "cpu");
    if (result.cuda) {
      json.key("device").value(flags.device);
      json.key("use_graphs").value(!flags.noGraphs);
    } else {
      json.key("threads_per_session").value(result.threadsPerSession);
    }
    json.key("timing").value("steady-clock-end-to-end");
    json.key("concurrency").value(flags.concurrency);
    json.key("sessions").value(int64_t(result.sessions));
    json.key("warmup").value(flags.warmup);
    json.key("iterations").value(flags.iterations);
    json.key("batch").value(result.batch);
    json.key("latency_ms").beginObject();
    json.key("p50").value(stats.p50).key("p90").value(stats.p90).key("p99").value(stats.p99);
    json.key("mean").value(stats.mean).key("min").value(stats.min).key("max").value(stats.max);
    json.key("stddev").value(stats.stddev);
    json.endObject();
    json.key("wall_ms").value(result.wallMs);
    json.key("throughput_per_s").value(throughput);
    json.key("session_create_ms").beginObject();
    json.key("first").value(result.firstSessionMs).key("later_mean").value(result.laterSessionMs);
    json.endObject();
    json.key("memory_bytes").beginObject();
    json.key("weights").value(int64_t(weightBytes)).key("arenas").value(int64_t(arenaBytes));
    json.key("weight_uploads").value(int64_t(result.usage.weight_uploads));
    json.endObject();
    json.endObject();
    std::printf("%s\n", json.str().c_str());
    return;
  }
  std::string where = result.cuda ? "cuda device " + std::to_string(flags.device) +
                                        (flags.noGraphs ? ", no graphs" : ", graph replay")
                                  : "cpu, " + std::to_string(result.threadsPerSession) +
                                        " thread" + (result.threadsPerSession == 1 ? "" : "s") +
                                        " per session";
  std::printf("model: %s (%s)\n", flags.model.c_str(), where.c_str());
  std::printf("concurrency: %d threads through a pool of %d sessions; %d warm-up and %d timed "
              "runs each, end to end with host buffers\n",
              flags.concurrency, result.sessions, flags.warmup, flags.iterations);
  std::printf("latency (ms): p50 %.4f  p90 %.4f  p99 %.4f  mean %.4f  min %.4f  max %.4f\n",
              stats.p50, stats.p90, stats.p99, stats.mean, stats.min, stats.max);
  std::printf("throughput: %.1f inferences/s (batch %lld x %.0f runs in %.1f ms)\n", throughput,
              static_cast<long long>(result.batch), runs, result.wallMs);
  std::printf("session creation: first %.3f ms, later ones %.3f ms each (mean)\n",
              result.firstSessionMs, result.laterSessionMs);
  std::printf("%s memory: weights %.2f MiB (%s), arenas %.2f MiB (%d session%s)\n",
              result.cuda ? "device" : "host", double(weightBytes) / 1048576.0,
              result.cuda ? (std::to_string(result.usage.weight_uploads) + " upload" +
                             (result.usage.weight_uploads == 1 ? "" : "s"))
                                .c_str()
                          : "read in place from the file",
              double(arenaBytes) / 1048576.0, result.sessions, result.sessions == 1 ? "" : "s");
}

} // namespace sinter::cli
