// libsinter_rt through its C ABI, on artifacts made by the writer: an identity model of Copy
// steps, a CPU kernel compiled from C by the system compiler, argument validation, corrupt and
// foreign files, CPU levels, a CUDA artifact on a machine without a driver, the shared library's
// own ELF needs and exports, and the C++ wrapper.
#include "artifact_test_util.h"
#include "elf_reader.h"
#include "sinter/package/file_digest.h"
#include "sinter/package/format.h"
#include "sinter/package/writer.h"
#include "sinter/runtime.h"
#include "sinter/runtime.hpp"
#include "sinter/support/error.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <thread>

using namespace sinter;
using namespace sinter::package;
using namespace sinter::testing;
using RuntimeTest = ArtifactTest;

namespace {

/// A model and a session, freed at the end of the scope.
struct Loaded {
  sinter_model *model = nullptr;
  sinter_session *session = nullptr;
  ~Loaded() {
    sinter_session_destroy(session);
    sinter_model_free(model);
  }
};

/// Buffers for the identity model, with valid tensors pointing at them.
struct IdentityBuffers {
  float x[6] = {1.5f, -2.0f, 3.25f, 0.0f, -0.5f, 100.0f};
  int64_t ids[4] = {7, -3, int64_t(1) << 40, 0};
  float xOut[6] = {};
  int64_t idsOut[4] = {};
  float bias[3] = {};
  std::vector<sinter_tensor> inputs, outputs;
  IdentityBuffers() {
    inputs = {tensorOf(x, sizeof(x), SINTER_FLOAT32, {2, 3}),
              tensorOf(ids, sizeof(ids), SINTER_INT64, {4})};
    outputs = {tensorOf(xOut, sizeof(xOut), SINTER_FLOAT32, {2, 3}),
               tensorOf(idsOut, sizeof(idsOut), SINTER_INT64, {4}),
               tensorOf(bias, sizeof(bias), SINTER_FLOAT32, {3})};
  }
  sinter_status run(sinter_session *session) {
    return sinter_session_run(session, inputs.data(), int32_t(inputs.size()), outputs.data(),
                              int32_t(outputs.size()), nullptr);
  }
};

bool libcudaLoads() {
  void *library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (library)
    dlclose(library);
  return library != nullptr;
}

} // namespace

TEST_F(RuntimeTest, IdentityModelRunsThroughTheCAbi) {
  std::string model = path("identity.so");
  writeArtifact(identityManifest(), model);

  Loaded loaded;
  ASSERT_EQ(sinter_model_load(model.c_str(), &loaded.model), SINTER_OK) << sinter_last_error();
  EXPECT_EQ(sinter_model_target(loaded.model), SINTER_TARGET_CPU);
  ASSERT_EQ(sinter_model_input_count(loaded.model), 2);
  ASSERT_EQ(sinter_model_output_count(loaded.model), 3);
  sinter_tensor_info info;
  ASSERT_EQ(sinter_model_input_info(loaded.model, 1, &info), SINTER_OK);
  EXPECT_STREQ(info.name, "ids");
  EXPECT_EQ(info.dtype, SINTER_INT64);
  EXPECT_EQ(info.rank, 1);
  EXPECT_EQ(info.dims[0], 4);
  ASSERT_EQ(sinter_model_output_info(loaded.model, 0, &info), SINTER_OK);
  EXPECT_STREQ(info.name, "x_out");
  EXPECT_EQ(info.dtype, SINTER_FLOAT32);
  EXPECT_EQ(info.rank, 2);
  EXPECT_EQ(info.dims[0], 2);
  EXPECT_EQ(info.dims[1], 3);

  for (int threads : {1, 0, 3}) {
    sinter_session_options options;
    sinter_session_options_init(&options);
    options.threads = threads;
    sinter_session *session = nullptr;
    ASSERT_EQ(sinter_session_create(loaded.model, &options, &session), SINTER_OK)
        << sinter_last_error();
    for (int run = 0; run < 2; ++run) {
      IdentityBuffers buffers;
      buffers.x[0] += float(run);
      buffers.ids[3] = 99 + run;
      ASSERT_EQ(buffers.run(session), SINTER_OK) << sinter_last_error();
      EXPECT_EQ(0, std::memcmp(buffers.xOut, buffers.x, sizeof(buffers.x)));
      EXPECT_EQ(0, std::memcmp(buffers.idsOut, buffers.ids, sizeof(buffers.ids)));
      EXPECT_EQ(buffers.bias[0], 0.5f);
      EXPECT_EQ(buffers.bias[1], -1.25f);
      EXPECT_EQ(buffers.bias[2], 3.0f);
    }
    IdentityBuffers host;
    ASSERT_EQ(sinter_session_run_host(session, host.inputs.data(), 2, host.outputs.data(), 3),
              SINTER_OK);
    EXPECT_EQ(host.idsOut[2], int64_t(1) << 40);
    sinter_session_destroy(session);
  }
}

TEST_F(RuntimeTest, EveryBadArgumentIsNamed) {
  std::string model = path("identity.so");
  writeArtifact(identityManifest(), model);
  Loaded loaded;
  ASSERT_EQ(sinter_model_load(model.c_str(), &loaded.model), SINTER_OK);
  ASSERT_EQ(sinter_session_create(loaded.model, nullptr, &loaded.session), SINTER_OK);

  auto expectInvalid = [&](auto edit, const std::string &part) {
    IdentityBuffers buffers;
    int32_t inputCount = 2, outputCount = 3;
    const sinter_tensor *inputs = buffers.inputs.data();
    sinter_tensor *outputs = buffers.outputs.data();
    void *stream = nullptr;
    edit(buffers, inputs, inputCount, outputs, outputCount, stream);
    sinter_status status =
        sinter_session_run(loaded.session, inputs, inputCount, outputs, outputCount, stream);
    EXPECT_EQ(status, SINTER_ERROR_INVALID_ARGUMENT) << part;
    EXPECT_TRUE(contains(sinter_last_error(), part))
        << "message '" << sinter_last_error() << "' does not mention '" << part << "'";
    // Nothing ran: the outputs are untouched.
    EXPECT_EQ(buffers.xOut[0], 0.0f);
  };
  using Inputs = const sinter_tensor *;
  expectInvalid([](IdentityBuffers &b, Inputs &, int32_t &, sinter_tensor *&, int32_t &,
                   void *&) { b.inputs[0].data = nullptr; },
                "input 0 ('x'): data is null");
  expectInvalid([](IdentityBuffers &b, Inputs &, int32_t &, sinter_tensor *&, int32_t &,
                   void *&) { b.inputs[1].dtype = SINTER_INT32; },
                "input 1 ('ids'): dtype is i32 but the model expects i64");
  expectInvalid([](IdentityBuffers &b, Inputs &, int32_t &, sinter_tensor *&, int32_t &,
                   void *&) { b.inputs[0].rank = 3; },
                "input 0 ('x'): rank is 3 but the model expects 2");
  expectInvalid([](IdentityBuffers &b, Inputs &, int32_t &, sinter_tensor *&, int32_t &,
                   void *&) { b.inputs[0].rank = 1000; },
                "rank is 1000");
  expectInvalid([](IdentityBuffers &b, Inputs &, int32_t &, sinter_tensor *&, int32_t &,
                   void *&) { b.inputs[0].dims[1] = 4; },
                "input 0 ('x'): dims are [2,4] but the model expects [2,3]");
  expectInvalid([](IdentityBuffers &b, Inputs &, int32_t &, sinter_tensor *&, int32_t &,
                   void *&) { b.inputs[0].byte_size = 20; },
                "input 0 ('x'): byte_size is 20 but [2,3] f32 needs 24");
  expectInvalid([](IdentityBuffers &b, Inputs &, int32_t &, sinter_tensor *&, int32_t &,
                   void *&) { b.outputs[2].data = nullptr; },
                "output 2 ('bias'): data is null");
  expectInvalid([](IdentityBuffers &b, Inputs &, int32_t &, sinter_tensor *&, int32_t &,
                   void *&) { b.outputs[1].byte_size = 64; },
                "output 1 ('ids_out'): byte_size is 64");
  expectInvalid([](IdentityBuffers &, Inputs &, int32_t &count, sinter_tensor *&, int32_t &,
                   void *&) { count = 1; },
                "the model has 2 inputs but 1 were given");
  expectInvalid([](IdentityBuffers &, Inputs &, int32_t &, sinter_tensor *&, int32_t &count,
                   void *&) { count = -4; },
                "the model has 3 outputs but -4 were given");
  expectInvalid([](IdentityBuffers &, Inputs &inputs, int32_t &, sinter_tensor *&, int32_t &,
                   void *&) { inputs = nullptr; },
                "the input array is null");
  expectInvalid([](IdentityBuffers &, Inputs &, int32_t &, sinter_tensor *&outputs, int32_t &,
                   void *&) { outputs = nullptr; },
                "the output array is null");
  int dummy;
  expectInvalid([&](IdentityBuffers &, Inputs &, int32_t &, sinter_tensor *&, int32_t &,
                    void *&stream) { stream = &dummy; },
                "stream");
}

TEST_F(RuntimeTest, BadHandlesAndPointersAreErrorsNotCrashes) {
  std::string model = path("identity.so");
  writeArtifact(identityManifest(), model);
  sinter_model *handle = reinterpret_cast<sinter_model *>(0x1);
  EXPECT_EQ(sinter_model_load(nullptr, &handle), SINTER_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(handle, nullptr);
  EXPECT_EQ(sinter_model_load("", &handle), SINTER_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(sinter_model_load(model.c_str(), nullptr), SINTER_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(sinter_model_input_count(nullptr), -1);
  EXPECT_TRUE(contains(sinter_last_error(), "model handle is null"));
  EXPECT_EQ(sinter_model_output_count(nullptr), -1);
  sinter_tensor_info info;
  EXPECT_EQ(sinter_model_input_info(nullptr, 0, &info), SINTER_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(sinter_session_create(nullptr, nullptr, nullptr), SINTER_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(sinter_session_run(nullptr, nullptr, 0, nullptr, 0, nullptr),
            SINTER_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(sinter_last_error(), "session handle is null"));
  EXPECT_EQ(sinter_session_run_host(nullptr, nullptr, 0, nullptr, 0),
            SINTER_ERROR_INVALID_ARGUMENT);
  sinter_model_free(nullptr);
  sinter_session_destroy(nullptr);
  sinter_session_options_init(nullptr);

  Loaded loaded;
  ASSERT_EQ(sinter_model_load(model.c_str(), &loaded.model), SINTER_OK);
  EXPECT_EQ(sinter_model_input_info(loaded.model, 2, &info), SINTER_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(sinter_last_error(), "input index 2 is out of range"));
  EXPECT_EQ(sinter_model_output_info(loaded.model, -1, &info), SINTER_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(sinter_model_output_info(loaded.model, 0, nullptr), SINTER_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(sinter_session_create(loaded.model, nullptr, nullptr), SINTER_ERROR_INVALID_ARGUMENT);
  sinter_session_options options;
  sinter_session_options_init(&options);
  options.threads = -2;
  sinter_session *session = reinterpret_cast<sinter_session *>(0x1);
  EXPECT_EQ(sinter_session_create(loaded.model, &options, &session), SINTER_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(session, nullptr);
  EXPECT_TRUE(contains(sinter_last_error(), "threads is -2"));
}

TEST_F(RuntimeTest, MissingForeignAndCorruptFilesAreRefused) {
  sinter_model *model = nullptr;
  EXPECT_EQ(sinter_model_load(path("missing.so").c_str(), &model), SINTER_ERROR_IO);
  EXPECT_TRUE(contains(sinter_last_error(), "missing.so"));
  EXPECT_EQ(sinter_model_load(folder_.c_str(), &model), SINTER_ERROR_IO);

  std::ofstream(path("garbage.so")) << "this is not an ELF file";
  EXPECT_EQ(sinter_model_load(path("garbage.so").c_str(), &model), SINTER_ERROR_INVALID_ARTIFACT);

  // A real shared object without sinter_artifact.
  std::string object = compileC(folder_.string(), "plain", "int plain_function(void) { return 1; }\n");
  if (!object.empty()) {
    std::string library = path("plain.so");
    ASSERT_EQ(std::system(("cc -shared -o '" + library + "' '" + object + "'").c_str()), 0);
    // Refused before dlopen (so none of its code runs): it has no digest trailer.
    EXPECT_EQ(sinter_model_load(library.c_str(), &model), SINTER_ERROR_INVALID_ARTIFACT);
    EXPECT_TRUE(contains(sinter_last_error(), "no sinter digest trailer")) << sinter_last_error();
    // With a valid trailer it reaches dlopen, and lacks the accessor.
    appendFileDigest(library);
    EXPECT_EQ(sinter_model_load(library.c_str(), &model), SINTER_ERROR_INVALID_ARTIFACT);
    EXPECT_TRUE(contains(sinter_last_error(), "no sinter_artifact symbol")) << sinter_last_error();
  }

  // A model.so whose manifest was damaged after writing: one metadata byte flipped in the file.
  std::string damaged = path("damaged.so");
  writeArtifact(identityManifest(), damaged);
  std::vector<uint8_t> bytes = readFile(damaged);
  const std::string magic = "SINTERAF";
  auto found = std::search(bytes.begin(), bytes.end(), magic.begin(), magic.end());
  ASSERT_NE(found, bytes.end());
  bytes[static_cast<size_t>(found - bytes.begin()) + kArtifactHeaderBytes + 2] ^= 0x10;
  std::ofstream(damaged, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char *>(bytes.data()), std::streamsize(bytes.size()));
  EXPECT_EQ(sinter_model_load(damaged.c_str(), &model), SINTER_ERROR_INVALID_ARTIFACT);
  EXPECT_TRUE(contains(sinter_last_error(), "checksum")) << sinter_last_error();
  EXPECT_EQ(model, nullptr);
}

TEST_F(RuntimeTest, CudaArtifactWithoutADriverIsNoDevice) {
  if (libcudaLoads())
    GTEST_SKIP() << "libcuda.so.1 loads on this machine, so the no-driver path cannot be tested";
  Manifest manifest;
  manifest.target = Target::Cuda;
  manifest.cudaArchs = {"sm_90"};
  manifest.inputs = {signature("x", DType::Float32, {4}, 0)};
  manifest.outputs = {signature("y", DType::Float32, {4}, 256)};
  manifest.arenaBytes = 512;
  manifest.cudaModules = {CudaModule{{{"sm_90", false, {1, 2, 3}}}}};
  Kernel kernel;
  kernel.name = "relu_0";
  manifest.kernels = {kernel};
  Launch launch;
  launch.args = {{Region::Arena, 0}, {Region::Arena, 256}};
  launch.argBytes = {16, 16};
  manifest.steps = {launch};
  std::string model = path("cuda.so");
  writeArtifact(manifest, model);
  EXPECT_TRUE(sinter::testing::readElfDynamicInfo(model).needed.empty());

  Loaded loaded;
  ASSERT_EQ(sinter_model_load(model.c_str(), &loaded.model), SINTER_OK) << sinter_last_error();
  EXPECT_EQ(sinter_model_target(loaded.model), SINTER_TARGET_CUDA);
  EXPECT_EQ(sinter_session_create(loaded.model, nullptr, &loaded.session), SINTER_ERROR_NO_DEVICE);
  EXPECT_TRUE(contains(sinter_last_error(), "libcuda.so.1")) << sinter_last_error();
  EXPECT_EQ(loaded.session, nullptr);
}

TEST_F(RuntimeTest, SharedRuntimeNeedsOnlyGlibcAndExportsOnlyTheCAbi) {
  std::string library = std::string(SINTER_BINARY_DIR) + "/lib/libsinter_rt.so";
  ASSERT_TRUE(fs::exists(library)) << library << " is built with the tests";
  sinter::testing::ElfDynamicInfo info = sinter::testing::readElfDynamicInfo(library);
  std::set<std::string> glibc = {"libc.so.6",      "libm.so.6",           "libdl.so.2",
                                 "libpthread.so.0", "ld-linux-x86-64.so.2"};
  for (const std::string &needed : info.needed)
    EXPECT_TRUE(glibc.count(needed)) << "libsinter_rt.so needs " << needed;
  // Every function runtime.h declares, and nothing else.
  EXPECT_EQ(info.exported.size(), 33u);
  for (const char *symbol : {"sinter_session_benchmark", "sinter_session_profile",
                             "sinter_model_step_count", "sinter_model_step_name", "sinter_model_cpu_level",
                             "sinter_runtime_abi_revision", "sinter_model_device_usage",
                             "sinter_pool_options_init", "sinter_pool_create", "sinter_pool_free",
                             "sinter_pool_run", "sinter_pool_run_host",
                             "sinter_pool_session_count", "sinter_model_symbol_count",
                             "sinter_model_symbol_info", "sinter_model_dim_symbol",
                             "sinter_model_output_shape", "sinter_session_run_memory",
                             "sinter_session_copy"})
    EXPECT_TRUE(std::count(info.exported.begin(), info.exported.end(), symbol)) << symbol;
  for (const std::string &symbol : info.exported)
    EXPECT_EQ(symbol.rfind("sinter_", 0), 0u) << "libsinter_rt.so exports " << symbol;
}

TEST_F(RuntimeTest, CpuKernelRunsOnDisjointChunksAcrossThreads) {
  std::string object = compileC(folder_.string(), "kernel", kKernelSource);
  if (object.empty())
    GTEST_SKIP() << "no C compiler on this machine";
  std::string model = path("kernel.so");
  Manifest manifest = kernelManifest();
  writeArtifact(manifest, model, {object});

  Loaded loaded;
  ASSERT_EQ(sinter_model_load(model.c_str(), &loaded.model), SINTER_OK) << sinter_last_error();
  for (int threads : {1, 4, 7}) {
    sinter_session_options options;
    sinter_session_options_init(&options);
    options.threads = threads;
    sinter_session *session = nullptr;
    ASSERT_EQ(sinter_session_create(loaded.model, &options, &session), SINTER_OK);
    for (int run = 0; run < 3; ++run) {
      std::vector<float> x(kKernelElements), y(kKernelElements, -1.0f);
      std::vector<int32_t> visits(kKernelElements, -1);
      for (int64_t i = 0; i < kKernelElements; ++i)
        x[size_t(i)] = 0.01f * float(i % 50) - 0.2f + 0.001f * float(run);
      sinter_tensor input = tensorOf(x.data(), x.size() * 4, SINTER_FLOAT32, {kKernelElements});
      sinter_tensor outputs[2] = {
          tensorOf(y.data(), y.size() * 4, SINTER_FLOAT32, {kKernelElements}),
          tensorOf(visits.data(), visits.size() * 4, SINTER_INT32, {kKernelElements})};
      ASSERT_EQ(sinter_session_run_host(session, &input, 1, outputs, 2), SINTER_OK)
          << sinter_last_error();
      for (int64_t i = 0; i < kKernelElements; ++i) {
        float w = 0.25f * float(i % 7) - 0.5f;
        float expected = std::exp(x[size_t(i)]) * w + float(i % 3);
        ASSERT_NEAR(y[size_t(i)], expected, 1e-5f * (1 + std::fabs(expected))) << i;
        // The arena starts zeroed and each run adds one visit per index.
        ASSERT_EQ(visits[size_t(i)], run + 1) << "index " << i << " with " << threads << " threads";
      }
    }
    sinter_session_destroy(session);
  }
}

/// Which x86-64 levels this CPU has, as the compiler's own builtins see it (the independent
/// truth for the loader's cpuid checks).
struct HostLevels {
  bool v2, v3, v4;
};
static HostLevels hostLevels() {
  __builtin_cpu_init();
  bool v2 = __builtin_cpu_supports("sse4.2") && __builtin_cpu_supports("popcnt") &&
            __builtin_cpu_supports("ssse3");
  bool v3 = v2 && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
            __builtin_cpu_supports("bmi2");
  bool v4 = v3 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
            __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  return {v2, v3, v4};
}

TEST_F(RuntimeTest, CpuLevelIsCheckedAgainstTheHost) {
  struct Case {
    const char *level;
    bool supported;
  };
  // The compiler's own view of this CPU is the independent truth.
  auto [v2, v3, v4] = hostLevels();
  for (Case test : {Case{"x86-64", true}, Case{"x86-64-v2", v2}, Case{"x86-64-v3", v3},
                    Case{"x86-64-v4", v4}, Case{"haswell", v3}}) {
    Manifest manifest = identityManifest();
    manifest.cpuLevels = {test.level};
    std::string model = path(std::string(test.level) + ".so");
    writeArtifact(manifest, model);
    sinter_model *loaded = nullptr;
    sinter_status status = sinter_model_load(model.c_str(), &loaded);
    EXPECT_EQ(status, test.supported ? SINTER_OK : SINTER_ERROR_UNSUPPORTED)
        << test.level << ": " << sinter_last_error();
    if (!test.supported) {
      EXPECT_TRUE(contains(sinter_last_error(), "this CPU lacks")) << sinter_last_error();
    }
    sinter_model_free(loaded);
  }
  Manifest manifest = identityManifest();
  manifest.cpuLevels = {"pentium-mmx"};
  writeArtifact(manifest, path("old.so"));
  sinter_model *loaded = nullptr;
  EXPECT_EQ(sinter_model_load(path("old.so").c_str(), &loaded), SINTER_ERROR_UNSUPPORTED);
  EXPECT_TRUE(contains(sinter_last_error(), "'pentium-mmx'"));
}

TEST_F(RuntimeTest, CpuLevelsLoadTheBestTheHostHasUpToTheCap) {
  auto [v2, v3, v4] = hostLevels();
  Manifest manifest = identityManifest();
  manifest.cpuLevels = {"x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4"};
  writeArtifact(manifest, path("levels.so"));
  auto loadedLevel = [&](const char *cap) {
    if (cap)
      setenv("SINTER_MAX_CPU_LEVEL", cap, 1);
    sinter_model *loaded = nullptr;
    sinter_status status = sinter_model_load(path("levels.so").c_str(), &loaded);
    unsetenv("SINTER_MAX_CPU_LEVEL");
    EXPECT_EQ(status, SINTER_OK) << sinter_last_error();
    std::string level = loaded && sinter_model_cpu_level(loaded) ? sinter_model_cpu_level(loaded) : "(none)";
    sinter_model_free(loaded);
    return level;
  };
  EXPECT_EQ(loadedLevel(nullptr), v4 ? "x86-64-v4" : v3 ? "x86-64-v3" : v2 ? "x86-64-v2" : "x86-64");
  EXPECT_EQ(loadedLevel("x86-64-v3"), v3 ? "x86-64-v3" : v2 ? "x86-64-v2" : "x86-64");
  EXPECT_EQ(loadedLevel("x86-64-v2"), v2 ? "x86-64-v2" : "x86-64");
  EXPECT_EQ(loadedLevel("x86-64"), "x86-64");

  manifest.cpuLevels = {"x86-64-v3", "x86-64-v4"};
  writeArtifact(manifest, path("high.so"));
  setenv("SINTER_MAX_CPU_LEVEL", "x86-64-v2", 1);
  sinter_model *loaded = nullptr;
  EXPECT_EQ(sinter_model_load(path("high.so").c_str(), &loaded), SINTER_ERROR_UNSUPPORTED);
  EXPECT_TRUE(contains(sinter_last_error(), "none at or below SINTER_MAX_CPU_LEVEL=x86-64-v2")) << sinter_last_error();
  setenv("SINTER_MAX_CPU_LEVEL", "pentium", 1);
  EXPECT_EQ(sinter_model_load(path("high.so").c_str(), &loaded), SINTER_ERROR_UNSUPPORTED);
  EXPECT_TRUE(contains(sinter_last_error(), "SINTER_MAX_CPU_LEVEL is 'pentium'")) << sinter_last_error();
  unsetenv("SINTER_MAX_CPU_LEVEL");
}

TEST_F(RuntimeTest, SessionOutlivesItsModelHandle) {
  writeArtifact(identityManifest(), path("identity.so"));
  sinter_model *model = nullptr;
  ASSERT_EQ(sinter_model_load(path("identity.so").c_str(), &model), SINTER_OK);
  sinter_session *session = nullptr;
  ASSERT_EQ(sinter_session_create(model, nullptr, &session), SINTER_OK);
  sinter_model_free(model);
  IdentityBuffers buffers;
  EXPECT_EQ(buffers.run(session), SINTER_OK);
  EXPECT_EQ(buffers.bias[2], 3.0f);
  sinter_session_destroy(session);
}

TEST_F(RuntimeTest, LastErrorIsPerThread) {
  sinter_model *model = nullptr;
  EXPECT_EQ(sinter_model_load(nullptr, &model), SINTER_ERROR_INVALID_ARGUMENT);
  std::string otherThreadError = "unset";
  std::thread([&] { otherThreadError = sinter_last_error(); }).join();
  EXPECT_EQ(otherThreadError, "");
  EXPECT_STRNE(sinter_last_error(), "");
  EXPECT_EQ(sinter_runtime_abi_version(), SINTER_ABI_VERSION);
}

TEST_F(RuntimeTest, CppWrapperThrowsWithTheStatus) {
  try {
    sinter::rt::Model model(path("missing.so"));
    FAIL() << "loading a missing file succeeded";
  } catch (const sinter::rt::Error &error) {
    EXPECT_EQ(error.status(), SINTER_ERROR_IO);
    EXPECT_TRUE(contains(error.what(), "missing.so"));
  }
  writeArtifact(identityManifest(), path("identity.so"));
  sinter::rt::Model model(path("identity.so"));
  std::vector<sinter_tensor_info> inputs = model.inputs();
  ASSERT_EQ(inputs.size(), 2u);
  sinter::rt::Session session(model);
  IdentityBuffers buffers;
  session.runHost(buffers.inputs, buffers.outputs);
  EXPECT_EQ(buffers.idsOut[0], 7);
  buffers.inputs.pop_back();
  EXPECT_THROW(session.runHost(buffers.inputs, buffers.outputs), sinter::rt::Error);
}
