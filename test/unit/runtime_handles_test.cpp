// Handles and sessions under misuse and load: stale handles (freed, and freed then reused by a
// new object) and forged ones are errors without touching freed memory; a session entered from
// two threads at once answers SINTER_ERROR_BUSY, decided by a kernel that waits on a pipe (no
// timing); a session destroyed mid-run finishes that run; 64 threads create, run and destroy
// sessions while models are loaded and freed, with bit-identical outputs.
#include "artifact_test_util.h"
#include "sinter/package/writer.h"
#include "tiny_model_util.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <latch>
#include <mutex>
#include <thread>
#include <unistd.h>

using namespace sinter;
using namespace sinter::package;
using namespace sinter::testing;
using RuntimeHandles = ArtifactTest;

namespace {

sinter_session *createSession(sinter_model *model, int32_t threads = 1) {
  sinter_session_options options;
  sinter_session_options_init(&options);
  options.threads = threads;
  sinter_session *session = nullptr;
  EXPECT_EQ(sinter_session_create(model, &options, &session), SINTER_OK) << sinter_last_error();
  return session;
}

/// A CPU kernel that, with SINTER_TEST_GATE_FDS="ENTERED RELEASE" in the environment, writes one
/// byte to ENTERED when its first chunk starts and waits for one byte on RELEASE: the test knows
/// the run is inside the session without any timing. y[i] = x[i] + 1.
const char *kGateKernel = R"(
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
void gate_add_one(void *const *args, int64_t begin, int64_t end) {
  const char *fds = getenv("SINTER_TEST_GATE_FDS");
  int entered, release;
  if (begin == 0 && fds && sscanf(fds, "%d %d", &entered, &release) == 2) {
    char byte = 1;
    if (write(entered, &byte, 1) != 1 || read(release, &byte, 1) != 1)
      abort();
  }
  const float *x = (const float *)args[0];
  float *y = (float *)args[1];
  for (int64_t i = begin; i < end; ++i)
    y[i] = x[i] + 1.0f;
}
)";

Manifest gateManifest() {
  Manifest manifest;
  manifest.target = Target::Cpu;
  manifest.producer = "runtime_handles_test";
  manifest.cpuLevels = {"x86-64"};
  manifest.inputs = {signature("x", DType::Float32, {64}, 0)};
  manifest.outputs = {signature("y", DType::Float32, {64}, 256)};
  manifest.arenaBytes = 512;
  Kernel kernel;
  kernel.name = "gate_add_one";
  kernel.generator = "test-cc";
  manifest.kernels = {kernel};
  Launch launch;
  launch.parallelExtent = 64;
  launch.args = {{package::Region::Arena, 0}, {package::Region::Arena, 256}};
  launch.argBytes = {256, 256};
  manifest.steps = {launch};
  return manifest;
}

} // namespace

TEST_F(RuntimeHandles, StaleAndForgedHandlesAreRefusedWithoutTouchingFreedMemory) {
  std::string artifact = path("identity.so");
  writeArtifact(identityManifest(), artifact);
  sinter_model *first = nullptr;
  ASSERT_EQ(sinter_model_load(artifact.c_str(), &first), SINTER_OK);
  sinter_model_free(first);
  EXPECT_EQ(sinter_model_input_count(first), -1);
  EXPECT_TRUE(contains(sinter_last_error(), "not a live sinter_model")) << sinter_last_error();
  sinter_model_free(first); // twice: harmless

  // The freed slot is reused by the next load, with a new generation: the old handle stays dead.
  sinter_model *second = nullptr;
  ASSERT_EQ(sinter_model_load(artifact.c_str(), &second), SINTER_OK);
  EXPECT_NE(first, second);
  EXPECT_EQ(sinter_model_input_count(first), -1);
  EXPECT_EQ(sinter_model_input_count(second), 2);
  sinter_session *session = nullptr;
  EXPECT_EQ(sinter_session_create(first, nullptr, &session), SINTER_ERROR_INVALID_ARGUMENT);

  sinter_session *old = createSession(second);
  sinter_session_destroy(old);
  sinter_session *successor = createSession(second);
  ASSERT_NE(successor, nullptr);
  sinter_tensor_info info;
  ASSERT_EQ(sinter_model_input_info(second, 0, &info), SINTER_OK);
  float x[6] = {1, 2, 3, 4, 5, 6}, xOut[6] = {}, bias[3] = {};
  int64_t ids[4] = {1, 2, 3, 4}, idsOut[4] = {};
  sinter_tensor inputs[] = {tensorOf(x, sizeof x, SINTER_FLOAT32, {2, 3}),
                            tensorOf(ids, sizeof ids, SINTER_INT64, {4})};
  sinter_tensor outputs[] = {tensorOf(xOut, sizeof xOut, SINTER_FLOAT32, {2, 3}),
                             tensorOf(idsOut, sizeof idsOut, SINTER_INT64, {4}),
                             tensorOf(bias, sizeof bias, SINTER_FLOAT32, {3})};
  // The destroyed session's handle does not drive its successor.
  EXPECT_EQ(sinter_session_run(old, inputs, 2, outputs, 3, nullptr), SINTER_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(sinter_last_error(), "not a live sinter_session")) << sinter_last_error();
  EXPECT_EQ(xOut[0], 0.0f);
  EXPECT_EQ(sinter_session_run(successor, inputs, 2, outputs, 3, nullptr), SINTER_OK);
  EXPECT_EQ(xOut[5], 6.0f);
  double latency = 0;
  EXPECT_EQ(sinter_session_benchmark(old, inputs, 2, 0, 1, &latency),
            SINTER_ERROR_INVALID_ARGUMENT);
  sinter_session_destroy(old); // twice: harmless

  // Forged values, and a handle of the other kind.
  static char notAHandle[64];
  for (uintptr_t forged : {uintptr_t(1), uintptr_t(0x4D), uintptr_t(0xFFFFFFFFFFFFFFFFull),
                           reinterpret_cast<uintptr_t>(notAHandle),
                           reinterpret_cast<uintptr_t>(successor)}) {
    EXPECT_EQ(sinter_model_input_count(reinterpret_cast<sinter_model *>(forged)), -1);
    sinter_model_free(reinterpret_cast<sinter_model *>(forged));
  }
  for (uintptr_t forged : {uintptr_t(1), uintptr_t(0x53), uintptr_t(0x12345678ABCD53ull),
                           reinterpret_cast<uintptr_t>(notAHandle),
                           reinterpret_cast<uintptr_t>(second)}) {
    EXPECT_EQ(sinter_session_run_host(reinterpret_cast<sinter_session *>(forged), inputs, 2,
                                      outputs, 3),
              SINTER_ERROR_INVALID_ARGUMENT);
    sinter_session_destroy(reinterpret_cast<sinter_session *>(forged));
  }
  EXPECT_EQ(sinter_session_run(successor, inputs, 2, outputs, 3, nullptr), SINTER_OK);
  sinter_session_destroy(successor);
  sinter_model_free(second);
  EXPECT_GE(sinter_runtime_abi_revision(), 1);
}

TEST_F(RuntimeHandles, ASessionInACallIsBusyForOtherThreadsAndOutlivesItsDestroy) {
  std::string object = compileC(folder_.string(), "gate", kGateKernel);
  ASSERT_FALSE(object.empty()) << "the system C compiler is needed for this test";
  std::string artifact = path("gate.so");
  writeArtifact(gateManifest(), artifact, {object});
  int entered[2], release[2];
  ASSERT_EQ(pipe(entered), 0);
  ASSERT_EQ(pipe(release), 0);
  std::string fds = std::to_string(entered[1]) + " " + std::to_string(release[0]);
  setenv("SINTER_TEST_GATE_FDS", fds.c_str(), 1);

  sinter_model *model = nullptr;
  ASSERT_EQ(sinter_model_load(artifact.c_str(), &model), SINTER_OK) << sinter_last_error();
  sinter_session *session = createSession(model);
  float x[64], y[64] = {}, other[64] = {};
  for (int i = 0; i < 64; ++i)
    x[i] = float(i);
  sinter_tensor input = tensorOf(x, sizeof x, SINTER_FLOAT32, {64});
  sinter_tensor output = tensorOf(y, sizeof y, SINTER_FLOAT32, {64});
  sinter_tensor otherOutput = tensorOf(other, sizeof other, SINTER_FLOAT32, {64});

  for (bool destroyWhileRunning : {false, true}) {
    std::atomic<int> runStatus{-1};
    std::thread runner([&] { runStatus = sinter_session_run_host(session, &input, 1, &output, 1); });
    char byte;
    ASSERT_EQ(read(entered[0], &byte, 1), 1); // the runner is inside the kernel now
    EXPECT_EQ(sinter_session_run_host(session, &input, 1, &otherOutput, 1), SINTER_ERROR_BUSY);
    EXPECT_TRUE(contains(sinter_last_error(), "in use by another thread")) << sinter_last_error();
    double latency;
    EXPECT_EQ(sinter_session_benchmark(session, &input, 1, 0, 1, &latency), SINTER_ERROR_BUSY);
    EXPECT_EQ(other[0], 0.0f); // the refused call wrote nothing
    if (destroyWhileRunning) {
      sinter_session_destroy(session); // the handle dies now; the session when the run returns
      EXPECT_EQ(sinter_session_run_host(session, &input, 1, &otherOutput, 1),
                SINTER_ERROR_INVALID_ARGUMENT);
    }
    ASSERT_EQ(write(release[1], &byte, 1), 1);
    runner.join();
    EXPECT_EQ(runStatus.load(), SINTER_OK);
    for (int i = 0; i < 64; ++i)
      ASSERT_EQ(y[i], float(i) + 1.0f) << i;
    std::fill(y, y + 64, 0.0f);
  }
  unsetenv("SINTER_TEST_GATE_FDS");
  // Free again, and once more: the pipes are no longer needed.
  sinter_model_free(model);
  for (int fd : {entered[0], entered[1], release[0], release[1]})
    close(fd);
}

// The runtime stress test: 64 threads released together, each creating and destroying sessions
// (three lifetimes of three runs; every fourth thread loading and freeing its own model handle
// while its session runs), while a witness session on the shared model runs without pause from
// before the first churning session is created until after the last is destroyed. Every output
// is bit-identical to a single-thread run. A watchdog bounds the time: a deadlock or a hang
// ends the test binary with a message after 300 s (not a speed check: the whole test takes
// well under a second of work).
TEST_F(RuntimeHandles, SixtyFourThreadsChurnSessionsAndModelsWithIdenticalOutputs) {
  std::string artifact = path("tiny_cnn.so");
  ASSERT_TRUE(compileTinyCnn(artifact));
  sinter::rt::Model shared(artifact);
  std::vector<uint8_t> expected;
  {
    sinter_session *session = createSession(shared.get());
    ModelBuffers buffers(shared.get());
    ASSERT_EQ(buffers.run(session), SINTER_OK) << sinter_last_error();
    expected = buffers.outputBytes();
    sinter_session_destroy(session);
  }
  std::mutex watchdogMutex;
  std::condition_variable watchdogWake;
  bool finished = false;
  std::thread watchdog([&] {
    std::unique_lock<std::mutex> lock(watchdogMutex);
    if (!watchdogWake.wait_for(lock, std::chrono::seconds(300), [&] { return finished; })) {
      std::fprintf(stderr, "SixtyFourThreads...: not finished after 300 s: a deadlock or a hang\n");
      std::_Exit(1);
    }
  });

  constexpr int kThreads = 64, kLifetimes = 3, kRunsPerLifetime = 3;
  std::atomic<int> failures{0}, runs{0}, churning{kThreads};
  std::atomic<int> witnessRuns{0}, witnessFailures{0};
  std::atomic<bool> witnessRunning{false};
  std::latch start(kThreads + 1);
  std::thread witness([&] {
    sinter_session *session = createSession(shared.get(), 2);
    ModelBuffers buffers(shared.get());
    witnessRunning = true;
    start.arrive_and_wait();
    // Until the last churning thread is done, and at least once.
    do {
      std::fill(buffers.outputData[0].begin(), buffers.outputData[0].end(), 0xAB);
      if (buffers.run(session) != SINTER_OK || buffers.outputBytes() != expected)
        ++witnessFailures;
      ++witnessRuns;
    } while (churning.load() > 0);
    sinter_session_destroy(session);
  });
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      if (!witnessRunning)
        ++failures; // the witness's session must exist before any churning session
      for (int life = 0; life < kLifetimes; ++life) {
        // Every fourth thread loads its own handle of the artifact (the same file: dlopen
        // shares it) and frees it while its session still runs from it.
        sinter_model *own = nullptr;
        bool ownModel = t % 4 == 0;
        if (ownModel && sinter_model_load(artifact.c_str(), &own) != SINTER_OK) {
          ++failures;
          continue;
        }
        sinter_model *model = ownModel ? own : shared.get();
        sinter_session_options options;
        sinter_session_options_init(&options);
        options.threads = 1 + (t + life) % 2;
        sinter_session *session = nullptr;
        if (sinter_session_create(model, &options, &session) != SINTER_OK) {
          ++failures;
          sinter_model_free(own);
          continue;
        }
        if (ownModel)
          sinter_model_free(own);
        ModelBuffers buffers(shared.get());
        for (int run = 0; run < kRunsPerLifetime; ++run) {
          std::fill(buffers.outputData[0].begin(), buffers.outputData[0].end(), 0xAB);
          if (buffers.run(session) != SINTER_OK || buffers.outputBytes() != expected)
            ++failures;
          ++runs;
        }
        sinter_session_destroy(session);
      }
      --churning;
    });
  for (std::thread &thread : threads)
    thread.join();
  witness.join();
  {
    std::lock_guard<std::mutex> lock(watchdogMutex);
    finished = true;
  }
  watchdogWake.notify_one();
  watchdog.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(runs.load(), kThreads * kLifetimes * kRunsPerLifetime);
  EXPECT_EQ(witnessFailures.load(), 0);
  EXPECT_GE(witnessRuns.load(), 1);
}
