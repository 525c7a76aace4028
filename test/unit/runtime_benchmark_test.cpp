// sinter_session_benchmark and sinter_session_profile through the C ABI on a CPU artifact whose kernels are C compiled by the
// system compiler: argument checks, one latency per timed run, and that every run sees its
// inputs although the plan overwrites the input's arena slot (as a memory plan may once an input
// is dead). The kernels count what they see in globals of the artifact, read back through a third
// exported kernel.
#include "artifact_test_util.h"
#include "sinter/package/writer.h"
#include "sinter/runtime.h"
#include "sinter/runtime.hpp"

#include <gtest/gtest.h>

#include <dlfcn.h>

using namespace sinter;
using namespace sinter::package;
using namespace sinter::testing;


namespace {

constexpr int64_t kElements = 256;

/// check_input counts the elements of x (arena 0) that are not i + 1 and every element it saw;
/// clobber writes y = 2 x, then overwrites x with -1; read_counts stores both counts.
const char *kSource = R"(
#include <stdint.h>
static int64_t wrong_elements = 0, seen_elements = 0;
void check_input(void *const *args, int64_t begin, int64_t end) {
  const float *x = (const float *)args[0];
  for (int64_t i = begin; i < end; ++i) {
    if (x[i] != (float)(i + 1))
      ++wrong_elements;
    ++seen_elements;
  }
}
void clobber(void *const *args, int64_t begin, int64_t end) {
  float *x = (float *)args[0];
  float *y = (float *)args[1];
  for (int64_t i = begin; i < end; ++i) {
    y[i] = 2 * x[i];
    x[i] = -1;
  }
}
void read_counts(void *const *args, int64_t begin, int64_t end) {
  int64_t *out = (int64_t *)args[0];
  out[0] = wrong_elements;
  out[1] = seen_elements;
}
)";

Manifest clobberingManifest() {
  Manifest manifest;
  manifest.target = Target::Cpu;
  manifest.producer = "runtime_benchmark_test";
  manifest.cpuLevels = {"x86-64"};
  manifest.inputs = {signature("x", DType::Float32, {kElements}, 0)};
  manifest.outputs = {signature("y", DType::Float32, {kElements}, 1024)};
  manifest.arenaBytes = 2048;
  for (const char *name : {"check_input", "clobber", "read_counts"}) {
    Kernel kernel;
    kernel.name = name;
    kernel.generator = "test-cc";
    manifest.kernels.push_back(kernel);
  }
  Launch check;
  check.kernel = 0;
  check.parallelExtent = kElements;
  check.args = {{Region::Arena, 0}};
  check.argBytes = {kElements * 4};
  Launch clobber;
  clobber.kernel = 1;
  clobber.parallelExtent = kElements;
  clobber.args = {{Region::Arena, 0}, {Region::Arena, 1024}};
  clobber.argBytes = {kElements * 4, kElements * 4};
  manifest.steps = {check, clobber};
  return manifest;
}

/// Calls the loaded artifact's read_counts: counts[0] wrong elements seen, counts[1] all seen. The
/// artifact is loaded already, so dlopen returns the runtime's handle, with its globals.
void readCounts(const std::string &path, int64_t counts[2]) {
  void *library = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(library, nullptr) << dlerror();
  auto read =
      reinterpret_cast<void (*)(void *const *, int64_t, int64_t)>(dlsym(library, "read_counts"));
  ASSERT_NE(read, nullptr);
  void *args[] = {counts};
  read(args, 0, 1);
  dlclose(library);
}

struct Fixture {
  sinter_model *model = nullptr;
  sinter_session *session = nullptr;
  sinter_session_options options{};
  std::vector<float> x = std::vector<float>(kElements);
  sinter_tensor input{};
  ~Fixture() {
    sinter_session_destroy(session);
    sinter_model_free(model);
  }
};

class RuntimeBenchmarkTest : public ArtifactTest {
protected:
  /// Writes the clobbering artifact (clobberingManifest) and returns its path; "" when there is
  /// no C compiler to build its kernels.
  std::string writeClobberingArtifact() {
    std::string object = compileC(folder_.string(), "kernels", kSource);
    if (object.empty())
      return "";
    std::string artifact = path("clobber.so");
    writeArtifact(clobberingManifest(), artifact, {object});
    return artifact;
  }

  /// Loads `artifact` into `f` with a one-thread session (the kernels' counters are not atomic)
  /// and an input of 1, 2, 3, ...
  void openSingleThreaded(Fixture &f, const std::string &artifact) {
    ASSERT_EQ(sinter_model_load(artifact.c_str(), &f.model), SINTER_OK) << sinter_last_error();
    sinter_session_options_init(&f.options);
    f.options.threads = 1;
    ASSERT_EQ(sinter_session_create(f.model, &f.options, &f.session), SINTER_OK) << sinter_last_error();
    for (int64_t i = 0; i < kElements; ++i)
      f.x[i] = float(i + 1);
    f.input = tensorOf(f.x.data(), f.x.size() * 4, SINTER_FLOAT32, {kElements});
  }
};

} // namespace

TEST_F(RuntimeBenchmarkTest, EveryRunSeesItsInputsAndIsTimed) {
  std::string path = writeClobberingArtifact();
  if (path.empty())
    GTEST_SKIP() << "no C compiler on this machine";
  Fixture f;
  ASSERT_NO_FATAL_FAILURE(openSingleThreaded(f, path));

  std::vector<double> latencies(5, -1.0);
  ASSERT_EQ(sinter_session_benchmark(f.session, &f.input, 1, 3, 5, latencies.data()), SINTER_OK)
      << sinter_last_error();
  double total = 0;
  for (double latency : latencies) {
    EXPECT_GE(latency, 0.0);
    total += latency;
  }
  EXPECT_GT(total, 0.0);
  for (int64_t i = 0; i < kElements; ++i) // the caller's inputs are not written
    ASSERT_EQ(f.x[i], float(i + 1));

  int64_t counts[2] = {-1, -1};
  ASSERT_NO_FATAL_FAILURE(readCounts(path, counts));
  EXPECT_EQ(counts[1], 8 * kElements) << "3 warm-up and 5 timed runs of the plan";
  EXPECT_EQ(counts[0], 0) << "a run saw the previous run's clobbered input";

  // The C++ wrapper: one latency per timed run.
  sinter::rt::Model model(path);
  sinter::rt::Session session(model, &f.options);
  EXPECT_EQ(session.benchmark({f.input}, 0, 7).size(), 7u);
}

TEST_F(RuntimeBenchmarkTest, BadArgumentsAreNamed) {
  std::string path = writeClobberingArtifact();
  if (path.empty())
    GTEST_SKIP() << "no C compiler on this machine";
  Fixture f;
  ASSERT_EQ(sinter_model_load(path.c_str(), &f.model), SINTER_OK) << sinter_last_error();
  ASSERT_EQ(sinter_session_create(f.model, nullptr, &f.session), SINTER_OK);
  f.input = tensorOf(f.x.data(), f.x.size() * 4, SINTER_FLOAT32, {kElements});
  double latencies[4] = {};
  auto expectInvalid = [&](sinter_status status, const std::string &mention) {
    EXPECT_EQ(status, SINTER_ERROR_INVALID_ARGUMENT);
    EXPECT_TRUE(contains(sinter_last_error(), mention)) << sinter_last_error();
  };
  expectInvalid(sinter_session_benchmark(nullptr, &f.input, 1, 0, 4, latencies), "null");
  expectInvalid(sinter_session_benchmark(f.session, &f.input, 1, -1, 4, latencies), "warmup");
  expectInvalid(sinter_session_benchmark(f.session, &f.input, 1, 0, 0, latencies), "iterations");
  expectInvalid(sinter_session_benchmark(f.session, &f.input, 1, 0, 4, nullptr), "latencies_ms");
  expectInvalid(sinter_session_benchmark(f.session, &f.input, 2, 0, 4, latencies), "2 were given");
  expectInvalid(sinter_session_benchmark(f.session, nullptr, 1, 0, 4, latencies), "null");
  sinter_tensor wrongShape = tensorOf(f.x.data(), 128 * 4, SINTER_FLOAT32, {128});
  expectInvalid(sinter_session_benchmark(f.session, &wrongShape, 1, 0, 4, latencies), "'x'");
  sinter_tensor wrongType = tensorOf(f.x.data(), f.x.size() * 4, SINTER_INT32, {kElements});
  expectInvalid(sinter_session_benchmark(f.session, &wrongType, 1, 0, 4, latencies), "dtype");
  for (double latency : latencies)
    EXPECT_EQ(latency, 0.0) << "nothing is written when the arguments are bad";
}

// sinter_session_profile: one median per step, every step of every run executed once with its
// inputs restored first (the counters say so), step names from the manifest, and bad arguments
// named before anything runs.
TEST_F(RuntimeBenchmarkTest, ProfileTimesEveryStepOfEveryRun) {
  std::string path = writeClobberingArtifact();
  if (path.empty())
    GTEST_SKIP() << "no C compiler on this machine";
  Fixture f;
  ASSERT_NO_FATAL_FAILURE(openSingleThreaded(f, path));

  ASSERT_EQ(sinter_model_step_count(f.model), 2);
  EXPECT_STREQ(sinter_model_step_name(f.model, 0), "check_input");
  EXPECT_STREQ(sinter_model_step_name(f.model, 1), "clobber");
  EXPECT_EQ(sinter_model_step_name(f.model, 2), nullptr);
  EXPECT_TRUE(contains(sinter_last_error(), "out of range")) << sinter_last_error();

  double stepMs[3] = {-1, -1, -7};
  ASSERT_EQ(sinter_session_profile(f.session, &f.input, 1, 2, 4, stepMs, 3), SINTER_OK)
      << sinter_last_error();
  EXPECT_GE(stepMs[0], 0.0);
  EXPECT_GE(stepMs[1], 0.0);
  EXPECT_EQ(stepMs[2], -7.0) << "only the plan's steps are written";

  int64_t counts[2] = {-1, -1};
  ASSERT_NO_FATAL_FAILURE(readCounts(path, counts));
  EXPECT_EQ(counts[1], 6 * kElements) << "2 warm-up and 4 timed runs, each step once";
  EXPECT_EQ(counts[0], 0) << "a profiled run saw the previous run's clobbered input";

  double tooSmall[1] = {};
  EXPECT_EQ(sinter_session_profile(f.session, &f.input, 1, 0, 4, tooSmall, 1),
            SINTER_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(sinter_last_error(), "must hold 2")) << sinter_last_error();
  EXPECT_EQ(sinter_session_profile(f.session, &f.input, 1, 0, 4, nullptr, 2),
            SINTER_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(sinter_session_profile(f.session, &f.input, 1, 0, 0, stepMs, 2),
            SINTER_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(sinter_last_error(), "iterations")) << sinter_last_error();

  sinter::rt::Model model(path);
  sinter::rt::Session session(model, &f.options);
  EXPECT_EQ(model.stepNames(), (std::vector<std::string>{"check_input", "clobber"}));
  EXPECT_EQ(session.profile(model.get(), {f.input}, 0, 3).size(), 2u);
}
