// `sinter bench model.so`: latency and throughput of a compiled artifact. It loads the artifact
// through libsinter_rt, makes deterministic random inputs from the signature, and times the plan
// with sinter_session_benchmark: the inputs go to the session once, and only the plan is timed
// (CUDA events on the session's stream around the graph replay; a steady clock on the CPU), so
// host<->device copies never enter the numbers. It prints p50/p90/p99/mean/min/max latency and
// throughput (the first input's first dim is the batch), as text or one JSON object.
#include "bench.h"
#include "commands.h"
#include "options.h"

#include "sinter/io/json.h"
#include "sinter/ir/dtype.h"
#include "sinter/runtime.hpp"
#include "sinter/support/error.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <numeric>
#include <random>

namespace sinter::cli {
namespace {

/// How many of the slowest steps the text report lists.
constexpr size_t kStepsListed = 25;

/// Seed of input k's generator: the same inputs on every run and machine.
constexpr uint64_t kSeed = 0x51E7E5BE7C4ull;

/// float -> IEEE half (round to nearest even); the magnitudes made here are normal halves.
uint16_t toHalf(float value) {
  uint32_t bits = std::bit_cast<uint32_t>(value);
  uint32_t sign = (bits >> 16) & 0x8000u;
  int32_t exponent = int32_t((bits >> 23) & 0xFF) - 127 + 15;
  uint32_t mantissa = bits & 0x7FFFFFu;
  if (exponent <= 0)
    return uint16_t(sign);
  if (exponent >= 31)
    return uint16_t(sign | 0x7C00u);
  uint32_t half = sign | (uint32_t(exponent) << 10) | (mantissa >> 13);
  uint32_t rest = mantissa & 0x1FFFu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u)))
    ++half;
  return uint16_t(half);
}

/// float -> bfloat16 (round to nearest even).
uint16_t toBfloat16(float value) {
  uint32_t bits = std::bit_cast<uint32_t>(value);
  bits += 0x7FFFu + ((bits >> 16) & 1u);
  return uint16_t(bits >> 16);
}

template <typename T>
void fillIntegers(std::vector<uint8_t> &bytes, size_t count, std::mt19937_64 &random,
                  int64_t high) {
  int64_t limit = std::min<int64_t>(
      high, int64_t(std::min<uint64_t>(uint64_t(std::numeric_limits<T>::max()),
                                       uint64_t(std::numeric_limits<int64_t>::max()))));
  std::uniform_int_distribution<int64_t> pick(0, std::max<int64_t>(limit - 1, 0));
  for (size_t i = 0; i < count; ++i) {
    T value = static_cast<T>(pick(random));
    std::memcpy(bytes.data() + i * sizeof(T), &value, sizeof(T));
  }
}

} // namespace

/// Non-zero floats (|v| in [0.1, 1], random sign), integers in [0, intHigh) (and within the
/// dtype), booleans true or false with equal odds.
std::vector<uint8_t> makeInput(const sinter_tensor_info &info, size_t index, int64_t intHigh) {
  size_t count = rt::elementCount(info);
  std::vector<uint8_t> bytes(count * rt::dtypeSize(info.dtype));
  std::mt19937_64 random(kSeed + index);
  std::uniform_real_distribution<float> magnitude(0.1f, 1.0f);
  std::bernoulli_distribution coin(0.5);
  auto nextFloat = [&] { return coin(random) ? magnitude(random) : -magnitude(random); };
  auto store = [&](size_t i, auto value) {
    std::memcpy(bytes.data() + i * sizeof(value), &value, sizeof(value));
  };
  switch (info.dtype) {
  case SINTER_FLOAT32:
    for (size_t i = 0; i < count; ++i)
      store(i, nextFloat());
    break;
  case SINTER_FLOAT64:
    for (size_t i = 0; i < count; ++i)
      store(i, double(nextFloat()));
    break;
  case SINTER_FLOAT16:
    for (size_t i = 0; i < count; ++i)
      store(i, toHalf(nextFloat()));
    break;
  case SINTER_BFLOAT16:
    for (size_t i = 0; i < count; ++i)
      store(i, toBfloat16(nextFloat()));
    break;
  case SINTER_BOOL:
    for (size_t i = 0; i < count; ++i)
      bytes[i] = coin(random) ? 1 : 0;
    break;
  case SINTER_INT8:
    fillIntegers<int8_t>(bytes, count, random, intHigh);
    break;
  case SINTER_UINT8:
    fillIntegers<uint8_t>(bytes, count, random, intHigh);
    break;
  case SINTER_INT16:
    fillIntegers<int16_t>(bytes, count, random, intHigh);
    break;
  case SINTER_UINT16:
    fillIntegers<uint16_t>(bytes, count, random, intHigh);
    break;
  case SINTER_INT32:
    fillIntegers<int32_t>(bytes, count, random, intHigh);
    break;
  case SINTER_UINT32:
    fillIntegers<uint32_t>(bytes, count, random, intHigh);
    break;
  case SINTER_INT64:
    fillIntegers<int64_t>(bytes, count, random, intHigh);
    break;
  case SINTER_UINT64:
    fillIntegers<uint64_t>(bytes, count, random, intHigh);
    break;
  }
  return bytes;
}

std::vector<sinter_tensor> makeInputs(const std::vector<sinter_tensor_info> &infos, int64_t intHigh,
                                      std::vector<std::vector<uint8_t>> &storage) {
  storage.clear();
  for (size_t i = 0; i < infos.size(); ++i)
    storage.push_back(makeInput(infos[i], i, intHigh));
  std::vector<sinter_tensor> tensors;
  for (size_t i = 0; i < infos.size(); ++i)
    tensors.push_back(rt::makeTensor(infos[i], storage[i].data()));
  return tensors;
}

/// The p-th percentile of sorted values, interpolating linearly between the closest ranks (as
/// numpy.percentile does by default).
double percentile(const std::vector<double> &sorted, double p) {
  double position = p / 100.0 * double(sorted.size() - 1);
  size_t below = size_t(std::floor(position));
  size_t above = std::min(below + 1, sorted.size() - 1);
  return sorted[below] + (sorted[above] - sorted[below]) * (position - double(below));
}

LatencyStats summarize(std::vector<double> latencies) {
  std::sort(latencies.begin(), latencies.end());
  LatencyStats stats;
  stats.p50 = percentile(latencies, 50);
  stats.p90 = percentile(latencies, 90);
  stats.p99 = percentile(latencies, 99);
  stats.min = latencies.front();
  stats.max = latencies.back();
  stats.mean = std::accumulate(latencies.begin(), latencies.end(), 0.0) / double(latencies.size());
  double squares = 0;
  for (double latency : latencies)
    squares += (latency - stats.mean) * (latency - stats.mean);
  stats.stddev = std::sqrt(squares / double(latencies.size()));
  return stats;
}

/// Runtime failures: a broken runtime invariant is internal; everything else (no GPU, an
/// artifact for another CPU, a corrupt file) is the user's to fix.
[[noreturn]] void rethrow(const rt::Error &error) {
  if (error.status() == SINTER_ERROR_INTERNAL)
    throw InternalError(error.what());
  userError(error.what());
}

void benchShapes(const rt::Model &model, int64_t batch, std::vector<sinter_tensor_info> &inputs,
                 std::vector<sinter_tensor_info> &outputs) {
  inputs = model.inputs();
  outputs = model.outputs();
  if (batch == 0)
    return;
  const char *symbol = inputs.empty() || inputs[0].rank == 0
                           ? ""
                           : sinter_model_dim_symbol(model.get(), 0, 0, 0);
  if (!symbol || !*symbol)
    userError("--batch ", batch, " picks a shape bucket, but the first dim of the artifact's first ",
              "input is not bucketed; compile with --dim SYMBOL=1,2,4,8 (or a range) for the batch");
  for (size_t i = 0; i < inputs.size(); ++i)
    for (int32_t axis = 0; axis < inputs[i].rank; ++axis)
      if (std::string(sinter_model_dim_symbol(model.get(), 0, int32_t(i), axis)) == symbol)
        inputs[i].dims[axis] = batch;
  std::vector<sinter_tensor> shapes;
  for (const sinter_tensor_info &info : inputs)
    shapes.push_back(rt::makeTensor(info, nullptr));
  for (size_t o = 0; o < outputs.size(); ++o)
    if (sinter_model_output_shape(model.get(), shapes.data(), int32_t(shapes.size()), int32_t(o),
                                  &outputs[o]) != SINTER_OK)
      userError("--batch ", batch, ": ", sinter_last_error());
}

namespace {

/// The slowest steps first, with their share of the steps' total.
void printSteps(const std::vector<std::string> &names, const std::vector<double> &ms, bool cuda) {
  double total = std::accumulate(ms.begin(), ms.end(), 0.0);
  std::vector<size_t> order(ms.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return ms[a] > ms[b]; });
  std::printf("steps run one at a time (%s): %zu steps, %.4f ms in all; the slowest:\n",
              cuda ? "no graph, CUDA events between steps" : "a steady clock around each", ms.size(),
              total);
  std::printf("  %5s  %10s  %6s  %s\n", "step", "median ms", "share", "kernel");
  for (size_t k = 0; k < std::min(order.size(), kStepsListed); ++k) {
    size_t i = order[k];
    std::printf("  %5zu  %10.4f  %5.1f%%  %s\n", i, ms[i], total > 0 ? 100.0 * ms[i] / total : 0.0,
                names[i].c_str());
  }
}

void runBench(const BenchFlags &flags) {
  if (classifyModelFile(flags.model) != ModelKind::Artifact)
    userError("'", flags.model,
              "' is not a compiled artifact: bench runs model.so files made by "
              "`sinter compile`");
  if (flags.warmup < 0)
    userError("--warmup must be 0 or more, not ", flags.warmup);
  if (flags.iterations < 1)
    userError("--iterations must be 1 or more, not ", flags.iterations);
  if (flags.threads < 0)
    userError("--threads must be 0 (one per core) or more, not ", flags.threads);
  if (flags.intHigh < 1)
    userError("--int-high must be 1 or more, not ", flags.intHigh);
  if (flags.batch < 0)
    userError("--batch must be 1 or more, not ", flags.batch);
  if (flags.concurrency < 0)
    userError("--concurrency must be 1 or more, not ", flags.concurrency);
  if (flags.concurrency > 0) {
    if (flags.perStep)
      userError("--per-step profiles one session's plan; it does not combine with --concurrency");
    runConcurrentBench(flags);
    return;
  }

  std::vector<double> latencies;
  std::vector<double> stepMs;
  std::vector<std::string> stepNames;
  std::vector<sinter_tensor_info> infos;
  sinter_target target = SINTER_TARGET_CPU;
  std::string cpuLevel;
  try {
    rt::Model model(flags.model);
    target = model.target();
    cpuLevel = model.cpuLevel();
    std::vector<sinter_tensor_info> outputInfos;
    benchShapes(model, flags.batch, infos, outputInfos);
    std::vector<std::vector<uint8_t>> buffers;
    std::vector<sinter_tensor> inputs = makeInputs(infos, flags.intHigh, buffers);
    sinter_session_options options;
    sinter_session_options_init(&options);
    options.threads = flags.threads;
    options.device = flags.device;
    options.use_graphs = flags.noGraphs ? 0 : 1;
    rt::Session session(model, &options);
    spdlog::debug("benchmarking {}: {} warm-up and {} timed runs", flags.model, flags.warmup,
                  flags.iterations);
    latencies = session.benchmark(inputs, flags.warmup, flags.iterations);
    if (flags.perStep) {
      stepNames = model.stepNames();
      stepMs = session.profile(model.get(), inputs, flags.warmup, flags.iterations);
    }
  } catch (const rt::Error &error) {
    rethrow(error);
  }

  int64_t batch = !infos.empty() && infos[0].rank > 0 ? infos[0].dims[0] : 1;
  LatencyStats stats = summarize(latencies);
  double throughput = stats.mean > 0 ? double(batch) * 1000.0 / stats.mean : 0.0;
  bool cuda = target == SINTER_TARGET_CUDA;
  const char *timing = cuda ? "cuda-events" : "steady-clock";

  if (flags.json) {
    io::JsonWriter json;
    json.beginObject();
    json.key("model").value(flags.model);
    json.key("target").value(cuda ? "cuda" : "cpu");
    if (cuda) {
      json.key("device").value(flags.device);
      json.key("use_graphs").value(!flags.noGraphs);
    } else {
      json.key("threads").value(flags.threads);
      json.key("cpu_level").value(cpuLevel);
    }
    json.key("timing").value(timing);
    json.key("warmup").value(flags.warmup);
    json.key("iterations").value(flags.iterations);
    json.key("batch").value(batch);
    json.key("latency_ms").beginObject();
    json.key("p50").value(stats.p50).key("p90").value(stats.p90).key("p99").value(stats.p99);
    json.key("mean").value(stats.mean).key("min").value(stats.min).key("max").value(stats.max);
    json.key("stddev").value(stats.stddev);
    json.endObject();
    json.key("throughput_per_s").value(throughput);
    json.key("latencies_ms").beginArray();
    for (double latency : latencies)
      json.value(latency);
    json.endArray();
    if (flags.perStep) {
      json.key("steps").beginArray(); // plan order; median ms of each step run alone
      for (size_t i = 0; i < stepMs.size(); ++i)
        json.beginObject().key("name").value(stepNames[i]).key("ms").value(stepMs[i]).endObject();
      json.endArray();
    }
    json.endObject();
    std::printf("%s\n", json.str().c_str());
    return;
  }
  std::string where = cuda ? "cuda device " + std::to_string(flags.device) +
                                 (flags.noGraphs ? ", no graphs" : ", graph replay")
                           : "cpu, " + cpuLevel + " kernels, " +
                                 (flags.threads ? std::to_string(flags.threads) + " threads"
                                                : std::string("one thread per core"));
  std::printf("model: %s (%s)\n", flags.model.c_str(), where.c_str());
  std::printf("runs: %d warm-up, %d timed; plan only, timed with %s\n", flags.warmup,
              flags.iterations, cuda ? "CUDA events" : "a steady clock");
  std::printf("latency (ms): p50 %.4f  p90 %.4f  p99 %.4f  mean %.4f  min %.4f  max %.4f\n",
              stats.p50, stats.p90, stats.p99, stats.mean, stats.min, stats.max);
  std::printf("throughput: %.1f inferences/s (batch %lld / mean latency)\n", throughput,
              static_cast<long long>(batch));
  if (flags.perStep)
    printSteps(stepNames, stepMs, cuda);
}

} // namespace

Command addBenchCommand(CLI::App &parent) {
  auto flags = std::make_shared<BenchFlags>();
  CLI::App *command = parent.add_subcommand(
      "bench", "Measure a compiled artifact's latency and throughput on random inputs");
  command->add_option("model", flags->model, "The artifact (.so from sinter compile)")->required();
  command->add_option("--warmup", flags->warmup, "Untimed runs first")->capture_default_str();
  command->add_option("--iterations", flags->iterations, "Timed runs")->capture_default_str();
  command->add_option("--threads", flags->threads, "CPU worker threads (0: one per core)")
      ->capture_default_str();
  command->add_option("--device", flags->device, "CUDA device ordinal")->capture_default_str();
  command->add_flag("--no-graphs", flags->noGraphs,
                    "CUDA: launch the kernels one by one instead of replaying a CUDA graph");
  command
      ->add_option("--int-high", flags->intHigh,
                   "Integer inputs are drawn from [0, N) (token ids, masks, indices)")
      ->capture_default_str();
  command->add_flag("--json", flags->json, "Print one JSON object (with every latency)");
  command
      ->add_option("--concurrency", flags->concurrency,
                   "Run from N threads at once through a pool of N sessions, end to end with host "
                   "buffers, and report throughput and per-run latency")
      ->capture_default_str();
  command->add_option("--batch", flags->batch,
                      "Measure at this batch: a shape bucket of an artifact compiled with "
                      "--dim SYMBOL=1,2,4,8 (the first input's first dim), or a size between "
                      "buckets that the runtime pads to the next one up");
  command->add_flag("--per-step", flags->perStep,
                    "Also time every step of the plan run alone (sinter_session_profile) and list "
                    "the slowest kernels");
  return {command, [flags] { runBench(*flags); }};
}

} // namespace sinter::cli
