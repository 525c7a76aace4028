// Shared by the artifact writer and runtime tests: a fixture with a scratch folder, small
// manifests (an identity model of Copy steps, a model with one CPU kernel written in C) and the
// system C compiler to build that kernel.
#pragma once

#include "sinter/package/manifest.h"
#include "sinter/runtime.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace sinter::testing {

namespace fs = std::filesystem;
using namespace sinter::package;

/// A fresh scratch folder per test, removed afterwards.
class ArtifactTest : public ::testing::Test {
protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "sinter-artifact-test-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    folder_ = pattern;
  }
  void TearDown() override {
    std::error_code error;
    fs::remove_all(folder_, error);
  }
  std::string path(const std::string &name) const { return (folder_ / name).string(); }

  fs::path folder_;
};

inline std::vector<uint8_t> readFile(const std::string &path) {
  std::ifstream stream(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(stream)),
                              std::istreambuf_iterator<char>());
}

inline bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

inline TensorSignature signature(const std::string &name, DType dtype, std::vector<int64_t> dims,
                                 uint64_t arenaOffset) {
  TensorSignature tensor;
  tensor.name = name;
  tensor.dtype = dtype;
  tensor.dims = std::move(dims);
  tensor.arenaOffset = arenaOffset;
  return tensor;
}

inline Copy copyStep(BufferRef source, BufferRef destination, uint64_t bytes) {
  Copy copy;
  copy.source = source;
  copy.destination = destination;
  copy.bytes = bytes;
  return copy;
}

/// x (f32 [2,3]) and ids (i64 [4]) copied to x_out and ids_out, plus an output `bias` (f32 [3])
/// copied from the weights: {0.5, -1.25, 3}.
inline Manifest identityManifest() {
  Manifest manifest;
  manifest.target = Target::Cpu;
  manifest.producer = "runtime_test";
  manifest.cpuLevels = {"x86-64"};
  manifest.inputs = {signature("x", DType::Float32, {2, 3}, 0),
                     signature("ids", DType::Int64, {4}, 256)};
  manifest.outputs = {signature("x_out", DType::Float32, {2, 3}, 512),
                      signature("ids_out", DType::Int64, {4}, 768),
                      signature("bias", DType::Float32, {3}, 1024)};
  manifest.arenaBytes = 1280;
  float bias[3] = {0.5f, -1.25f, 3.0f};
  manifest.weights.resize(256 + sizeof(bias));
  std::memcpy(manifest.weights.data() + 256, bias, sizeof(bias));
  manifest.weightTable = {{"bias", 256, sizeof(bias)}};
  manifest.steps = {copyStep({Region::Arena, 0}, {Region::Arena, 512}, 24),
                    copyStep({Region::Arena, 256}, {Region::Arena, 768}, 32),
                    copyStep({Region::Weights, 256}, {Region::Arena, 1024}, 12)};
  return manifest;
}

/// A caller's tensor over `data`.
inline sinter_tensor tensorOf(void *data, size_t bytes, sinter_dtype dtype,
                              std::vector<int64_t> dims) {
  sinter_tensor tensor{};
  tensor.data = data;
  tensor.byte_size = bytes;
  tensor.dtype = dtype;
  tensor.rank = static_cast<int32_t>(dims.size());
  for (size_t i = 0; i < dims.size(); ++i)
    tensor.dims[i] = dims[i];
  return tensor;
}

/// Compiles C source to an object with the system compiler; "" if that fails (no compiler).
inline std::string compileC(const std::string &folder, const std::string &name,
                            const std::string &source, const std::string &flags = "-O1") {
  std::string sourcePath = folder + "/" + name + ".c";
  std::string objectPath = folder + "/" + name + ".o";
  std::ofstream(sourcePath) << source;
  std::string command = "cc -c -fPIC " + flags + " -o '" + objectPath + "' '" + sourcePath + "'";
  return std::system(command.c_str()) == 0 ? objectPath : "";
}

/// A CPU kernel in C. args[0] x (f32), args[1] w (f32, in the weights), args[2] y (f32),
/// args[3] visits (i32): y[i] = expf(x[i]) * w[i] + kernel_helper(i); visits[i] += 1 (so each
/// index must be visited exactly once per run). kernel_helper is a global that is not an entry
/// point.
inline const char *kKernelSource = R"(
#include <math.h>
#include <stdint.h>
float kernel_helper(int64_t i) { return (float)(i % 3); }
void scale_exp(void *const *args, int64_t begin, int64_t end) {
  const float *x = (const float *)args[0];
  const float *w = (const float *)args[1];
  float *y = (float *)args[2];
  int32_t *visits = (int32_t *)args[3];
  for (int64_t i = begin; i < end; ++i) {
    y[i] = expf(x[i]) * w[i] + kernel_helper(i);
    visits[i] += 1;
  }
}
)";

inline constexpr int64_t kKernelElements = 1000;

/// One launch of scale_exp over kKernelElements: input x, weights w, outputs y and visits.
inline Manifest kernelManifest() {
  const uint64_t n = kKernelElements, bytes = n * 4;
  Manifest manifest;
  manifest.target = Target::Cpu;
  manifest.producer = "runtime_test";
  manifest.cpuLevels = {"x86-64"};
  manifest.inputs = {signature("x", DType::Float32, {int64_t(n)}, 0)};
  manifest.outputs = {signature("y", DType::Float32, {int64_t(n)}, 4096),
                      signature("visits", DType::Int32, {int64_t(n)}, 8192)};
  manifest.arenaBytes = 12288;
  manifest.weights.resize(bytes);
  for (uint64_t i = 0; i < n; ++i) {
    float w = 0.25f * float(i % 7) - 0.5f;
    std::memcpy(manifest.weights.data() + 4 * i, &w, 4);
  }
  Kernel kernel;
  kernel.name = "scale_exp";
  kernel.generator = "test-cc";
  manifest.kernels = {kernel};
  Launch launch;
  launch.kernel = 0;
  launch.parallelExtent = int64_t(n);
  launch.args = {{Region::Arena, 0}, {Region::Weights, 0}, {Region::Arena, 4096},
                 {Region::Arena, 8192}};
  launch.argBytes = {bytes, bytes, bytes, bytes};
  manifest.steps = {launch};
  return manifest;
}

} // namespace sinter::testing
