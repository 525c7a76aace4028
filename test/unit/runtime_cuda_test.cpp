// CUDA sessions end to end, on a machine with a GPU (every test skips without one): a plan of two
// kernels in two modules (PTX JIT and, when ptxas is at hand, a cubin for the device), a weights
// region and a copy; host and device buffers; several streams; CUDA graph replay against plain
// launches; errors for binaries no GPU can run; sessions sharing one upload of the weights, and a
// pool run from 64 threads. Expected values are computed here on the host.
#include "../../runtime/cuda_driver.h"
#include "artifact_test_util.h"
#include "sinter/package/writer.h"
#include "sinter/runtime.h"

#include <gtest/gtest.h>

#include <cmath>
#include <thread>

using namespace sinter;
using namespace sinter::package;
using namespace sinter::testing;
namespace cuda = sinter::rt::cuda;

namespace {

constexpr int kElements = 1000;

// nvcc -ptx -arch=compute_75 of
//   scale_add(x, w, t): t[i] = x[i] * w[i] + 1      square(t, y): y[i] = t[i] * t[i]
// for i < 1000, with the PTX version lowered to 7.0 so older drivers take it too.
const char *kPtx = R"(.version 7.0
.target sm_75
.address_size 64
.visible .entry scale_add(.param .u64 p0, .param .u64 p1, .param .u64 p2)
{
  .reg .pred %p<2>;
  .reg .f32 %f<4>;
  .reg .b32 %r<5>;
  .reg .b64 %rd<11>;
  ld.param.u64 %rd1, [p0];
  ld.param.u64 %rd2, [p1];
  ld.param.u64 %rd3, [p2];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mad.lo.s32 %r1, %r2, %r3, %r4;
  setp.gt.s32 %p1, %r1, 999;
  @%p1 bra DONE0;
  cvta.to.global.u64 %rd4, %rd1;
  mul.wide.s32 %rd5, %r1, 4;
  add.s64 %rd6, %rd4, %rd5;
  cvta.to.global.u64 %rd7, %rd2;
  add.s64 %rd8, %rd7, %rd5;
  ld.global.f32 %f1, [%rd8];
  ld.global.f32 %f2, [%rd6];
  fma.rn.f32 %f3, %f2, %f1, 0f3F800000;
  cvta.to.global.u64 %rd9, %rd3;
  add.s64 %rd10, %rd9, %rd5;
  st.global.f32 [%rd10], %f3;
DONE0:
  ret;
}
.visible .entry square(.param .u64 p0, .param .u64 p1)
{
  .reg .pred %p<2>;
  .reg .f32 %f<3>;
  .reg .b32 %r<5>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [p0];
  ld.param.u64 %rd2, [p1];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mad.lo.s32 %r1, %r2, %r3, %r4;
  setp.gt.s32 %p1, %r1, 999;
  @%p1 bra DONE1;
  cvta.to.global.u64 %rd3, %rd1;
  mul.wide.s32 %rd4, %r1, 4;
  add.s64 %rd5, %rd3, %rd4;
  ld.global.f32 %f1, [%rd5];
  mul.f32 %f2, %f1, %f1;
  cvta.to.global.u64 %rd6, %rd2;
  add.s64 %rd7, %rd6, %rd4;
  st.global.f32 [%rd7], %f2;
DONE1:
  ret;
}
)";

CudaBinary ptx(const std::string &arch, const std::string &text) {
  return CudaBinary{arch, true, std::vector<uint8_t>(text.begin(), text.end())};
}

float weightAt(int i) { return 0.125f * float(i % 9) - 0.5f; }

/// x (f32 [1000]) -> t = x * w + 1 (scale_add, module 0) -> y = t * t (square, module 1); the
/// outputs are y and a copy of t.
Manifest cudaManifest(std::vector<CudaBinary> module0, std::vector<CudaBinary> module1) {
  const uint64_t bytes = kElements * 4;
  Manifest manifest;
  manifest.target = Target::Cuda;
  manifest.producer = "runtime_cuda_test";
  manifest.inputs = {signature("x", DType::Float32, {kElements}, 0)};
  manifest.outputs = {signature("y", DType::Float32, {kElements}, 8192),
                      signature("t", DType::Float32, {kElements}, 12288)};
  manifest.arenaBytes = 16384;
  manifest.weights.resize(bytes);
  for (int i = 0; i < kElements; ++i) {
    float w = weightAt(i);
    std::memcpy(manifest.weights.data() + 4 * i, &w, 4);
  }
  manifest.cudaModules = {CudaModule{std::move(module0)}, CudaModule{std::move(module1)}};
  Kernel scaleAdd;
  scaleAdd.name = "scale_add";
  scaleAdd.cudaModule = 0;
  Kernel square;
  square.name = "square";
  square.cudaModule = 1;
  manifest.kernels = {scaleAdd, square};
  Launch first;
  first.kernel = 0;
  first.grid[0] = 4;
  first.block[0] = 256;
  first.args = {{Region::Arena, 0}, {Region::Weights, 0}, {Region::Arena, 4096}};
  first.argBytes = {bytes, bytes, bytes};
  Launch second;
  second.kernel = 1;
  second.grid[0] = 4;
  second.block[0] = 256;
  second.args = {{Region::Arena, 4096}, {Region::Arena, 8192}};
  second.argBytes = {bytes, bytes};
  manifest.steps = {first, second, copyStep({Region::Arena, 4096}, {Region::Arena, 12288}, bytes)};
  return manifest;
}

std::vector<float> inputFor(int run) {
  std::vector<float> x(kElements);
  for (int i = 0; i < kElements; ++i)
    x[size_t(i)] = 0.01f * float((i * 7 + run * 13) % 101) - 0.5f;
  return x;
}

void expectOutputs(const std::vector<float> &x, const std::vector<float> &y,
                   const std::vector<float> &t, const std::string &where) {
  for (int i = 0; i < kElements; ++i) {
    float expectedT = std::fma(x[size_t(i)], weightAt(i), 1.0f);
    ASSERT_EQ(t[size_t(i)], expectedT) << where << ", t[" << i << "]";
    ASSERT_EQ(y[size_t(i)], expectedT * expectedT) << where << ", y[" << i << "]";
  }
}

/// One run of inputFor(seed) on host buffers through `run(input, outputs)`; true when it
/// succeeds with the right y and t (for tests that count failures across threads).
template <typename Run> bool hostRunIsRight(Run run, int seed) {
  std::vector<float> x = inputFor(seed), y(kElements), t(kElements);
  sinter_tensor input = tensorOf(x.data(), x.size() * 4, SINTER_FLOAT32, {kElements});
  sinter_tensor outputs[2] = {tensorOf(y.data(), y.size() * 4, SINTER_FLOAT32, {kElements}),
                              tensorOf(t.data(), t.size() * 4, SINTER_FLOAT32, {kElements})};
  if (run(&input, outputs) != SINTER_OK)
    return false;
  for (int i = 0; i < kElements; ++i) {
    float expectedT = std::fma(x[size_t(i)], weightAt(i), 1.0f);
    if (t[size_t(i)] != expectedT || y[size_t(i)] != expectedT * expectedT)
      return false;
  }
  return true;
}

/// The driver, or null when this machine has no usable GPU.
const cuda::Driver *gpuDriver() {
  try {
    const cuda::Driver &driver = cuda::driver();
    int count = 0;
    if (driver.cuDeviceGetCount(&count) != cuda::CUDA_SUCCESS || count == 0)
      return nullptr;
    return &driver;
  } catch (...) {
    return nullptr;
  }
}

#define CU_CHECK(call) ASSERT_EQ((call), cuda::CUDA_SUCCESS) << #call

class CudaRuntimeTest : public ArtifactTest {
protected:
  void SetUp() override {
    ArtifactTest::SetUp();
    driver_ = gpuDriver();
    if (!driver_)
      GTEST_SKIP() << "no CUDA driver or GPU on this machine";
  }

  /// Host-buffer run: returns {y, t}.
  std::pair<std::vector<float>, std::vector<float>> runHost(sinter_session *session,
                                                            std::vector<float> &x) {
    std::vector<float> y(kElements, -7.0f), t(kElements, -7.0f);
    sinter_tensor input = tensorOf(x.data(), x.size() * 4, SINTER_FLOAT32, {kElements});
    sinter_tensor outputs[2] = {tensorOf(y.data(), y.size() * 4, SINTER_FLOAT32, {kElements}),
                                tensorOf(t.data(), t.size() * 4, SINTER_FLOAT32, {kElements})};
    EXPECT_EQ(sinter_session_run_host(session, &input, 1, outputs, 2), SINTER_OK)
        << sinter_last_error();
    return {y, t};
  }

  const cuda::Driver *driver_ = nullptr;
};

std::string findPtxas() {
  for (const char *candidate : {"/usr/local/cuda/bin/ptxas", "/usr/bin/ptxas"})
    if (fs::exists(candidate))
      return candidate;
  return std::system("command -v ptxas > /dev/null 2>&1") == 0 ? "ptxas" : "";
}

} // namespace

TEST_F(CudaRuntimeTest, PtxPlanRunsWithAndWithoutGraphs) {
  std::string model = path("cuda.so");
  writeArtifact(cudaManifest({ptx("compute_75", kPtx)}, {ptx("compute_75", kPtx)}), model);
  sinter_model *loaded = nullptr;
  ASSERT_EQ(sinter_model_load(model.c_str(), &loaded), SINTER_OK) << sinter_last_error();
  for (int useGraphs : {1, 0}) {
    sinter_session_options options;
    sinter_session_options_init(&options);
    options.use_graphs = useGraphs;
    sinter_session *session = nullptr;
    ASSERT_EQ(sinter_session_create(loaded, &options, &session), SINTER_OK) << sinter_last_error();
    // Run 1 launches directly, run 2 captures the graph, runs 3.. replay it.
    for (int run = 0; run < 6; ++run) {
      std::vector<float> x = inputFor(run);
      auto [y, t] = runHost(session, x);
      expectOutputs(x, y, t, "graphs " + std::to_string(useGraphs) + " run " + std::to_string(run));
    }
    sinter_session_destroy(session);
  }
  sinter_model_free(loaded);
}

TEST_F(CudaRuntimeTest, DeviceBuffersOnSeveralStreams) {
  std::string model = path("cuda.so");
  writeArtifact(cudaManifest({ptx("compute_75", kPtx)}, {ptx("compute_75", kPtx)}), model);
  sinter_model *loaded = nullptr;
  ASSERT_EQ(sinter_model_load(model.c_str(), &loaded), SINTER_OK) << sinter_last_error();
  sinter_session *session = nullptr;
  ASSERT_EQ(sinter_session_create(loaded, nullptr, &session), SINTER_OK) << sinter_last_error();

  const cuda::Driver &d = *driver_;
  cuda::CUdevice device;
  cuda::CUcontext context;
  CU_CHECK(d.cuDeviceGet(&device, 0));
  CU_CHECK(d.cuDevicePrimaryCtxRetain(&context, device));
  CU_CHECK(d.cuCtxPushCurrent(context));
  cuda::CUstream streams[2];
  for (cuda::CUstream &stream : streams)
    CU_CHECK(d.cuStreamCreate(&stream, 0));
  const size_t bytes = kElements * 4;
  cuda::CUdeviceptr x, y, t;
  CU_CHECK(d.cuMemAlloc(&x, bytes));
  CU_CHECK(d.cuMemAlloc(&y, bytes));
  CU_CHECK(d.cuMemAlloc(&t, bytes));

  // Alternate the caller's stream, including the legacy default stream (null).
  for (int run = 0; run < 8; ++run) {
    cuda::CUstream stream = run % 3 == 2 ? nullptr : streams[run % 3];
    std::vector<float> hostX = inputFor(run), hostY(kElements), hostT(kElements);
    CU_CHECK(d.cuMemcpyHtoDAsync(x, hostX.data(), bytes, stream));
    sinter_tensor input = tensorOf(reinterpret_cast<void *>(x), bytes, SINTER_FLOAT32, {kElements});
    sinter_tensor outputs[2] = {
        tensorOf(reinterpret_cast<void *>(y), bytes, SINTER_FLOAT32, {kElements}),
        tensorOf(reinterpret_cast<void *>(t), bytes, SINTER_FLOAT32, {kElements})};
    ASSERT_EQ(sinter_session_run(session, &input, 1, outputs, 2, stream), SINTER_OK)
        << sinter_last_error();
    CU_CHECK(d.cuMemcpyDtoHAsync(hostY.data(), y, bytes, stream));
    CU_CHECK(d.cuMemcpyDtoHAsync(hostT.data(), t, bytes, stream));
    CU_CHECK(d.cuStreamSynchronize(stream));
    expectOutputs(hostX, hostY, hostT, "run " + std::to_string(run));
  }

  sinter_session_destroy(session);
  sinter_model_free(loaded);
  d.cuMemFree(x);
  d.cuMemFree(y);
  d.cuMemFree(t);
  for (cuda::CUstream stream : streams)
    d.cuStreamDestroy(stream);
  cuda::CUcontext popped;
  d.cuCtxPopCurrent(&popped);
  d.cuDevicePrimaryCtxRelease(device);
}

TEST_F(CudaRuntimeTest, CubinForTheDeviceIsChosenOverPtx) {
  std::string ptxas = findPtxas();
  if (ptxas.empty())
    GTEST_SKIP() << "no ptxas to build a cubin";
  const cuda::Driver &d = *driver_;
  cuda::CUdevice device;
  int major = 0, minor = 0;
  CU_CHECK(d.cuDeviceGet(&device, 0));
  CU_CHECK(d.cuDeviceGetAttribute(&major, cuda::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device));
  CU_CHECK(d.cuDeviceGetAttribute(&minor, cuda::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device));
  std::string arch = std::to_string(major * 10 + minor);
  std::ofstream(path("kernels.ptx")) << kPtx;
  std::string command = ptxas + " -arch=sm_" + arch + " -o '" + path("kernels.cubin") + "' '" +
                        path("kernels.ptx") + "'";
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  std::vector<uint8_t> cubin = readFile(path("kernels.cubin"));
  ASSERT_FALSE(cubin.empty());

  // Module 0's PTX does not compile, so only its cubin can make the plan run; an older minor
  // cubin of the same major architecture is there too and must lose to the exact one.
  std::vector<CudaBinary> module0 = {ptx("compute_" + arch, "this is not PTX"),
                                     CudaBinary{"sm_" + arch, false, cubin}};
  if (minor > 0)
    module0.push_back(CudaBinary{"sm_" + std::to_string(major * 10), false, {0xDE, 0xAD}});
  std::string model = path("cubin.so");
  writeArtifact(cudaManifest(module0, {ptx("compute_75", kPtx)}), model);
  sinter_model *loaded = nullptr;
  ASSERT_EQ(sinter_model_load(model.c_str(), &loaded), SINTER_OK) << sinter_last_error();
  sinter_session *session = nullptr;
  ASSERT_EQ(sinter_session_create(loaded, nullptr, &session), SINTER_OK) << sinter_last_error();
  for (int run = 0; run < 3; ++run) {
    std::vector<float> x = inputFor(run);
    auto [y, t] = runHost(session, x);
    expectOutputs(x, y, t, "cubin run " + std::to_string(run));
  }
  sinter_session_destroy(session);
  sinter_model_free(loaded);
}

TEST_F(CudaRuntimeTest, UnusableCodeAndDevicesAreNamed) {
  auto sessionStatus = [&](Manifest manifest, int device) {
    std::string model = path("bad.so");
    writeArtifact(manifest, model);
    sinter_model *loaded = nullptr;
    EXPECT_EQ(sinter_model_load(model.c_str(), &loaded), SINTER_OK) << sinter_last_error();
    sinter_session_options options;
    sinter_session_options_init(&options);
    options.device = device;
    sinter_session *session = nullptr;
    sinter_status status = sinter_session_create(loaded, &options, &session);
    EXPECT_EQ(session, nullptr);
    sinter_model_free(loaded);
    return status;
  };
  // A cubin for an architecture no current GPU has, and no PTX.
  EXPECT_EQ(sessionStatus(cudaManifest({CudaBinary{"sm_35", false, {1, 2}}}, {ptx("compute_75", kPtx)}), 0),
            SINTER_ERROR_UNSUPPORTED);
  EXPECT_TRUE(contains(sinter_last_error(), "sm_35")) << sinter_last_error();
  // PTX that does not compile: the driver's JIT error.
  EXPECT_EQ(sessionStatus(cudaManifest({ptx("compute_75", "garbage")}, {ptx("compute_75", kPtx)}), 0),
            SINTER_ERROR_DEVICE);
  EXPECT_TRUE(contains(sinter_last_error(), "cuModuleLoadDataEx")) << sinter_last_error();
  // A device that does not exist.
  EXPECT_EQ(sessionStatus(cudaManifest({ptx("compute_75", kPtx)}, {ptx("compute_75", kPtx)}), 99),
            SINTER_ERROR_NO_DEVICE);
  EXPECT_TRUE(contains(sinter_last_error(), "device 99")) << sinter_last_error();
}

TEST_F(CudaRuntimeTest, SessionsRunConcurrentlyFromThreads) {
  std::string model = path("cuda.so");
  writeArtifact(cudaManifest({ptx("compute_75", kPtx)}, {ptx("compute_75", kPtx)}), model);
  sinter_model *loaded = nullptr;
  ASSERT_EQ(sinter_model_load(model.c_str(), &loaded), SINTER_OK) << sinter_last_error();
  std::vector<std::thread> threads;
  std::vector<int> failures(4, 0);
  for (int index = 0; index < 4; ++index) {
    threads.emplace_back([&, index] {
      sinter_session *session = nullptr;
      if (sinter_session_create(loaded, nullptr, &session) != SINTER_OK) {
        failures[size_t(index)] = -1;
        return;
      }
      for (int run = 0; run < 20; ++run)
        failures[size_t(index)] += !hostRunIsRight(
            [&](const sinter_tensor *input, sinter_tensor *outputs) {
              return sinter_session_run_host(session, input, 1, outputs, 2);
            },
            run + 100 * index);
      sinter_session_destroy(session);
    });
  }
  for (std::thread &thread : threads)
    thread.join();
  sinter_model_free(loaded);
  EXPECT_EQ(failures, std::vector<int>(4, 0));
}

TEST_F(CudaRuntimeTest, SessionsOnADeviceShareOneUploadOfTheWeights) {
  std::string model = path("cuda.so");
  writeArtifact(cudaManifest({ptx("compute_75", kPtx)}, {ptx("compute_75", kPtx)}), model);
  sinter_model *loaded = nullptr;
  ASSERT_EQ(sinter_model_load(model.c_str(), &loaded), SINTER_OK) << sinter_last_error();
  std::vector<sinter_session *> sessions(4, nullptr);
  for (sinter_session *&session : sessions)
    ASSERT_EQ(sinter_session_create(loaded, nullptr, &session), SINTER_OK) << sinter_last_error();
  sinter_device_usage usage{};
  ASSERT_EQ(sinter_model_device_usage(loaded, 0, &usage), SINTER_OK) << sinter_last_error();
  EXPECT_EQ(usage.sessions, 4);
  EXPECT_EQ(usage.weight_uploads, 1);
  EXPECT_EQ(usage.weight_bytes, uint64_t(kElements) * 4);
  EXPECT_EQ(usage.arena_bytes, 4u * 16384u);
  for (size_t i = 0; i < sessions.size(); ++i)
    for (int run = 0; run < 3; ++run) { // direct, captured, replayed: all on the shared weights
      std::vector<float> x = inputFor(run + int(i) * 10);
      auto [y, t] = runHost(sessions[i], x);
      expectOutputs(x, y, t, "session " + std::to_string(i) + " run " + std::to_string(run));
    }
  for (sinter_session *session : sessions)
    sinter_session_destroy(session);
  ASSERT_EQ(sinter_model_device_usage(loaded, 0, &usage), SINTER_OK);
  EXPECT_EQ(usage.sessions, 0);
  EXPECT_EQ(usage.weight_bytes, 0u);
  sinter_model_free(loaded);
}

TEST_F(CudaRuntimeTest, APoolRunsFromSixtyFourThreads) {
  std::string model = path("cuda.so");
  writeArtifact(cudaManifest({ptx("compute_75", kPtx)}, {ptx("compute_75", kPtx)}), model);
  sinter_model *loaded = nullptr;
  ASSERT_EQ(sinter_model_load(model.c_str(), &loaded), SINTER_OK) << sinter_last_error();
  sinter_pool *pool = nullptr;
  ASSERT_EQ(sinter_pool_create(loaded, nullptr, 8, &pool), SINTER_OK) << sinter_last_error();
  std::vector<int> failures(64, 0);
  std::vector<std::thread> threads;
  for (int index = 0; index < 64; ++index)
    threads.emplace_back([&, index] {
      for (int run = 0; run < 10; ++run)
        failures[size_t(index)] += !hostRunIsRight(
            [&](const sinter_tensor *input, sinter_tensor *outputs) {
              return sinter_pool_run_host(pool, input, 1, outputs, 2);
            },
            run + 100 * index);
    });
  for (std::thread &thread : threads)
    thread.join();
  EXPECT_EQ(failures, std::vector<int>(64, 0));
  sinter_device_usage usage{};
  ASSERT_EQ(sinter_model_device_usage(loaded, 0, &usage), SINTER_OK);
  EXPECT_EQ(usage.sessions, sinter_pool_session_count(pool));
  EXPECT_LE(usage.sessions, 8);
  EXPECT_EQ(usage.weight_uploads, 1);
  sinter_pool_free(pool);
  sinter_model_free(loaded);
}
