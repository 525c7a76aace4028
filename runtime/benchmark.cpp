// sinter_session_benchmark: times the plan alone (and sinter_session_profile, each step of it). The inputs are staged once (on the device for
// CUDA), then every run puts them back into the arena and runs the plan, timed by the session
// (session.h has the two hooks): warm-up runs first, then the timed ones.
//
// The restore before each run matters for correctness, not only for honest numbers: the memory
// plan may give an input's arena slot to a later activation once the input is dead, so a second
// run of the plan on an untouched arena could read garbage (out-of-range gather indices, say).

// Exported under default visibility like api.cpp's entry points (see the note there).
#pragma GCC visibility push(default)
#include "sinter/runtime.h"
#pragma GCC visibility pop

#include "handles.h"
#include "session.h"
#include "status.h"

#include <algorithm>
#include <vector>

using namespace sinter;
using namespace sinter::rt;

namespace {

/// The most timed iterations one call takes (the caller's array must hold them all).
constexpr int32_t kMaxIterations = 100000000;
/// The most timed runs one profile call takes.
constexpr int32_t kMaxProfileIterations = 100000;

} // namespace

namespace {

/// The checks sinter_session_benchmark and sinter_session_profile share.
RunShape checkTimingArguments(const SessionUse &session, const sinter_tensor *hostInputs,
                              int32_t inputCount, int32_t warmup, int32_t iterations) {
  if (warmup < 0)
    fail(SINTER_ERROR_INVALID_ARGUMENT, "warmup is ", warmup, "; it must be 0 or more");
  if (iterations < 1 || iterations > kMaxIterations)
    fail(SINTER_ERROR_INVALID_ARGUMENT, "iterations is ", iterations, "; it must be 1 to ",
         kMaxIterations);
  return validateInputArguments(session->artifact(), hostInputs, inputCount);
}

} // namespace

extern "C" sinter_status sinter_session_profile(sinter_session *handle,
                                                const sinter_tensor *host_inputs,
                                                int32_t input_count, int32_t warmup,
                                                int32_t iterations, double *step_ms,
                                                int32_t step_capacity) {
  return guardCall([&] {
    SessionUse session(handle);
    RunShape shape = checkTimingArguments(session, host_inputs, input_count, warmup, iterations);
    if (iterations > kMaxProfileIterations)
      fail(SINTER_ERROR_INVALID_ARGUMENT, "iterations is ", iterations,
           "; a profile keeps every step's time of every run, so it takes at most ",
           kMaxProfileIterations);
    size_t steps = session->artifact().plans[shape.plan].steps.size(); // the inputs' plan
    if (!step_ms || step_capacity < 0 || size_t(step_capacity) < steps)
      fail(SINTER_ERROR_INVALID_ARGUMENT, "step_ms must hold ", steps, " doubles (capacity ",
           step_capacity, step_ms ? ")" : ", and it is null)");
    session->stageBenchmarkInputs(shape, host_inputs);
    std::vector<double> run(steps);
    for (int32_t i = 0; i < warmup; ++i)
      session->timeSteps(run.data());
    std::vector<std::vector<double>> byStep(steps, std::vector<double>(size_t(iterations)));
    for (int32_t i = 0; i < iterations; ++i) {
      session->timeSteps(run.data());
      for (size_t s = 0; s < steps; ++s)
        byStep[s][size_t(i)] = run[s];
    }
    for (size_t s = 0; s < steps; ++s) {
      std::vector<double> &times = byStep[s];
      std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
      double median = times[times.size() / 2];
      if (times.size() % 2 == 0) // the mean of the two middle values, as numpy's median
        median = (median + *std::max_element(times.begin(), times.begin() + times.size() / 2)) / 2;
      step_ms[s] = median;
    }
  });
}

extern "C" sinter_status sinter_session_benchmark(sinter_session *handle,
                                                  const sinter_tensor *host_inputs,
                                                  int32_t input_count, int32_t warmup,
                                                  int32_t iterations, double *latencies_ms) {
  return guardCall([&] {
    SessionUse session(handle);
    RunShape shape = checkTimingArguments(session, host_inputs, input_count, warmup, iterations);
    if (!latencies_ms)
      fail(SINTER_ERROR_INVALID_ARGUMENT, "latencies_ms is null; it must hold ", iterations,
           " doubles");
    session->stageBenchmarkInputs(shape, host_inputs);
    for (int32_t run = 0; run < warmup; ++run)
      session->timePlanRun();
    for (int32_t run = 0; run < iterations; ++run)
      latencies_ms[run] = session->timePlanRun();
  });
}
