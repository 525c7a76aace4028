// sinter_session_benchmark: times the plan alone. The inputs are staged once (on the device for
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

#include "session.h"
#include "status.h"

using namespace sinter;
using namespace sinter::rt;

namespace {

/// The most timed iterations one call takes (the caller's array must hold them all).
constexpr int32_t kMaxIterations = 100000000;

} // namespace

extern "C" sinter_status sinter_session_benchmark(sinter_session *session,
                                                  const sinter_tensor *host_inputs,
                                                  int32_t input_count, int32_t warmup,
                                                  int32_t iterations, double *latencies_ms) {
  return guardCall([&] {
    if (!session)
      fail(SINTER_ERROR_INVALID_ARGUMENT, "the session handle is null");
    if (session->magic != sinter_session::kMagic)
      fail(SINTER_ERROR_INVALID_ARGUMENT, "the session handle is not a live sinter_session");
    if (warmup < 0)
      fail(SINTER_ERROR_INVALID_ARGUMENT, "warmup is ", warmup, "; it must be 0 or more");
    if (iterations < 1 || iterations > kMaxIterations)
      fail(SINTER_ERROR_INVALID_ARGUMENT, "iterations is ", iterations, "; it must be 1 to ",
           kMaxIterations);
    if (!latencies_ms)
      fail(SINTER_ERROR_INVALID_ARGUMENT, "latencies_ms is null; it must hold ", iterations,
           " doubles");
    validateInputArguments(session->artifact().manifest(), host_inputs, input_count);
    session->stageBenchmarkInputs(host_inputs);
    for (int32_t run = 0; run < warmup; ++run)
      session->timePlanRun();
    for (int32_t run = 0; run < iterations; ++run)
      latencies_ms[run] = session->timePlanRun();
  });
}
