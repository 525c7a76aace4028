// What the artifact writer promises about model.so: the same bytes for the same manifest, no
// NEEDED entry beyond glibc, only the entry points exported, large weights intact and aligned,
// and no file left behind by a failed write.
#include "artifact_test_util.h"
#include "elf_reader.h"
#include "sinter/package/file_digest.h"
#include "sinter/package/format.h"
#include "sinter/package/writer.h"
#include "sinter/runtime.hpp"
#include "sinter/support/error.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <set>

using namespace sinter;
using namespace sinter::package;
using namespace sinter::testing;
using WriterTest = ArtifactTest;

namespace {

const std::set<std::string> kAllowedNeeded = {"libc.so.6", "libm.so.6", "libdl.so.2",
                                              "libpthread.so.0"};

} // namespace

TEST_F(WriterTest, WritingTwiceGivesIdenticalBytes) {
  writeArtifact(identityManifest(), path("first.so"));
  fs::create_directory(folder_ / "elsewhere");
  writeArtifact(identityManifest(), path("elsewhere/second_name.so"));
  std::vector<uint8_t> first = readFile(path("first.so"));
  EXPECT_FALSE(first.empty());
  EXPECT_EQ(first, readFile(path("elsewhere/second_name.so")));
  // No temporary file is left beside the outputs.
  size_t entries = 0;
  for ([[maybe_unused]] const auto &entry : fs::directory_iterator(folder_))
    ++entries;
  EXPECT_EQ(entries, 2u);

  std::string object = compileC(folder_.string(), "kernel", kKernelSource);
  if (object.empty())
    GTEST_SKIP() << "no C compiler for the kernel part";
  writeArtifact(kernelManifest(), path("k1.so"), {object});
  writeArtifact(kernelManifest(), path("k2.so"), {object});
  EXPECT_EQ(readFile(path("k1.so")), readFile(path("k2.so")));
}

TEST_F(WriterTest, ArtifactsNeedOnlyGlibcAndExportOnlyTheirEntryPoints) {
  std::string identity = path("identity.so");
  writeArtifact(identityManifest(), identity);
  sinter::testing::ElfDynamicInfo info = sinter::testing::readElfDynamicInfo(identity);
  EXPECT_TRUE(info.needed.empty());
  EXPECT_EQ(info.exported, std::vector<std::string>{"sinter_artifact"});

  std::string object = compileC(folder_.string(), "kernel", kKernelSource);
  if (object.empty())
    GTEST_SKIP() << "no C compiler for the kernel part";
  std::string withKernel = path("kernel.so");
  writeArtifact(kernelManifest(), withKernel, {object});
  info = sinter::testing::readElfDynamicInfo(withKernel);
  for (const std::string &needed : info.needed)
    EXPECT_TRUE(kAllowedNeeded.count(needed)) << "model.so needs " << needed;
  EXPECT_NE(std::find(info.needed.begin(), info.needed.end(), "libm.so.6"), info.needed.end())
      << "expf comes from libm";
  // kernel_helper is a global of the object, but not an entry point: it stays local.
  EXPECT_EQ(info.exported, (std::vector<std::string>{"scale_exp", "sinter_artifact"}));
}

TEST_F(WriterTest, WriterFailuresLeaveNoFileBehind) {
  Manifest manifest = kernelManifest();
  EXPECT_THROW(writeArtifact(manifest, path("nokernel.so")), UserError); // scale_exp undefined
  EXPECT_THROW(writeArtifact(manifest, path("missing.so"), {path("missing.o")}), UserError);
  EXPECT_THROW(writeArtifact(identityManifest(), path("no/such/folder/model.so")), UserError);
  EXPECT_THROW(writeArtifact(identityManifest(), folder_.string()), UserError);
  Manifest cuda = identityManifest();
  cuda.target = Target::Cuda;
  EXPECT_THROW(writeArtifact(cuda, path("cuda.so"), {path("x.o")}), UserError);
  EXPECT_TRUE(fs::is_empty(folder_)) << "a failed write left a file";
  try {
    writeArtifact(manifest, path("nokernel.so"));
  } catch (const UserError &error) {
    EXPECT_TRUE(contains(error.what(), "scale_exp")) << error.what();
  }
}

TEST_F(WriterTest, LargeWeightsAreAlignedAndIntact) {
  // 24 MiB of weights; the last 64 bytes are copied to the output.
  Manifest manifest;
  manifest.target = Target::Cpu;
  manifest.cpuLevels = {"x86-64"};
  manifest.outputs = {signature("tail", DType::Uint8, {64}, 0)};
  manifest.arenaBytes = 64;
  manifest.weights.resize(24u << 20);
  for (size_t i = 0; i < manifest.weights.size(); i += 4096)
    manifest.weights[i] = static_cast<uint8_t>(i >> 12);
  for (size_t i = 0; i < 64; ++i)
    manifest.weights[manifest.weights.size() - 64 + i] = static_cast<uint8_t>(200 - i);
  manifest.steps = {
      copyStep({Region::Weights, manifest.weights.size() - 64}, {Region::Arena, 0}, 64)};
  std::string model = path("large.so");
  writeArtifact(manifest, model);

  // The blob as the loader maps it: page-aligned, so the weights are kWeightAlignment-aligned in
  // memory, and byte for byte what was written.
  void *library = dlopen(model.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(library, nullptr) << dlerror();
  auto accessor = reinterpret_cast<const void *(*)(uint64_t *)>(dlsym(library, "sinter_artifact"));
  ASSERT_NE(accessor, nullptr);
  uint64_t size = 0;
  const auto *blob = static_cast<const uint8_t *>(accessor(&size));
  EXPECT_EQ(accessor(nullptr), blob);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(blob) % 4096, 0u);
  ArtifactView view = parseArtifactView({blob, size});
  EXPECT_EQ(reinterpret_cast<uintptr_t>(view.weights.data()) % kWeightAlignment, 0u);
  EXPECT_TRUE(std::equal(view.weights.begin(), view.weights.end(), manifest.weights.begin(),
                         manifest.weights.end()));
  dlclose(library);

  sinter::rt::Model loaded(model);
  sinter::rt::Session session(loaded);
  std::vector<uint8_t> tail(64);
  std::vector<sinter_tensor> inputs;
  std::vector<sinter_tensor> outputs = {sinter::rt::makeTensor(loaded.outputs()[0], tail.data())};
  session.runHost(inputs, outputs);
  for (size_t i = 0; i < 64; ++i)
    EXPECT_EQ(int(tail[i]), int(200 - i));
}

TEST_F(WriterTest, ArtifactsWithoutKernelObjectsAreWrittenDirectlyAndLoad) {
  // A CUDA artifact has no CPU objects, so no linker runs (shared_object.cpp): the loader must
  // still accept it, find the one export through its hash tables, and see the exact blob.
  Manifest manifest = identityManifest();
  manifest.target = Target::Cuda;
  manifest.cpuLevels.clear();
  manifest.weights.assign(3 * 4096 + 5, 0);
  for (size_t i = 0; i < manifest.weights.size(); ++i)
    manifest.weights[i] = static_cast<uint8_t>(i * 7 + 1);
  std::string model = path("cuda.so");
  writeArtifact(manifest, model);
  ElfDynamicInfo info = readElfDynamicInfo(model);
  EXPECT_TRUE(info.needed.empty());
  EXPECT_EQ(info.exported, std::vector<std::string>{"sinter_artifact"});

  std::vector<uint8_t> expected = serializeManifestHead(manifest);
  expected.insert(expected.end(), manifest.weights.begin(), manifest.weights.end());
  void *library = dlopen(model.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(library, nullptr) << dlerror();
  auto accessor = reinterpret_cast<const void *(*)(uint64_t *)>(dlsym(library, "sinter_artifact"));
  ASSERT_NE(accessor, nullptr);
  EXPECT_EQ(dlsym(library, "sinter_artifacts"), nullptr); // a near name is not found
  uint64_t size = 0;
  const auto *blob = static_cast<const uint8_t *>(accessor(&size));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(blob) % 4096, 0u);
  EXPECT_EQ(std::vector<uint8_t>(blob, blob + size), expected);
  dlclose(library);

  // Readable by others as a linker's output is (a server may run as another user): 0777 less
  // the umask, not mkstemp's 0600.
  mode_t mask = umask(022);
  umask(mask);
  struct stat status {};
  ASSERT_EQ(stat(model.c_str(), &status), 0);
  EXPECT_EQ(status.st_mode & 0777, 0777 & ~mask);

  // The file checks the runtime makes before dlopen, digest included.
  int descriptor = open(model.c_str(), O_RDONLY);
  ASSERT_GE(descriptor, 0);
  EXPECT_EQ(findArtifactFileProblem(descriptor, fs::file_size(model)), "");
  close(descriptor);
}

TEST_F(WriterTest, BorrowedWeightsWriteTheSameBytesAsOwnedOnes) {
  // The compiler's manifests borrow their constants (Manifest::borrowedWeights); the file must
  // not tell, through the direct writer and through the linker alike.
  auto borrowing = [](Manifest manifest, std::vector<uint8_t> &source) {
    source = manifest.weights;
    const std::span<const uint8_t> all(source);
    manifest.weights.clear();
    manifest.borrowedWeights = {all.subspan(0, 100), all.subspan(100)};
    return manifest;
  };
  std::vector<uint8_t> source;
  writeArtifact(identityManifest(), path("owned.so"));
  writeArtifact(borrowing(identityManifest(), source), path("borrowed.so"));
  EXPECT_EQ(readFile(path("owned.so")), readFile(path("borrowed.so")));

  std::string object = compileC(folder_.string(), "kernel", kKernelSource);
  if (object.empty())
    GTEST_SKIP() << "no C compiler for the kernel part";
  Manifest kernel = kernelManifest();
  ASSERT_GT(kernel.weights.size(), 100u);
  writeArtifact(kernel, path("k_owned.so"), {object});
  writeArtifact(borrowing(kernel, source), path("k_borrowed.so"), {object});
  EXPECT_EQ(readFile(path("k_owned.so")), readFile(path("k_borrowed.so")));
}
