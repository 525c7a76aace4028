// Weights once per device, on the CUDA session logic run over a fake driver of host memory
// (fake_cuda_driver.h), so it is checked on machines without a GPU: the first session of a model
// on a device uploads the weights, later ones share them (no second upload, no second copy in
// "device" memory, one context retain and one module load per device), the last session frees
// them, a second device gets its own copy, concurrent first sessions upload once, and every
// session (and a pool's) still computes the right outputs, graphs replayed. The counts come from
// the fake (independent of the runtime) and are checked against sinter_model_device_usage.
// runtime_cuda_test.cpp checks the same on a real GPU.
#include "artifact_test_util.h"
#include "fake_cuda_driver.h"
#include "sinter/package/writer.h"
#include "sinter/runtime.h"

#include <gtest/gtest.h>

#include <thread>

using namespace sinter;
using namespace sinter::package;
using namespace sinter::testing;

namespace {

/// identityManifest() for the CUDA target (copies only, so the fake can run its plan).
Manifest cudaIdentityManifest() {
  Manifest manifest = identityManifest();
  manifest.target = Target::Cuda;
  manifest.cpuLevels.clear();
  // A module to load, so the test sees it loaded once per device; no launch uses it.
  manifest.cudaModules = {CudaModule{{CudaBinary{"compute_75", true, {'.', 'v', 0}}}}};
  return manifest;
}

/// Runs the identity model on host buffers; true when every output is what the model copies.
bool identityRunIsRight(sinter_status (*run)(void *, const sinter_tensor *, int32_t,
                                             sinter_tensor *, int32_t),
                        void *handle, int seed) {
  float x[6], xOut[6] = {}, bias[3] = {};
  int64_t ids[4], idsOut[4] = {};
  for (int i = 0; i < 6; ++i)
    x[i] = float(seed * 10 + i) * 0.5f;
  for (int i = 0; i < 4; ++i)
    ids[i] = int64_t(seed) * 1000 + i;
  sinter_tensor inputs[2] = {tensorOf(x, sizeof(x), SINTER_FLOAT32, {2, 3}),
                             tensorOf(ids, sizeof(ids), SINTER_INT64, {4})};
  sinter_tensor outputs[3] = {tensorOf(xOut, sizeof(xOut), SINTER_FLOAT32, {2, 3}),
                              tensorOf(idsOut, sizeof(idsOut), SINTER_INT64, {4}),
                              tensorOf(bias, sizeof(bias), SINTER_FLOAT32, {3})};
  if (run(handle, inputs, 2, outputs, 3) != SINTER_OK)
    return false;
  return std::memcmp(x, xOut, sizeof(x)) == 0 && std::memcmp(ids, idsOut, sizeof(ids)) == 0 &&
         bias[0] == 0.5f && bias[1] == -1.25f && bias[2] == 3.0f;
}

sinter_status runSession(void *session, const sinter_tensor *inputs, int32_t inputCount,
                         sinter_tensor *outputs, int32_t outputCount) {
  return sinter_session_run_host(static_cast<sinter_session *>(session), inputs, inputCount,
                                 outputs, outputCount);
}

sinter_status runPool(void *pool, const sinter_tensor *inputs, int32_t inputCount,
                      sinter_tensor *outputs, int32_t outputCount) {
  return sinter_pool_run_host(static_cast<sinter_pool *>(pool), inputs, inputCount, outputs,
                              outputCount);
}

/// sinter_pool_run with "device" buffers: the fake's device memory is host memory, so host
/// buffers stand in for device pointers, on the default stream.
sinter_status runPoolOnDevice(void *pool, const sinter_tensor *inputs, int32_t inputCount,
                              sinter_tensor *outputs, int32_t outputCount) {
  return sinter_pool_run(static_cast<sinter_pool *>(pool), inputs, inputCount, outputs,
                         outputCount, nullptr);
}

class DeviceShareTest : public ArtifactTest {
protected:
  void SetUp() override {
    ArtifactTest::SetUp();
    cuda::replaceDriverForTesting(&FakeCuda::driver());
    model_ = path("cuda_identity.so");
    manifest_ = cudaIdentityManifest();
    writeArtifact(manifest_, model_);
    ASSERT_EQ(sinter_model_load(model_.c_str(), &loaded_), SINTER_OK) << sinter_last_error();
    uploadsBefore_ = fake().hostToDeviceSyncCopies.load();
  }
  void TearDown() override {
    sinter_model_free(loaded_);
    cuda::replaceDriverForTesting(nullptr);
    ArtifactTest::TearDown();
  }
  static FakeCuda &fake() { return FakeCuda::instance(); }
  int uploads() const { return fake().hostToDeviceSyncCopies.load() - uploadsBefore_; }
  sinter_device_usage usage(int device) const {
    sinter_device_usage usage{};
    EXPECT_EQ(sinter_model_device_usage(loaded_, device, &usage), SINTER_OK) << sinter_last_error();
    return usage;
  }
  sinter_session *session(int device) {
    sinter_session_options options;
    sinter_session_options_init(&options);
    options.device = device;
    sinter_session *made = nullptr;
    EXPECT_EQ(sinter_session_create(loaded_, &options, &made), SINTER_OK) << sinter_last_error();
    return made;
  }

  std::string model_;
  Manifest manifest_;
  sinter_model *loaded_ = nullptr;
  int uploadsBefore_ = 0;
};

} // namespace

TEST_F(DeviceShareTest, SessionsOnADeviceShareOneUploadOfTheWeights) {
  const size_t weights = manifest_.weights.size(), arena = manifest_.arenaBytes;
  ASSERT_EQ(fake().liveBytes(), 0u);
  EXPECT_EQ(usage(0).sessions, 0);
  EXPECT_EQ(usage(0).weight_bytes, 0u);

  std::vector<sinter_session *> sessions;
  for (int i = 0; i < 4; ++i) {
    sessions.push_back(session(0));
    ASSERT_NE(sessions.back(), nullptr);
    // One upload, one copy of the weights in device memory, one arena per session.
    EXPECT_EQ(uploads(), 1) << "after session " << i;
    EXPECT_EQ(fake().liveBytes(), weights + (i + 1) * arena) << "after session " << i;
    EXPECT_EQ(fake().contextRetains.load(), 1);
    EXPECT_EQ(fake().modulesLoaded.load(), 1);
  }
  sinter_device_usage four = usage(0);
  EXPECT_EQ(four.sessions, 4);
  EXPECT_EQ(four.weight_uploads, 1);
  EXPECT_EQ(four.weight_bytes, weights);
  EXPECT_EQ(four.arena_bytes, 4 * arena);

  // Every session reads the shared weights (the `bias` output is copied from them), first by
  // plain launches, then by its own captured graph.
  int launchesBefore = fake().graphLaunches.load();
  for (int run = 0; run < 3; ++run)
    for (size_t i = 0; i < sessions.size(); ++i)
      EXPECT_TRUE(identityRunIsRight(runSession, sessions[i], run * 7 + int(i)))
          << "session " << i << " run " << run;
  EXPECT_EQ(fake().graphLaunches.load() - launchesBefore, 2 * 4);

  // The weights stay while a session is left, and go with the last one.
  for (size_t i = 0; i + 1 < sessions.size(); ++i)
    sinter_session_destroy(sessions[i]);
  EXPECT_EQ(fake().liveBytes(), weights + arena);
  EXPECT_TRUE(identityRunIsRight(runSession, sessions.back(), 99));
  sinter_session_destroy(sessions.back());
  EXPECT_EQ(fake().liveAllocations(), 0u);
  EXPECT_EQ(fake().contextRetains.load(), 0);
  EXPECT_EQ(fake().modulesLoaded.load(), 0);
  EXPECT_EQ(usage(0).sessions, 0);
  EXPECT_EQ(usage(0).weight_bytes, 0u);
  EXPECT_EQ(usage(0).arena_bytes, 0u);

  // A new first session uploads again.
  sinter_session *again = session(0);
  EXPECT_EQ(uploads(), 2);
  EXPECT_EQ(usage(0).weight_uploads, 2);
  EXPECT_TRUE(identityRunIsRight(runSession, again, 5));
  sinter_session_destroy(again);
}

// A module whose kernels keep state between launches (a stream-K kernel's NAME_arrivals
// counters) is loaded once more for each session, so that sessions running at once count into
// counters of their own; a module without state is loaded once per device. (On the H200, sharing
// such a module between the sessions of a pool gave wrong outputs under concurrency.)
TEST_F(DeviceShareTest, ModulesWithStateAreLoadedOnceMorePerSession) {
  Manifest manifest = cudaIdentityManifest();
  auto text = [](const std::string &s) { return std::vector<uint8_t>(s.c_str(), s.c_str() + s.size() + 1); };
  manifest.cudaModules = {CudaModule{{CudaBinary{"compute_75", true, text(".entry plain")}}},
                          CudaModule{{CudaBinary{"compute_75", true, text(".global split_arrivals; .entry split")}}}};
  manifest.kernels = {Kernel{"plain", "cuda-c", {"Add"}, 0}, Kernel{"split", "cuda-c", {"MatMul"}, 1}};
  const std::string model = path("stateful.so");
  writeArtifact(manifest, model);
  FakeCuda &fake = FakeCuda::instance();
  ASSERT_EQ(fake.modulesLoaded.load(), 0);
  sinter_model *loaded = nullptr;
  ASSERT_EQ(sinter_model_load(model.c_str(), &loaded), SINTER_OK) << sinter_last_error();
  sinter_session_options options;
  sinter_session_options_init(&options);
  std::vector<sinter_session *> sessions;
  for (int i = 0; i < 3; ++i) {
    sinter_session *made = nullptr;
    ASSERT_EQ(sinter_session_create(loaded, &options, &made), SINTER_OK) << sinter_last_error();
    sessions.push_back(made);
    // Both modules once for the device, and the module with state once more per session.
    EXPECT_EQ(fake.modulesLoaded.load(), 2 + i + 1) << "after session " << i;
  }
  for (size_t i = 0; i < sessions.size(); ++i)
    EXPECT_TRUE(identityRunIsRight(runSession, sessions[i], int(i))) << "session " << i;
  sinter_session_destroy(sessions[0]);
  EXPECT_EQ(fake.modulesLoaded.load(), 2 + 2);
  sinter_session_destroy(sessions[1]);
  sinter_session_destroy(sessions[2]);
  EXPECT_EQ(fake.modulesLoaded.load(), 0);
  EXPECT_EQ(fake.liveAllocations(), 0u);
  sinter_model_free(loaded);
}

TEST_F(DeviceShareTest, EachDeviceHasItsOwnCopy) {
  sinter_session *first = session(0), *second = session(1), *third = session(1);
  EXPECT_EQ(uploads(), 2);
  EXPECT_EQ(fake().contextRetains.load(), 2);
  EXPECT_EQ(usage(0).sessions, 1);
  EXPECT_EQ(usage(1).sessions, 2);
  EXPECT_EQ(usage(1).weight_uploads, 1);
  for (sinter_session *each : {first, second, third})
    EXPECT_TRUE(identityRunIsRight(runSession, each, 3));
  sinter_session_destroy(first);
  EXPECT_EQ(usage(0).weight_bytes, 0u);
  EXPECT_EQ(usage(1).weight_bytes, manifest_.weights.size());
  sinter_session_destroy(second);
  sinter_session_destroy(third);
  EXPECT_EQ(fake().liveAllocations(), 0u);

  // A device that does not exist is named, and leaves nothing behind.
  sinter_session_options options;
  sinter_session_options_init(&options);
  options.device = 5;
  sinter_session *none = nullptr;
  EXPECT_EQ(sinter_session_create(loaded_, &options, &none), SINTER_ERROR_NO_DEVICE);
  EXPECT_TRUE(contains(sinter_last_error(), "device 5")) << sinter_last_error();
  EXPECT_EQ(usage(5).weight_uploads, 0);
  EXPECT_EQ(fake().contextRetains.load(), 0);
  sinter_device_usage negative{};
  EXPECT_EQ(sinter_model_device_usage(loaded_, -1, &negative), SINTER_ERROR_INVALID_ARGUMENT);
}

TEST_F(DeviceShareTest, ConcurrentFirstSessionsUploadOnce) {
  constexpr int kThreads = 64;
  std::vector<sinter_session *> sessions(kThreads, nullptr);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i)
    threads.emplace_back([&, i] { sinter_session_create(loaded_, nullptr, &sessions[size_t(i)]); });
  for (std::thread &thread : threads)
    thread.join();
  for (sinter_session *each : sessions)
    ASSERT_NE(each, nullptr);
  EXPECT_EQ(uploads(), 1);
  EXPECT_EQ(usage(0).sessions, kThreads);
  EXPECT_EQ(fake().liveBytes(), manifest_.weights.size() + kThreads * manifest_.arenaBytes);
  for (sinter_session *each : sessions)
    sinter_session_destroy(each);
  EXPECT_EQ(fake().liveAllocations(), 0u);
}

TEST_F(DeviceShareTest, APoolsSessionsShareTheWeights) {
  sinter_pool_options options;
  sinter_pool_options_init(&options);
  sinter_pool *pool = nullptr;
  ASSERT_EQ(sinter_pool_create(loaded_, &options, 8, &pool), SINTER_OK) << sinter_last_error();
  std::vector<int> wrong(16, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 16; ++t)
    threads.emplace_back([&, t] {
      for (int run = 0; run < 20; ++run)
        wrong[size_t(t)] += !identityRunIsRight(run % 2 ? runPoolOnDevice : runPool, pool,
                                                t * 100 + run);
    });
  for (std::thread &thread : threads)
    thread.join();
  EXPECT_EQ(wrong, std::vector<int>(16, 0));
  int32_t made = sinter_pool_session_count(pool);
  EXPECT_GE(made, 1);
  EXPECT_LE(made, 8);
  EXPECT_EQ(usage(0).sessions, made);
  EXPECT_EQ(uploads(), 1);
  sinter_pool_free(pool);
  EXPECT_EQ(usage(0).sessions, 0);
  EXPECT_EQ(fake().liveAllocations(), 0u);
}

TEST_F(DeviceShareTest, RunsWithBuffersInHostAndDeviceMemoryAndCopiesBetweenThem) {
  // The fake's device memory is host memory, so one array stands in for either kind; what is
  // checked is that each kind goes through its own copy and the outputs come out right.
  sinter_session *made = session(0);
  ASSERT_NE(made, nullptr);
  float x[6], xOut[6] = {}, bias[3] = {};
  int64_t ids[4], idsOut[4] = {};
  for (int i = 0; i < 6; ++i)
    x[i] = float(i) * 0.75f;
  for (int i = 0; i < 4; ++i)
    ids[i] = 40 + i;
  sinter_tensor inputs[2] = {tensorOf(x, sizeof(x), SINTER_FLOAT32, {2, 3}),
                             tensorOf(ids, sizeof(ids), SINTER_INT64, {4})};
  sinter_tensor outputs[3] = {tensorOf(xOut, sizeof(xOut), SINTER_FLOAT32, {2, 3}),
                              tensorOf(idsOut, sizeof(idsOut), SINTER_INT64, {4}),
                              tensorOf(bias, sizeof(bias), SINTER_FLOAT32, {3})};
  int32_t inputMemory[2] = {SINTER_MEMORY_DEVICE, SINTER_MEMORY_HOST};
  int32_t outputMemory[3] = {SINTER_MEMORY_HOST, SINTER_MEMORY_DEVICE, SINTER_MEMORY_HOST};
  ASSERT_EQ(sinter_session_run_memory(made, inputs, inputMemory, 2, outputs, outputMemory, 3),
            SINTER_OK)
      << sinter_last_error();
  EXPECT_EQ(std::memcmp(x, xOut, sizeof(x)), 0);
  EXPECT_EQ(std::memcmp(ids, idsOut, sizeof(ids)), 0);
  EXPECT_EQ(bias[1], -1.25f);

  float copied[6] = {};
  ASSERT_EQ(sinter_session_copy(made, copied, SINTER_MEMORY_HOST, x, SINTER_MEMORY_DEVICE, sizeof(x)),
            SINTER_OK)
      << sinter_last_error();
  EXPECT_EQ(std::memcmp(copied, x, sizeof(x)), 0);
  int32_t bad[2] = {7, SINTER_MEMORY_HOST};
  EXPECT_EQ(sinter_session_run_memory(made, inputs, bad, 2, outputs, nullptr, 3),
            SINTER_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(sinter_last_error()).find("input 0's memory is 7"), std::string::npos)
      << sinter_last_error();
  EXPECT_EQ(sinter_session_copy(made, nullptr, SINTER_MEMORY_HOST, x, SINTER_MEMORY_DEVICE, 4),
            SINTER_ERROR_INVALID_ARGUMENT);
  sinter_session_destroy(made);
}

namespace {

/// y = x for x f32[3, n], n bucketed {2, 4} and paddable: plan 0 at n = 2, plan 1 at n = 4, each
/// one copy. The bucketed axis is not the first, so a padded run's copies are strided.
Manifest bucketedCopyManifest(Target target) {
  Manifest manifest = target == Target::Cuda ? cudaIdentityManifest() : identityManifest();
  manifest.weights.clear();
  manifest.weightTable.clear();
  auto tensor = [](const char *name, int64_t n, uint64_t offset) {
    TensorSignature signature = sinter::testing::signature(name, DType::Float32, {3, n}, offset);
    signature.dimSymbols = {"", "n"};
    return signature;
  };
  manifest.inputs = {tensor("x", 2, 0)};
  manifest.outputs = {tensor("y", 2, 256)};
  manifest.arenaBytes = 512;
  manifest.steps = {copyStep({Region::Arena, 0}, {Region::Arena, 256}, 24)};
  Plan plan;
  plan.inputs = {tensor("x", 4, 0)};
  plan.outputs = {tensor("y", 4, 256)};
  plan.arenaBytes = 512;
  plan.steps = {copyStep({Region::Arena, 0}, {Region::Arena, 256}, 48)};
  manifest.additionalPlans = {plan};
  manifest.symbols = {{"n", {2, 4}, true, ""}};
  return manifest;
}

/// Runs the bucketed copy model at n = 2, 3 (padded into 4) and 4, twice each (the second run of
/// a CUDA plan replays its graph), and checks y == x every time.
void expectBucketedCopies(sinter_session *session) {
  for (int repeat = 0; repeat < 2; ++repeat)
    for (int64_t n : {2, 3, 4, 3}) {
      std::vector<float> x(size_t(3 * n)), y(size_t(3 * n), -1.0f);
      for (size_t i = 0; i < x.size(); ++i)
        x[i] = float(i + 1) + 0.25f * float(n);
      sinter_tensor input = tensorOf(x.data(), x.size() * 4, SINTER_FLOAT32, {3, n});
      sinter_tensor output = tensorOf(y.data(), y.size() * 4, SINTER_FLOAT32, {3, n});
      ASSERT_EQ(sinter_session_run_host(session, &input, 1, &output, 1), SINTER_OK)
          << sinter_last_error();
      EXPECT_EQ(x, y) << "n = " << n;
    }
  float x[15] = {}, y[15] = {};
  sinter_tensor input = tensorOf(x, sizeof(x), SINTER_FLOAT32, {3, 5});
  sinter_tensor output = tensorOf(y, sizeof(y), SINTER_FLOAT32, {3, 5});
  EXPECT_EQ(sinter_session_run_host(session, &input, 1, &output, 1), SINTER_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(sinter_last_error()).find("above the largest bucket"), std::string::npos)
      << sinter_last_error();
}

} // namespace

/// Writes the bucketed copy model for `target`, loads it and runs expectBucketedCopies on a session.
void runBucketedCopies(const std::string &model, Target target) {
  writeArtifact(bucketedCopyManifest(target), model);
  sinter_model *loaded = nullptr;
  ASSERT_EQ(sinter_model_load(model.c_str(), &loaded), SINTER_OK) << sinter_last_error();
  sinter_session *made = nullptr;
  EXPECT_EQ(sinter_session_create(loaded, nullptr, &made), SINTER_OK) << sinter_last_error();
  if (made)
    expectBucketedCopies(made);
  sinter_session_destroy(made);
  sinter_model_free(loaded);
}

TEST_F(DeviceShareTest, BucketedPlansRunExactAndPaddedWithAGraphEach) {
  runBucketedCopies(path("cuda_buckets.so"), Target::Cuda);
}

TEST_F(DeviceShareTest, BucketedPlansRunExactAndPaddedOnTheCpu) {
  runBucketedCopies(path("cpu_buckets.so"), Target::Cpu);
}
