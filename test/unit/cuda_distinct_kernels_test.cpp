// One kernel per distinct body, without a GPU: groups whose CUDA C is the same but for the
// kernel's name and the comment naming its buffers are compiled once and launched under one
// manifest entry; the count of toolchain runs comes from the kernel cache's counters (a run is a
// miss), and the PTX's `.entry` lines say which kernels the module holds.
#include "sinter/compiler/compiler.h"
#include "sinter/ir/graph.h"
#include "sinter/ir/infer.h"
#include "sinter/package/format.h"
#include "sinter/support/kernel_cache.h"

#include "temp_dir.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <unistd.h>

using namespace sinter;

namespace {

namespace fs = std::filesystem;

/// Two residual blocks of one shape on two inputs (Relu(x + 1) * x and the same of y), and a
/// Sigmoid of a third: three launches, two distinct bodies.
void buildRepeatedBlocks(Graph &graph) {
  Tensor one(DType::Float32, {64});
  for (int64_t i = 0; i < one.elementCount(); ++i)
    one.setDouble(i, 1.0);
  Value *constant = graph.addConstant("one", std::move(one));
  for (const char *name : {"x", "y"}) {
    Value *input = graph.addInput(name, {DType::Float32, {4, 64}});
    Node *add = graph.addNode(OpKind::Add, {input, constant}, 1, std::string(name) + "_add");
    Node *relu = graph.addNode(OpKind::Relu, {add->output()}, 1, std::string(name) + "_relu");
    Node *mul = graph.addNode(OpKind::Mul, {relu->output(), input}, 1, std::string(name) + "_mul");
    graph.addOutput(mul->output());
  }
  Value *z = graph.addInput("z", {DType::Float32, {8, 64}});
  graph.addOutput(graph.addNode(OpKind::Sigmoid, {z}, 1, "sigmoid")->output());
  inferGraph(graph);
}

struct Compiled {
  package::Manifest manifest;
  CompileStatistics stats;
};

Compiled compile(const fs::path &work, std::shared_ptr<const KernelCache> cache) {
  Graph graph;
  buildRepeatedBlocks(graph);
  CompileOptions options;
  options.target.target = package::Target::Cuda;
  options.target.cuda.archs = {"sm_80", "sm_90"};
  options.target.build.cache = std::move(cache);
  std::vector<std::string> objects;
  Compiled compiled;
  compiled.manifest = buildManifest(graph, options, work.string(), objects, compiled.stats);
  return compiled;
}

std::vector<std::string> ptxEntries(const package::Manifest &manifest) {
  std::vector<std::string> entries;
  static const std::regex entry(R"(\.entry\s+([A-Za-z_0-9]+)\s*\()");
  for (const package::CudaModule &module : manifest.cudaModules)
    for (const package::CudaBinary &binary : module.binaries)
      if (binary.isPtx) {
        std::string ptx(binary.bytes.begin(), binary.bytes.end());
        for (std::sregex_iterator it(ptx.begin(), ptx.end(), entry), end; it != end; ++it)
          entries.push_back((*it)[1]);
      }
  return entries;
}

} // namespace

TEST(CudaDistinctKernels, IdenticalBodiesAreCompiledOnceAndShareAnEntry) {
  sinter::testing::TempDir work;
  auto cache = std::make_shared<KernelCache>((work.path() / "cache").string());
  Compiled compiled = compile(work.path() / "build", cache);
  const package::Manifest &manifest = compiled.manifest;

  std::vector<const package::Launch *> launches;
  for (const package::Step &step : manifest.steps)
    if (const auto *launch = std::get_if<package::Launch>(&step))
      launches.push_back(launch);
  ASSERT_EQ(launches.size(), 3u);
  ASSERT_EQ(manifest.kernels.size(), 2u) << "the two blocks are one kernel";
  EXPECT_EQ(launches[0]->kernel, launches[1]->kernel);
  EXPECT_NE(launches[0]->kernel, launches[2]->kernel);
  // Each launch still names what it fused, and its own buffers.
  const package::Kernel &block = manifest.kernels[launches[0]->kernel];
  EXPECT_EQ(block.ops, (std::vector<std::string>{"Add", "Relu", "Mul"}));
  EXPECT_EQ(manifest.kernels[launches[2]->kernel].ops, (std::vector<std::string>{"Sigmoid"}));
  EXPECT_NE(launches[0]->args[0].offset, launches[1]->args[0].offset);
  EXPECT_EQ(compiled.stats.kernelCount, 3);
  EXPECT_EQ(compiled.stats.distinctKernelCount, 2);

  // The module holds each distinct body once, under the entry the manifest names.
  std::vector<std::string> entries = ptxEntries(manifest);
  ASSERT_EQ(entries.size(), 2u);
  for (const package::Kernel &kernel : manifest.kernels)
    EXPECT_EQ(std::count(entries.begin(), entries.end(), kernel.name), 1) << kernel.name;
  // One module: one NVRTC run and one ptxas run per architecture, nothing else.
  ASSERT_EQ(manifest.cudaModules.size(), 1u);
  EXPECT_EQ(compiled.stats.cacheMisses, 3u);
  EXPECT_EQ(compiled.stats.cacheHits, 0u);
  EXPECT_EQ(findManifestProblem(manifest, manifest.weights.size()), "");
}

// The same compile with a warm cache runs no toolchain and gives the same bytes, as does one
// without a cache.
TEST(CudaDistinctKernels, WarmCacheAndNoCacheGiveTheSameManifest) {
  sinter::testing::TempDir work;
  auto cache = std::make_shared<KernelCache>((work.path() / "cache").string());
  Compiled cold = compile(work.path() / "a", cache);
  Compiled warm = compile(work.path() / "b", cache);
  Compiled none = compile(work.path() / "c", nullptr);
  EXPECT_EQ(warm.stats.cacheHits, 3u);
  EXPECT_EQ(warm.stats.cacheMisses, 0u);
  EXPECT_EQ(package::serializeManifest(cold.manifest), package::serializeManifest(warm.manifest));
  EXPECT_EQ(package::serializeManifest(cold.manifest), package::serializeManifest(none.manifest));
}
