// sinter_pool on CPU artifacts: runs from 64 threads at once give outputs bit-identical to one
// thread's runs of one session on the same inputs; sessions are made lazily and never beyond the
// maximum; a pool that fails when busy says BUSY while its one session is held (by a kernel that
// waits on a FIFO the test writes to), and one that waits does not return before the session is
// back; bad arguments are refused before a session is taken; the C++ wrapper. Also the CPU side
// of sinter_model_device_usage (sessions and arenas counted, weights read in place).
#include "artifact_test_util.h"
#include "sinter/package/writer.h"
#include "sinter/runtime.h"
#include "sinter/runtime.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <fcntl.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

using namespace sinter;
using namespace sinter::package;
using namespace sinter::testing;

namespace {

/// scale_exp (kKernelSource) with a gate: given x[0] == 1234, the kernel creates the file named by
/// $SINTER_TEST_ENTERED and then waits until a byte comes through the FIFO $SINTER_TEST_GATE.
const char *kGatedSource = R"(
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>
void scale_exp(void *const *args, int64_t begin, int64_t end) {
  const float *x = (const float *)args[0];
  const float *w = (const float *)args[1];
  float *y = (float *)args[2];
  int32_t *visits = (int32_t *)args[3];
  if (begin == 0 && x[0] == 1234.0f) {
    close(open(getenv("SINTER_TEST_ENTERED"), O_CREAT | O_WRONLY, 0600));
    char byte;
    int gate = open(getenv("SINTER_TEST_GATE"), O_RDONLY);
    if (read(gate, &byte, 1) != 1)
      byte = 0;
    close(gate);
  }
  for (int64_t i = begin; i < end; ++i) {
    y[i] = expf(x[i]) * w[i] + (float)(i % 3);
    visits[i] += 1;
  }
}
)";

std::vector<float> inputFor(int seed) {
  std::vector<float> x(kKernelElements);
  for (int64_t i = 0; i < kKernelElements; ++i)
    x[size_t(i)] = 0.013f * float((i * 7 + seed * 31) % 97) - 0.6f;
  return x;
}

/// y for input x through `run` (a session's or a pool's host run); empty on failure.
template <typename Run> std::vector<float> runKernel(Run run, const std::vector<float> &x) {
  std::vector<float> input = x, y(kKernelElements, -1.0f);
  std::vector<int32_t> visits(kKernelElements);
  sinter_tensor in = tensorOf(input.data(), input.size() * 4, SINTER_FLOAT32, {kKernelElements});
  sinter_tensor out[2] = {tensorOf(y.data(), y.size() * 4, SINTER_FLOAT32, {kKernelElements}),
                          tensorOf(visits.data(), visits.size() * 4, SINTER_INT32,
                                   {kKernelElements})};
  if (run(&in, out) != SINTER_OK)
    return {};
  return y;
}

class PoolTest : public ArtifactTest {
protected:
  /// Writes and loads the one-kernel model (gated or not); false when there is no C compiler.
  bool load(const char *source) {
    std::string object = compileC(folder_.string(), "kernel", source);
    if (object.empty())
      return false;
    model_ = path("kernel.so");
    writeArtifact(kernelManifest(), model_, {object});
    EXPECT_EQ(sinter_model_load(model_.c_str(), &loaded_), SINTER_OK) << sinter_last_error();
    return loaded_ != nullptr;
  }
  void TearDown() override {
    sinter_model_free(loaded_);
    ArtifactTest::TearDown();
  }
  sinter_pool *makePool(int32_t maxSessions, int32_t whenBusy = SINTER_POOL_WAIT) {
    sinter_pool_options options;
    sinter_pool_options_init(&options);
    options.when_busy = whenBusy;
    sinter_pool *pool = nullptr;
    EXPECT_EQ(sinter_pool_create(loaded_, &options, maxSessions, &pool), SINTER_OK)
        << sinter_last_error();
    return pool;
  }
  std::string model_;
  sinter_model *loaded_ = nullptr;
};

auto poolRun(sinter_pool *pool) {
  return [pool](const sinter_tensor *in, sinter_tensor *out) {
    return sinter_pool_run_host(pool, in, 1, out, 2);
  };
}

} // namespace

TEST_F(PoolTest, SixtyFourThreadsGetBitIdenticalOutputs) {
  if (!load(kKernelSource))
    GTEST_SKIP() << "no C compiler";
  constexpr int kThreads = 64, kRuns = 8;
  // The truth: one session, one thread, every input in turn.
  std::vector<std::vector<float>> expected;
  {
    sinter_session *session = nullptr;
    ASSERT_EQ(sinter_session_create(loaded_, nullptr, &session), SINTER_OK);
    for (int seed = 0; seed < kThreads * kRuns; ++seed)
      expected.push_back(runKernel(
          [&](const sinter_tensor *in, sinter_tensor *out) {
            return sinter_session_run_host(session, in, 1, out, 2);
          },
          inputFor(seed)));
    sinter_session_destroy(session);
  }
  for (int32_t maxSessions : {4, 64}) {
    sinter_pool *pool = makePool(maxSessions);
    ASSERT_NE(pool, nullptr);
    EXPECT_EQ(sinter_pool_session_count(pool), 0); // none until a call needs one
    std::atomic<int> start{0};
    std::vector<int> mismatches(kThreads, 0);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back([&, t] {
        ++start;
        while (start.load() < kThreads) // all threads call at once
          std::this_thread::yield();
        for (int run = 0; run < kRuns; ++run) {
          int seed = t * kRuns + run;
          if (runKernel(poolRun(pool), inputFor(seed)) != expected[size_t(seed)])
            ++mismatches[size_t(t)];
        }
      });
    for (std::thread &thread : threads)
      thread.join();
    EXPECT_EQ(mismatches, std::vector<int>(kThreads, 0)) << "max_sessions " << maxSessions;
    int32_t made = sinter_pool_session_count(pool);
    EXPECT_GE(made, 1);
    EXPECT_LE(made, maxSessions);
    sinter_device_usage usage{};
    ASSERT_EQ(sinter_model_device_usage(loaded_, 0, &usage), SINTER_OK);
    EXPECT_EQ(usage.sessions, made);
    EXPECT_EQ(usage.weight_uploads, 0); // the CPU reads the weights in place
    EXPECT_EQ(usage.weight_bytes, 0u);
    EXPECT_EQ(usage.arena_bytes, uint64_t(made) * kernelManifest().arenaBytes);
    sinter_pool_free(pool);
    ASSERT_EQ(sinter_model_device_usage(loaded_, 0, &usage), SINTER_OK);
    EXPECT_EQ(usage.sessions, 0);
  }
}

TEST_F(PoolTest, ABusyPoolFailsOrWaitsAsAsked) {
  if (!load(kGatedSource))
    GTEST_SKIP() << "no C compiler";
  std::string gate = path("gate"), entered = path("entered");
  setenv("SINTER_TEST_GATE", gate.c_str(), 1);
  setenv("SINTER_TEST_ENTERED", entered.c_str(), 1);
  ASSERT_EQ(mkfifo(gate.c_str(), 0600), 0);
  std::vector<float> x = inputFor(1), held = x;
  held[0] = 1234.0f; // the holder's run waits at the gate
  for (int32_t whenBusy : {SINTER_POOL_FAIL, SINTER_POOL_WAIT}) {
    sinter_pool *pool = makePool(1, whenBusy);
    ASSERT_NE(pool, nullptr);
    fs::remove(entered);
    std::vector<float> heldOutput;
    std::thread holder([&] { heldOutput = runKernel(poolRun(pool), held); });
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!fs::exists(entered) && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ASSERT_TRUE(fs::exists(entered)) << "the holder's run never reached its kernel";
    // The one session is now in a run.
    std::atomic<bool> secondDone{false};
    std::vector<float> second;
    sinter_status secondStatus = SINTER_OK;
    std::thread other([&] {
      std::vector<float> input = x, y(kKernelElements);
      std::vector<int32_t> visits(kKernelElements);
      sinter_tensor in = tensorOf(input.data(), input.size() * 4, SINTER_FLOAT32, {kKernelElements});
      sinter_tensor out[2] = {tensorOf(y.data(), y.size() * 4, SINTER_FLOAT32, {kKernelElements}),
                              tensorOf(visits.data(), visits.size() * 4, SINTER_INT32,
                                       {kKernelElements})};
      secondStatus = sinter_pool_run_host(pool, &in, 1, out, 2);
      if (secondStatus != SINTER_OK)
        second.assign(sinter_last_error(), sinter_last_error() + std::strlen(sinter_last_error()));
      else
        second = y;
      secondDone = true;
    });
    if (whenBusy == SINTER_POOL_FAIL) {
      other.join();
      EXPECT_EQ(secondStatus, SINTER_ERROR_BUSY);
      std::string message(second.begin(), second.end());
      EXPECT_TRUE(contains(message, "all 1 sessions of the pool are in use")) << message;
    } else {
      // It cannot finish while the only session is held (whatever the scheduling).
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      EXPECT_FALSE(secondDone.load());
    }
    int opened = open(gate.c_str(), O_WRONLY); // the holder's kernel has it open to read
    ASSERT_GE(opened, 0);
    ASSERT_EQ(write(opened, "g", 1), 1);
    close(opened);
    holder.join();
    if (other.joinable())
      other.join();
    EXPECT_EQ(heldOutput.size(), size_t(kKernelElements));
    if (whenBusy == SINTER_POOL_WAIT) {
      EXPECT_EQ(secondStatus, SINTER_OK);
      EXPECT_EQ(second, runKernel(poolRun(pool), x)); // the same input, run alone
    }
    EXPECT_EQ(sinter_pool_session_count(pool), 1);
    sinter_pool_free(pool);
  }
}

TEST_F(PoolTest, BadArgumentsAreRefusedBeforeASessionIsTaken) {
  if (!load(kKernelSource))
    GTEST_SKIP() << "no C compiler";
  sinter_pool *pool = nullptr;
  EXPECT_EQ(sinter_pool_create(loaded_, nullptr, 0, &pool), SINTER_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(sinter_last_error(), "max_sessions is 0")) << sinter_last_error();
  EXPECT_EQ(pool, nullptr);
  sinter_pool_options options;
  sinter_pool_options_init(&options);
  EXPECT_EQ(options.session.threads, 1);
  options.when_busy = 7;
  EXPECT_EQ(sinter_pool_create(loaded_, &options, 2, &pool), SINTER_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(sinter_last_error(), "when_busy is 7")) << sinter_last_error();
  EXPECT_EQ(sinter_pool_create(nullptr, nullptr, 2, &pool), SINTER_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(sinter_pool_create(loaded_, nullptr, 2, nullptr), SINTER_ERROR_INVALID_ARGUMENT);
  options.when_busy = SINTER_POOL_WAIT;
  options.session.threads = -3; // refused when the first session is made, and reported
  ASSERT_EQ(sinter_pool_create(loaded_, &options, 2, &pool), SINTER_OK);
  std::vector<float> x = inputFor(0), y(kKernelElements);
  std::vector<int32_t> visits(kKernelElements);
  sinter_tensor in = tensorOf(x.data(), x.size() * 4, SINTER_FLOAT32, {kKernelElements});
  sinter_tensor out[2] = {tensorOf(y.data(), y.size() * 4, SINTER_FLOAT32, {kKernelElements}),
                          tensorOf(visits.data(), visits.size() * 4, SINTER_INT32, {kKernelElements})};
  EXPECT_EQ(sinter_pool_run_host(pool, &in, 1, out, 2), SINTER_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(sinter_last_error(), "threads is -3")) << sinter_last_error();
  EXPECT_EQ(sinter_pool_session_count(pool), 0);
  sinter_pool_free(pool);

  pool = makePool(2);
  sinter_tensor wrong = in;
  wrong.dims[0] = 999;
  EXPECT_EQ(sinter_pool_run_host(pool, &wrong, 1, out, 2), SINTER_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(sinter_last_error(), "input 0 ('x')")) << sinter_last_error();
  EXPECT_EQ(sinter_pool_run_host(pool, &in, 1, out, 1), SINTER_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(sinter_pool_run(pool, &in, 1, out, 2, reinterpret_cast<void *>(8)),
            SINTER_ERROR_INVALID_ARGUMENT); // a CPU run takes no stream
  EXPECT_TRUE(contains(sinter_last_error(), "no stream")) << sinter_last_error();
  EXPECT_EQ(sinter_pool_session_count(pool), 1); // that last one took a session, and gave it back
  EXPECT_EQ(sinter_pool_run(pool, &in, 1, out, 2, nullptr), SINTER_OK) << sinter_last_error();
  EXPECT_EQ(sinter_pool_session_count(pool), 1);
  sinter_pool_free(pool);

  EXPECT_EQ(sinter_pool_run_host(nullptr, &in, 1, out, 2), SINTER_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(sinter_last_error(), "pool handle is null")) << sinter_last_error();
  EXPECT_EQ(sinter_pool_session_count(nullptr), -1);
  sinter_device_usage usage{};
  EXPECT_EQ(sinter_model_device_usage(loaded_, 1, &usage), SINTER_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(sinter_last_error(), "device 0, the host")) << sinter_last_error();
  EXPECT_EQ(sinter_runtime_abi_revision(), SINTER_ABI_REVISION);
}

TEST_F(PoolTest, TheCppWrapperRunsFromThreads) {
  if (!load(kKernelSource))
    GTEST_SKIP() << "no C compiler";
  sinter::rt::Model model(model_);
  sinter::rt::Pool pool(model, 3);
  std::vector<float> expected;
  {
    sinter::rt::Session session(model);
    std::vector<float> x = inputFor(4), y(kKernelElements);
    std::vector<int32_t> visits(kKernelElements);
    std::vector<sinter_tensor> in = {sinter::rt::makeTensor(model.inputs()[0], x.data())};
    std::vector<sinter_tensor> out = {sinter::rt::makeTensor(model.outputs()[0], y.data()),
                                      sinter::rt::makeTensor(model.outputs()[1], visits.data())};
    session.runHost(in, out);
    expected = y;
  }
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&] {
      std::vector<float> x = inputFor(4), y(kKernelElements);
      std::vector<int32_t> visits(kKernelElements);
      std::vector<sinter_tensor> in = {sinter::rt::makeTensor(model.inputs()[0], x.data())};
      std::vector<sinter_tensor> out = {sinter::rt::makeTensor(model.outputs()[0], y.data()),
                                        sinter::rt::makeTensor(model.outputs()[1], visits.data())};
      for (int run = 0; run < 5; ++run) {
        pool.runHost(in, out);
        wrong += y != expected;
      }
    });
  for (std::thread &thread : threads)
    thread.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_LE(pool.sessionCount(), 3);
  EXPECT_EQ(model.deviceUsage().sessions, pool.sessionCount());
  std::vector<sinter_tensor> none;
  EXPECT_THROW(pool.runHost(none, none), sinter::rt::Error);
}
