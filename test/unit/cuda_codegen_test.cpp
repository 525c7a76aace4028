// The CUDA C backend without a GPU: kernels are generated, compiled by NVRTC and assembled by
// ptxas into cubins whose ELF headers say CUDA and the requested architecture.
#include "codegen_test_util.h"
#include "sinter/codegen/lowering/attention.h"
#include "sinter/codegen/targets/targets.h"
#include "sinter/codegen/lowering/contraction.h"
#include "sinter/codegen/kernel/expr_evaluator.h"
#include "sinter/codegen/kernel/index_ranges.h"
#include "sinter/codegen/schedule/fusion.h"
#include "sinter/codegen/lowering/lowering.h"
#include "sinter/codegen/cuda/toolchain.h"
#include "sinter/compiler/compiler.h"
#include "sinter/ir/graph.h"
#include "sinter/ir/infer.h"
#include "sinter/passes/pipeline.h"
#include "sinter/support/error.h"
#include "../../lib/codegen/cuda/cuda_attention.h"
#include "../../lib/codegen/cuda/cuda_contraction.h"
#include "../../lib/codegen/cuda/cuda_source.h"
#include "../../lib/codegen/cuda/cuda_tile_schedule.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>

using namespace sinter;
using namespace sinter::codegen;

using sinter::testing::readCubinHeader;
using sinter::testing::singleNodeGroup;

namespace {

/// Options of the CUDA target for `archs`.
TargetOptions cudaTarget(std::vector<std::string> archs) {
  TargetOptions options;
  options.target = package::Target::Cuda;
  options.cuda.archs = std::move(archs);
  return options;
}

/// Every node of the graph as its own kernel, compiled for `archs` in a scratch folder; the
/// launches in node order.
package::Manifest compileEachNode(const Graph &graph, std::vector<std::string> archs,
                                  std::vector<LaunchShape> *launches = nullptr) {
  std::unique_ptr<Backend> backend = createBackend(cudaTarget(std::move(archs)));
  package::Manifest manifest;
  for (const auto &node : graph.nodes()) {
    KernelGroup group = singleNodeGroup(*node, int(manifest.kernels.size()));
    LaunchShape launch;
    manifest.kernels.push_back(backend->addKernel(lowerForBackend(group, backend->capabilities()), launch));
    if (launches)
      launches->push_back(launch);
  }
  auto work = std::filesystem::temp_directory_path() /
              ("sinter-cuda-codegen-test-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
  std::filesystem::create_directories(work);
  backend->finish(manifest, work.string());
  std::filesystem::remove_all(work);
  return manifest;
}

/// A new graph input of 16-bit `type`, widened to f32 by a Cast: an operand exact in 16 bits.
Value *widenedInput(Graph &graph, const std::string &name, DType type, Shape dims) {
  constexpr int64_t kOnnxFloat = 1; // TensorProto.FLOAT, Cast's `to`
  Node *cast = graph.addNode(OpKind::Cast, {graph.addInput(name, TensorType{type, std::move(dims)})}, 1);
  cast->setAttr("to", kOnnxFloat);
  return cast->output(0);
}

} // namespace

TEST(CudaCodegen, ElementwiseKernelsAssembleForEveryArch) {
  Graph graph;
  Value *x = graph.addInput("x", {DType::Float32, {4, 3}});
  Value *y = graph.addInput("y", {DType::Float32, {3}});
  Node *add = graph.addNode(OpKind::Add, {x, y}, 1, "add");
  Node *cast = graph.addNode(OpKind::Cast, {add->output()}, 1, "cast");
  cast->setAttr("to", int64_t(10)); // f16
  inferGraph(graph);
  graph.addOutput(cast->output());

  std::vector<LaunchShape> launches;
  package::Manifest manifest = compileEachNode(graph, {"sm_90", "sm_80"}, &launches);
  for (const LaunchShape &launch : launches) {
    EXPECT_GE(launch.grid[0], 1u);
    EXPECT_EQ(launch.parallelExtent, 12);
  }
  ASSERT_EQ(manifest.cudaModules.size(), 1u);
  const auto &binaries = manifest.cudaModules[0].binaries;
  ASSERT_EQ(binaries.size(), 3u); // sm_80, sm_90 cubins (sorted) and the PTX both came from
  EXPECT_EQ(binaries[0].arch, "sm_80");
  EXPECT_EQ(readCubinHeader(binaries[0].bytes).machine, 190);
  EXPECT_EQ(readCubinHeader(binaries[0].bytes).sm, 80u);
  EXPECT_EQ(binaries[1].arch, "sm_90");
  EXPECT_EQ(readCubinHeader(binaries[1].bytes).sm, 90u);
  EXPECT_TRUE(binaries[2].isPtx);
  EXPECT_EQ(binaries[2].arch, "compute_80");
  std::string ptx(binaries[2].bytes.begin(), binaries[2].bytes.end());
  EXPECT_NE(ptx.find(".target sm_80"), std::string::npos);
  EXPECT_NE(ptx.find(".entry fused_add_0"), std::string::npos);
  EXPECT_NE(ptx.find(".entry fused_cast_1"), std::string::npos);
}

// A model's kernels are dealt into modules of at most about 8 kernels each, compiled in
// parallel: every kernel names the module whose PTX has its entry, each module has every
// architecture's cubin and its PTX, and the split is the same in every compile.
TEST(CudaCodegen, KernelsAreDealtIntoModulesThatEachHaveEveryArchitecture) {
  Graph graph;
  const OpKind kinds[] = {OpKind::Relu, OpKind::Sigmoid, OpKind::Tanh, OpKind::Exp, OpKind::Neg};
  for (int i = 0; i < 40; ++i) { // each on an input of its own length: 40 distinct kernels
    Value *x = graph.addInput("x" + std::to_string(i), {DType::Float32, {64 + i}});
    graph.addOutput(graph.addNode(kinds[i % 5], {x}, 1, "op" + std::to_string(i))->output());
  }
  inferGraph(graph);
  auto moduleOfEachKernel = [](const package::Manifest &manifest) {
    std::vector<uint32_t> modules;
    for (const package::Kernel &kernel : manifest.kernels)
      modules.push_back(kernel.cudaModule);
    return modules;
  };
  package::Manifest manifest = compileEachNode(graph, {"sm_80", "sm_90"});
  EXPECT_EQ(moduleOfEachKernel(manifest), moduleOfEachKernel(compileEachNode(graph, {"sm_80", "sm_90"})));
  ASSERT_EQ(manifest.cudaModules.size(), 5u); // 40 kernels, 8 a module
  for (const package::CudaModule &module : manifest.cudaModules) {
    ASSERT_EQ(module.binaries.size(), 3u);
    EXPECT_EQ(readCubinHeader(module.binaries[0].bytes).sm, 80u);
    EXPECT_EQ(readCubinHeader(module.binaries[1].bytes).sm, 90u);
    EXPECT_TRUE(module.binaries[2].isPtx);
  }
  for (const package::Kernel &kernel : manifest.kernels) {
    ASSERT_LT(kernel.cudaModule, manifest.cudaModules.size());
    const auto &ptx = manifest.cudaModules[kernel.cudaModule].binaries[2].bytes;
    EXPECT_NE(std::string(ptx.begin(), ptx.end()).find(".entry " + kernel.name + "("), std::string::npos) << kernel.name;
  }
}

// Contractions large enough in every direction get the tiled kernel, with a 3-D grid of tiles
// that covers the output; the rest keep the grid-stride kernel. Both assemble.
TEST(CudaCodegen, LargeContractionsGetTiledKernels) {
  Graph graph;
  Value *a = graph.addInput("a", {DType::Float32, {3, 100, 70}});
  Value *b = graph.addInput("b", {DType::Float32, {70, 130}});
  Node *matmul = graph.addNode(OpKind::MatMul, {a, b}, 1, "matmul");
  // Two groups of 20 channels: a GEMM a group (with at most 16, the direct window kernel would
  // take it: test_cuda_depthwise.py).
  Value *x = graph.addInput("x", {DType::Float32, {2, 40, 20, 20}});
  Value *w = graph.addInput("w", {DType::Float32, {32, 20, 3, 3}});
  Node *conv = graph.addNode(OpKind::Conv, {x, w}, 1, "conv");
  conv->setAttr("group", int64_t(2));
  conv->setAttr("pads", std::vector<int64_t>{1, 1, 1, 1});
  Value *v = graph.addInput("v", {DType::Float32, {70}});
  Node *gemv = graph.addNode(OpKind::MatMul, {a, v}, 1, "gemv");
  Value *bs = graph.addInput("bs", {DType::Float32, {3, 70, 130}});
  Node *batched = graph.addNode(OpKind::MatMul, {a, bs}, 1, "batched");
  inferGraph(graph);

  std::unique_ptr<Backend> backend = createBackend(cudaTarget({"sm_80"}));
  package::Manifest manifest;

  // Every batch multiplies the same b: the batches are one matrix of 300 rows.
  KernelGroup matmulGroup = singleNodeGroup(*matmul, 0);
  std::optional<Contraction> described = lowerContraction(matmulGroup);
  ASSERT_TRUE(described);
  EXPECT_EQ(described->spec.batch, 1);
  EXPECT_EQ(described->spec.m, 300);
  EXPECT_EQ(described->spec.n, 130);
  EXPECT_EQ(described->spec.k, 70);
  LaunchShape launch;
  manifest.kernels.push_back(backend->addKernel(lowerForBackend(matmulGroup, backend->capabilities()), launch));
  EXPECT_EQ(manifest.kernels.back().generator, "cuda-c tiled");
  EXPECT_EQ(launch.grid[2], 1u);
  EXPECT_GE(uint64_t(launch.grid[0]) * launch.block[0], 130u / 4);
  EXPECT_EQ(launch.parallelExtent, 3 * 100 * 130);

  // A batched b keeps the batch in the grid.
  KernelGroup batchedGroup = singleNodeGroup(*batched, 3);
  described = lowerContraction(batchedGroup);
  ASSERT_TRUE(described);
  EXPECT_EQ(described->spec.batch, 3);
  EXPECT_EQ(described->spec.m, 100);
  LaunchShape batchedLaunch;
  manifest.kernels.push_back(backend->addKernel(lowerForBackend(batchedGroup, backend->capabilities()), batchedLaunch));
  EXPECT_EQ(manifest.kernels.back().generator, "cuda-c tiled");
  EXPECT_EQ(batchedLaunch.grid[2], 3u);

  // Conv: one batch per group, i the output channel in the group, j over (image, position).
  KernelGroup convGroup = singleNodeGroup(*conv, 1);
  described = lowerContraction(convGroup);
  ASSERT_TRUE(described);
  EXPECT_EQ(described->spec.batch, 2);
  EXPECT_EQ(described->spec.m, 16);
  EXPECT_EQ(described->spec.n, 2 * 20 * 20);
  EXPECT_EQ(described->spec.k, 20 * 3 * 3);
  LaunchShape convLaunch;
  manifest.kernels.push_back(backend->addKernel(lowerForBackend(convGroup, backend->capabilities()), convLaunch));
  EXPECT_EQ(manifest.kernels.back().generator, "cuda-c tiled");
  EXPECT_EQ(convLaunch.grid[2], 2u);

  // A GEMV is not tiled: a warp per output splits its 70-term sum.
  KernelGroup gemvGroup = singleNodeGroup(*gemv, 2);
  LaunchShape gemvLaunch;
  Kernel gemvKernel = lowerGroup(gemvGroup);
  manifest.kernels.push_back(backend->addKernel(lowerForBackend(gemvGroup, backend->capabilities()), gemvLaunch));
  EXPECT_EQ(manifest.kernels.back().generator, "cuda-c");
  EXPECT_EQ(gemvLaunch.grid[1], 1u);
  EXPECT_TRUE(cuda::warpPerPoint(gemvKernel));
  EXPECT_GE(uint64_t(gemvLaunch.grid[0]) * gemvLaunch.block[0], 3u * 100u * 32u);

  auto work = std::filesystem::temp_directory_path() / "sinter-cuda-tiled-test";
  std::filesystem::create_directories(work);
  backend->finish(manifest, work.string());
  ASSERT_EQ(manifest.cudaModules.size(), 1u);
  EXPECT_EQ(readCubinHeader(manifest.cudaModules[0].binaries[0].bytes).sm, 80u);
  std::filesystem::remove_all(work);
}

// Contractions run on tensor cores when every architecture has mma.sync (sm_80) and the grid
// gives most SMs a tile (else the f32 kernel, which splits k, does better): products of 16-bit
// values (f16 or bf16 storage widened to f32) as they are when both operands are exact in one
// 16-bit type, and f32 operands as tf32 pairs unless the f32 SIMT kernel is asked for.
TEST(CudaCodegen, ContractionsGetTensorCoreKernels) {
  Graph graph;
  Value *a = widenedInput(graph, "a", DType::Float16, {2200, 96});
  Value *b = widenedInput(graph, "b", DType::Float16, {96, 136});
  graph.addOutput(graph.addNode(OpKind::MatMul, {a, b}, 1, "half")->output(0));
  Value *x = widenedInput(graph, "x", DType::BFloat16, {8, 16, 32, 32});
  Value *w = widenedInput(graph, "w", DType::BFloat16, {64, 16, 3, 3});
  Node *conv = graph.addNode(OpKind::Conv, {x, w}, 1, "conv");
  conv->setAttr("pads", std::vector<int64_t>{1, 1, 1, 1});
  graph.addOutput(conv->output(0));
  Value *f = graph.addInput("f", {DType::Float32, {96, 136}});
  Value *c = widenedInput(graph, "c", DType::Float16, {2200, 96});
  graph.addOutput(graph.addNode(OpKind::MatMul, {c, f}, 1, "mixed")->output(0));
  Value *d = widenedInput(graph, "d", DType::Float16, {200, 96});
  Value *e = widenedInput(graph, "e", DType::Float16, {96, 136});
  graph.addOutput(graph.addNode(OpKind::MatMul, {d, e}, 1, "few")->output(0)); // 21 tiles
  // A GEMV whose result is narrowed again: its epilogue is a block (assign, then store through
  // the cast), which must still give each output a warp.
  Value *row = widenedInput(graph, "row", DType::Float16, {1, 96});
  Value *column = widenedInput(graph, "column", DType::Float16, {96, 136});
  Node *narrow = graph.addNode(OpKind::Cast, {graph.addNode(OpKind::MatMul, {row, column}, 1, "gemv")->output(0)}, 1);
  narrow->setAttr("to", int64_t(10)); // TensorProto.FLOAT16
  graph.addOutput(narrow->output(0));
  inferGraph(graph);

  // The casts fuse into the contractions' groups, which read the 16-bit inputs.
  std::vector<KernelGroup> groups;
  for (KernelGroup &group : formKernelGroups(graph, true))
    if (lowerContraction(group))
      groups.push_back(group);
  ASSERT_EQ(groups.size(), 5u);
  KernelGroup gemv = groups.back();
  groups.pop_back();
  EXPECT_FALSE(worthTiling(lowerContraction(gemv)->spec));
  EXPECT_TRUE(cuda::warpPerPoint(lowerGroup(gemv))) << printKernel(lowerGroup(gemv));
  using Fp32 = CudaOptions::Fp32Contractions;
  std::vector<std::optional<cuda::MmaOperands>> operands, simt;
  for (const KernelGroup &group : groups) {
    operands.push_back(cuda::mmaOperands(lowerContraction(group)->spec, Fp32::Tf32x3));
    simt.push_back(cuda::mmaOperands(lowerContraction(group)->spec, Fp32::Simt));
  }
  EXPECT_EQ(operands[0], cuda::MmaOperands::Float16);
  EXPECT_EQ(operands[1], cuda::MmaOperands::BFloat16); // the window's zero padding is exact too
  EXPECT_EQ(operands[2], cuda::MmaOperands::Tf32x3);   // f is f32
  EXPECT_EQ(operands[3], cuda::MmaOperands::Float16);
  EXPECT_EQ(simt[0], cuda::MmaOperands::Float16);      // 16-bit operands ignore the fp32 choice
  EXPECT_EQ(simt[2], std::nullopt);

  for (const char *arch : {"sm_80", "sm_75"}) {
    std::unique_ptr<Backend> backend = createBackend(cudaTarget({arch, "sm_90"}));
    package::Manifest manifest;
    bool mma = std::string(arch) == "sm_80";
    const char *expected[] = {mma ? "cuda-c tensor-core f16" : "cuda-c tiled",
                              mma ? "cuda-c tensor-core bf16" : "cuda-c tiled",
                              mma ? "cuda-c tensor-core tf32x3" : "cuda-c tiled", "cuda-c tiled"};
    for (size_t i = 0; i < groups.size(); ++i) {
      LaunchShape launch;
      manifest.kernels.push_back(backend->addKernel(lowerForBackend(groups[i], backend->capabilities()), launch));
      EXPECT_EQ(manifest.kernels.back().generator, expected[i]) << arch << " " << groups[i].name;
    }
    auto work = std::filesystem::temp_directory_path() / (std::string("sinter-cuda-mma-test-") + arch);
    std::filesystem::create_directories(work);
    backend->finish(manifest, work.string()); // NVRTC and ptxas accept the kernels for every arch
    ASSERT_EQ(manifest.cudaModules.size(), 1u);
    std::filesystem::remove_all(work);
  }
}

// Attention's head merge: [batch, heads, positions, dim] transposed to [batch, positions, heads,
// dim] and flattened to rows of heads x dim before the output projection. Along a row, runs of
// dim are contiguous in the stored tensor, so the tensor-core kernel copies whole 16-byte runs
// (tf32: four values) when dim is a multiple of four, from sources that advance by a head a
// slice when a slice is a head; with dim 2 a run would cross heads, and it gathers element by
// element.
namespace {

/// The tensor-core source (64x64 tile, tf32 pairs) of the graph's first contraction; empty if it
/// has none.
std::string tf32PairsSource(Graph &graph, bool rowWalkEpilogue = true) {
  inferGraph(graph);
  std::optional<Contraction> contraction;
  for (KernelGroup &group : formKernelGroups(graph, true))
    if (!contraction)
      contraction = lowerContraction(group);
  if (!contraction)
    return "";
  LaunchShape launch;
  cuda::MmaKernelOptions options;
  options.rowWalkEpilogue = rowWalkEpilogue;
  return cuda::printMmaContraction(*contraction, {64, 64, 16, 2, 2}, cuda::MmaOperands::Tf32x3, launch, options);
}

} // namespace

TEST(CudaCodegen, HeadMergeIsReadInRunsWhereTheyAreContiguous) {
  for (int64_t dim : {16, 2}) {
    Graph graph;
    Value *x = graph.addInput("x", {DType::Float32, {2, 4, 64, dim}});
    Node *transpose = graph.addNode(OpKind::Transpose, {x}, 1, "transpose");
    transpose->setAttr("perm", std::vector<int64_t>{0, 2, 1, 3});
    Value *shape = graph.addConstant("shape", Tensor::fromInts({2, 64, 4 * dim}));
    Node *merge = graph.addNode(OpKind::Reshape, {transpose->output(0), shape}, 1, "merge");
    Value *w = graph.addInput("w", {DType::Float32, {4 * dim, 96}});
    graph.addOutput(graph.addNode(OpKind::MatMul, {merge->output(0), w}, 1, "project")->output(0));
    std::string source = tf32PairsSource(graph);
    ASSERT_FALSE(source.empty());
    const char *expected = dim == 16 ? "lhs vector along k" : "lhs scalar";
    EXPECT_NE(source.find(expected), std::string::npos) << "dim " << dim << "\n" << source.substr(0, 600);
    // A slice of 16 reduction steps is one head: the copies' sources advance by a head's
    // stride (64 positions of 16) from one slice to the next.
    if (dim == 16) {
      EXPECT_NE(source.find("lhsSource[u] += 1024;"), std::string::npos) << source;
    }
  }
}

// A GEMM's operands are copied from sources computed once per run and advanced a slice at a
// time, rows past the matrix's edge read its last row with a zero-filling copy; the bias of its
// epilogue is read by column (rem(i * N + j, N) is j, which the printer's ranges show). A
// reduction that is not whole slices computes each run's source per slice.
TEST(CudaCodegen, GemmOperandsAdvancePrecomputedSourcesAndTheBiasIsReadByColumn) {
  for (int64_t k : {64, 60}) {
    Graph graph;
    Value *x = graph.addInput("x", {DType::Float32, {100, k}});
    Value *w = graph.addInput("w", {DType::Float32, {k, 96}});
    Value *bias = graph.addInput("bias", {DType::Float32, {96}});
    Value *product = graph.addNode(OpKind::MatMul, {x, w}, 1, "project")->output(0);
    graph.addOutput(graph.addNode(OpKind::Add, {product, bias}, 1, "bias")->output(0));
    std::string source = tf32PairsSource(graph);
    ASSERT_FALSE(source.empty());
    SCOPED_TRACE("k " + std::to_string(k) + "\n" + source);
    EXPECT_NE(source.find("lhs vector along k, rhs vector along n"), std::string::npos);
    EXPECT_EQ(source.find("sn_rem("), std::string::npos);
    // The epilogue walks the tile by rows through shared memory, or (the ablation) each thread
    // evaluates its own fragments.
    EXPECT_NE(source.find("float *sums"), std::string::npos);
    std::string fragments = tf32PairsSource(graph, false);
    EXPECT_EQ(fragments.find("float *sums"), std::string::npos);
    EXPECT_NE(fragments.find("acc[p][q][c]"), std::string::npos);
    if (k == 64) {
      EXPECT_NE(source.find("lhsSource[u] += 16;"), std::string::npos);
      EXPECT_NE(source.find("rhsSource[u] += 1536;"), std::string::npos); // 16 rows of 96
      EXPECT_NE(source.find("lhsInside[u] = rowBase + ii < 100LL;"), std::string::npos);
      EXPECT_NE(source.find("rhsInside[u] = columnBase + jj < 96LL;"), std::string::npos);
      EXPECT_NE(source.find("lhsInside[u] ? rowBase + ii : 100LL - 1;"), std::string::npos);
    } else {
      EXPECT_EQ(source.find("Source["), std::string::npos);
    }
  }
}

// sliceStride against brute force. An index whose every run of a slice moves by one constant
// from each slice of bk reduction steps to the next is walked by the tensor-core copies; when
// sliceStride names a stride S, the index at r = t * bk + s must be the index at s plus t * S for
// every row i, slice t and step s. A head merge of H heads of D channels over L positions,
// ((i / L) * H + r / D) * L + i % L) * D + r % D, has one when a slice is whole heads or lies in
// one head (bk a multiple of D, or D of bk), and none when a slice ends inside a head but starts
// at another offset in it (bk = 12, D = 8); a row-major index i * K + r has S = bk.
TEST(CudaCodegen, SliceStridesHoldAtEveryStepOfEverySlice) {
  constexpr int64_t kL = 5, kH = 4, kD = 8, kK = kH * kD;
  KernelBuilder builder("k");
  const int i = builder.addVariable("i", DType::Int64), r = builder.addVariable("r", DType::Int64);
  const Kernel &kernel = builder.kernel();
  ExprRef row = var(i, DType::Int64), step = var(r, DType::Int64);
  ExprRef headMerge = add(mul(add(mul(add(mul(div(row, kL), kH), div(step, kD)), kL), rem(row, kL)), kD), rem(step, kD));
  ExprRef rowMajor = add(mul(row, kK), step);
  struct Case {
    ExprRef index;
    int bk;
    std::optional<int64_t> stride;
  };
  for (const Case &c : {Case{headMerge, 8, kL * kD}, Case{headMerge, 16, 2 * kL * kD}, Case{headMerge, 32, 4 * kL * kD},
                        Case{headMerge, 4, std::nullopt}, Case{headMerge, 12, std::nullopt},
                        Case{rowMajor, 8, 8}, Case{rowMajor, 12, 12}}) {
    IndexRanges ranges(kernel);
    ranges.setVariable(i, {0, 2 * kL - 1});
    ranges.setVariable(r, {0, kK - 1});
    const int64_t slices = kK / c.bk;
    std::optional<int64_t> stride = cuda::sliceStride(c.index, r, c.bk, slices, kernel, ranges);
    SCOPED_TRACE("bk " + std::to_string(c.bk));
    ASSERT_EQ(stride, c.stride);
    if (!stride)
      continue;
    ExprEvaluator eval(kernel);
    for (int64_t row = 0; row < 2 * kL; ++row)
      for (int64_t t = 0; t < slices; ++t)
        for (int64_t s = 0; s < c.bk; ++s) {
          eval.setVariable(i, row);
          eval.setVariable(r, s);
          const int64_t first = eval.evaluate(c.index).intValue;
          eval.setVariable(r, t * c.bk + s);
          ASSERT_EQ(eval.evaluate(c.index).intValue, first + t * *stride) << "row " << row << ", slice " << t << ", step " << s;
        }
  }
}

// A 16-bit GEMM that fills the GPU with 128x128 tiles gets a warpgroup-MMA body for sm_90a beside
// its mma.sync body; the module builds its sm_90 code for sm_90a (NVRTC and ptxas accept both
// forms), and the PTX kept for newer GPUs is the oldest architecture's, without wgmma. --wgmma off, or no sm_90
// in the list, keeps mma.sync alone.
// A convolution reduces over (window position, input channel), channels innermost: with its
// weights stored [Cout, window, Cin] (permute-conv-weights) each weight row is copied in 16-byte
// runs, and the window is gathered in runs of four channels (tf32: 16 bytes) at one window
// position, H * W = 400 elements apart, with one bounds test and one address a run. Six
// channels reduce the window innermost (conv_layout.h), whose runs of four cross the window's
// rows here: the window is gathered element by element, each step's channel and tap from r
// alone. Either way a thread's column (its image and window origin) is computed once a tile.
TEST(CudaCodegen, ConvolutionWindowsAreGatheredInRunsOfChannels) {
  for (int64_t channels : {16, 6}) {
    Graph graph;
    Value *x = graph.addInput("x", {DType::Float32, {2, channels, 20, 20}});
    Tensor weights(DType::Float32, {32, channels, 3, 3});
    Node *conv = graph.addNode(OpKind::Conv, {x, graph.addConstant("w", std::move(weights))}, 1, "conv");
    conv->setAttr("pads", std::vector<int64_t>{1, 1, 1, 1});
    graph.addOutput(conv->output(0));
    inferGraph(graph);
    EXPECT_EQ(createPass("permute-conv-weights")->run(graph), channels % 8 == 0);
    std::string source = tf32PairsSource(graph);
    SCOPED_TRACE("channels " + std::to_string(channels) + "\n" + source.substr(0, 800));
    ASSERT_FALSE(source.empty());
    // The output's columns are 400 pixels of one image after another: nearly every pair of
    // adjacent columns is adjacent in memory, and the epilogue walks the tile by rows.
    EXPECT_NE(source.find("float *sums"), std::string::npos);
    EXPECT_NE(source.find("rhs window gather"), std::string::npos);
    EXPECT_NE(source.find("rhsOrigin = image * " + std::to_string(channels * 400) + " + top * 20 + left;"),
              std::string::npos);
    if (channels == 16) {
      EXPECT_NE(source.find("const int r = (int)k0 + kk, c = r % 16;"), std::string::npos);
      EXPECT_NE(source.find("lhs vector along k"), std::string::npos);
      EXPECT_NE(source.find("fill ? from[s * 400] : 0.f"), std::string::npos);
    } else {
      EXPECT_NE(source.find("const int c = r / 9, tap = r % 9;"), std::string::npos);
    }
  }
}

// A 1x1 convolution reduces over its channels alone (window [1, 1], channels innermost): its
// weight rows are linear in r, so their copies start from sources computed once and advanced a
// slice at a time, as a GEMM's are.
TEST(CudaCodegen, PointwiseConvolutionWeightsAreWalked) {
  Graph graph;
  Value *x = graph.addInput("x", {DType::Float32, {4, 64, 16, 16}});
  Tensor weights(DType::Float32, {128, 64, 1, 1});
  graph.addOutput(graph.addNode(OpKind::Conv, {x, graph.addConstant("w", std::move(weights))}, 1, "conv")->output(0));
  std::string source = tf32PairsSource(graph);
  ASSERT_FALSE(source.empty());
  EXPECT_NE(source.find("lhsSource["), std::string::npos) << source.substr(0, 1200);
}

// A convolution whose output has one pixel per image: adjacent columns are a channel apart in
// memory (the output is [images, channels, 1, 1]), so the epilogue keeps the fragment order.
TEST(CudaCodegen, ConvolutionsWithOnePixelAnImageKeepTheFragmentOrder) {
  Graph graph;
  Value *x = graph.addInput("x", {DType::Float32, {8, 16, 3, 3}});
  Value *w = graph.addInput("w", {DType::Float32, {32, 16, 3, 3}});
  graph.addOutput(graph.addNode(OpKind::Conv, {x, w}, 1, "conv")->output(0));
  std::string source = tf32PairsSource(graph);
  ASSERT_FALSE(source.empty());
  EXPECT_EQ(source.find("float *sums"), std::string::npos) << source;
}

// The epilogue tests each element against the output's bounds only in blocks whose tile
// reaches past its edge: where the tile divides the output, no element is tested; elsewhere a
// block tests whether its tile is whole once and takes the untested loop if so.
TEST(CudaCodegen, EpiloguesOfWholeTilesTestNoElement) {
  for (int64_t rows : {128, 100}) {
    Graph graph;
    Value *x = graph.addInput("x", {DType::Float32, {rows, 64}});
    Value *w = graph.addInput("w", {DType::Float32, {64, 128}});
    Value *residual = graph.addInput("residual", {DType::Float32, {rows, 128}});
    Value *product = graph.addNode(OpKind::MatMul, {x, w}, 1, "project")->output(0);
    graph.addOutput(graph.addNode(OpKind::Add, {product, residual}, 1, "residual")->output(0));
    std::string source = tf32PairsSource(graph);
    SCOPED_TRACE("rows " + std::to_string(rows) + "\n" + source);
    ASSERT_FALSE(source.empty());
    const std::string test = " < " + std::to_string(rows) + "LL && ";
    const std::string whole = "if (rowBase + 64 <= " + std::to_string(rows) + "LL && columnBase + 64 <= 128LL)";
    if (rows == 128) {
      EXPECT_EQ(source.find(whole), std::string::npos);
      EXPECT_EQ(source.find(test + "v"), std::string::npos) << "an element is tested";
    } else {
      EXPECT_NE(source.find(whole), std::string::npos);
      EXPECT_NE(source.find(test + "v"), std::string::npos) << "the partial tiles' elements are not tested";
    }
  }
}

TEST(CudaCodegen, SixteenBitGemmsGetAWgmmaBodyForSm90a) {
  Graph graph;
  Value *a = widenedInput(graph, "a", DType::Float16, {4096, 256});
  Value *b = widenedInput(graph, "b", DType::Float16, {256, 768});
  graph.addOutput(graph.addNode(OpKind::MatMul, {a, b}, 1, "gemm")->output(0));
  // k = 128 is too short a reduction for the wgmma ring: mma.sync alone.
  Value *c = widenedInput(graph, "c", DType::Float16, {4096, 128});
  Value *d = widenedInput(graph, "d", DType::Float16, {128, 768});
  graph.addOutput(graph.addNode(OpKind::MatMul, {c, d}, 1, "short")->output(0));
  inferGraph(graph);
  std::optional<KernelGroup> gemm, shortGemm;
  for (KernelGroup &group : formKernelGroups(graph, true))
    if (std::optional<Contraction> contraction = lowerContraction(group))
      (contraction->spec.k == 256 ? gemm : shortGemm) = group;
  ASSERT_TRUE(gemm && shortGemm);
  std::optional<Contraction> shortContraction = lowerContraction(*shortGemm);
  EXPECT_TRUE(cuda::wgmmaBlockTile(lowerContraction(*gemm)->spec, cuda::MmaOperands::Float16));
  EXPECT_FALSE(cuda::wgmmaBlockTile(shortContraction->spec, cuda::MmaOperands::Float16));

  struct Case {
    std::vector<std::string> archs;
    bool warpgroupMma;
    const char *generator;
  };
  for (const Case &c : {Case{{"sm_80", "sm_90"}, true, "cuda-c tensor-core f16 wgmma"},
                        Case{{"sm_80", "sm_90"}, false, "cuda-c tensor-core f16"},
                        Case{{"sm_80", "sm_89"}, true, "cuda-c tensor-core f16"}}) {
    TargetOptions options = cudaTarget(c.archs);
    options.cuda.warpgroupMma = c.warpgroupMma;
    std::unique_ptr<Backend> backend = createBackend(options);
    package::Manifest manifest;
    LaunchShape launch;
    manifest.kernels.push_back(backend->addKernel(lowerForBackend(*gemm, backend->capabilities()), launch));
    EXPECT_EQ(manifest.kernels.back().generator, c.generator) << c.archs.back();
    auto work = std::filesystem::temp_directory_path() / ("sinter-cuda-wgmma-test-" + c.archs.back());
    std::filesystem::create_directories(work);
    backend->finish(manifest, work.string());
    std::filesystem::remove_all(work);
    ASSERT_EQ(manifest.cudaModules.size(), 1u);
    const auto &binaries = manifest.cudaModules[0].binaries;
    ASSERT_EQ(binaries.size(), 3u); // two cubins and the oldest arch's PTX
    EXPECT_EQ(readCubinHeader(binaries[1].bytes).sm, std::stoi(c.archs.back().substr(3)));
    std::string ptx(binaries[2].bytes.begin(), binaries[2].bytes.end());
    EXPECT_TRUE(binaries[2].isPtx);
    EXPECT_EQ(ptx.find("wgmma"), std::string::npos) << "the PTX for newer GPUs must not need sm_90a";
    EXPECT_NE(ptx.find("mma.sync.aligned.m16n8k16"), std::string::npos);
    if (c.warpgroupMma && c.archs.back() == "sm_90") {
      EXPECT_GE(launch.sharedBytes, 3u * 32768u) << "three slices of 16 KiB per operand";
      EXPECT_LE(launch.sharedBytes, 113u * 1024u) << "two blocks an SM";
    }
  }
}

// The 128x64 wgmma tile (three blocks an SM) takes the grids the 128x128 one leaves short of the
// SMs, when the reduction is long and whole 16-byte runs, and at least half the SMs get a block
// (cuda_mma_choice.cpp has the measurements).
TEST(CudaCodegen, NarrowWgmmaTileTakesTheGridsTheWideOneLeavesShort) {
  auto tileOf = [](int64_t m, int64_t n, int64_t k, cuda::MmaOperands operands = cuda::MmaOperands::Float16,
                   std::optional<std::array<int, 2>> forced = std::nullopt) -> std::string {
    ContractionSpec s;
    s.m = m;
    s.n = n;
    s.k = k;
    std::optional<cuda::MmaTile> tile = cuda::wgmmaBlockTile(s, operands, forced);
    return tile ? std::to_string(tile->bm) + "x" + std::to_string(tile->bn) : "none";
  };
  EXPECT_EQ(tileOf(6304, 768, 768), "128x128");  // ViT-B/16 b32's output projection: 300 blocks
  EXPECT_EQ(tileOf(1568, 512, 4608), "128x64");  // ResNet-50 b32's layer4 3x3: 52 wide blocks, 104 narrow
  EXPECT_EQ(tileOf(6272, 256, 2304), "128x64");  // layer3's 3x3: 98 wide blocks
  EXPECT_EQ(tileOf(100352, 64, 576), "128x64");  // layer1's 3x3: half of a wide tile would be padding
  EXPECT_EQ(tileOf(100352, 64, 256), "none");    // layer1's 1x1 reduce: too short a reduction
  EXPECT_EQ(tileOf(1000, 1001, 999), "none");    // a reduction of partial runs
  EXPECT_EQ(tileOf(197, 3072, 768), "128x64");   // ViT-B/16 b1's MLP-in: 96 narrow blocks
  EXPECT_EQ(tileOf(128, 3072, 768), "none");     // BERT-base b1's: 48, fewer than half the SMs
  EXPECT_EQ(tileOf(49, 512, 4608), "128x64");    // ResNet-50 b1's layer4 3x3: 8 blocks, but stream-K
  EXPECT_EQ(tileOf(3136, 64, 576), "none");      // its layer1 3x3: 25 blocks, too short for stream-K
  EXPECT_EQ(tileOf(128, 768, 768), "128x64");    // BERT-base b1's output projection: 12 tiles, split
  EXPECT_EQ(tileOf(197, 768, 768), "none");      // ViT-B/16 b1's: 24, too many to split at k = 768
  EXPECT_EQ(tileOf(1568, 512, 4608, cuda::MmaOperands::Tf32x3), "none");
  EXPECT_EQ(tileOf(6304, 768, 768, cuda::MmaOperands::Float16, std::array<int, 2>{128, 64}), "128x64");
  EXPECT_EQ(tileOf(1568, 512, 4608, cuda::MmaOperands::Float16, std::array<int, 2>{96, 128}), "none");

  // Its kernel: launch bounds for three blocks an SM, and a ring that lets
  // three share one (228 KiB an SM, 1 KiB of it the driver's for each block).
  Graph graph;
  Value *a = widenedInput(graph, "a", DType::Float16, {1568, 4608});
  Value *b = widenedInput(graph, "b", DType::Float16, {4608, 512});
  graph.addOutput(graph.addNode(OpKind::MatMul, {a, b}, 1, "gemm")->output(0));
  inferGraph(graph);
  std::vector<KernelGroup> groups = formKernelGroups(graph, true);
  ASSERT_EQ(groups.size(), 1u);
  std::unique_ptr<Backend> backend = createBackend(cudaTarget({"sm_90"}));
  package::Manifest manifest;
  LaunchShape launch;
  manifest.kernels.push_back(backend->addKernel(lowerForBackend(groups[0], backend->capabilities()), launch));
  // Its 104 tiles are fewer than half the 396 places, and 72 slices a long reduction: stream-K
  // deals each tile's slices to three blocks.
  EXPECT_EQ(manifest.kernels.back().generator, "cuda-c tensor-core f16 wgmma stream-k");
  EXPECT_EQ(launch.grid[0] * launch.grid[1] * launch.grid[2], 396u);
  EXPECT_LE(3 * (launch.sharedBytes + 1024), 228u * 1024u);
  auto work = std::filesystem::temp_directory_path() / "sinter-cuda-narrow-wgmma-test";
  std::filesystem::create_directories(work);
  backend->finish(manifest, work.string()); // NVRTC and ptxas (sm_90a) accept it
  std::filesystem::remove_all(work);
  ASSERT_EQ(manifest.cudaModules.size(), 1u);
  EXPECT_FALSE(manifest.cudaModules[0].binaries.empty());
}

// Stream-K: a wgmma GEMM whose 128x128 tiles leave at most half a round of places (two blocks on
// each of 132 SMs) over, and a reduction of more than 16 slices, is launched as 264 blocks: whole
// tiles first, then the tiles left over split into parts of their slices, a block a part.
// ViT-B/16 b32's MLP-out, 6304 x 768 x 3072, has 300 tiles: 264 whole, and 36 in seven parts of
// their 48 slices (252 pieces). The
// compiler plans the partial sums' workspace (an f32 tile a piece) in the arena, apart from the
// step's operands, and passes it last; the mma.sync body of the same launch (other
// architectures) takes every tile whole in turn. --stream-k off keeps a block per tile.
TEST(CudaCodegen, StreamKGemmsShareTilesAndGetAWorkspaceInTheArena) {
  auto spec = [](int64_t m, int64_t n, int64_t k) {
    ContractionSpec s;
    s.m = m;
    s.n = n;
    s.k = k;
    return s;
  };
  const cuda::MmaTile tile{128, 128, 32, 2, 4};
  EXPECT_EQ(cuda::streamKBlocks(spec(6304, 768, 3072), tile), 264);            // 300 tiles: 36 over
  EXPECT_EQ(cuda::streamKBlocks(spec(6304, 2304, 3072), tile), 264);           // 900: 108 over
  EXPECT_EQ(cuda::streamKBlocks(spec(6304, 768, 1024), tile), std::nullopt);   // 16 slices
  EXPECT_EQ(cuda::streamKBlocks(spec(4096, 768, 3072), tile), std::nullopt);   // 192: more than half
  EXPECT_EQ(cuda::streamKBlocks(spec(6304, 3072, 3072), tile), std::nullopt);  // 1200: 144 over
  EXPECT_EQ(cuda::streamKBlocks(spec(5632, 768, 3072), tile), std::nullopt);   // 264: none over
  // With fewer tiles than places, a block a piece and at most eight parts a tile: ResNet-50 b1's
  // layer4 3x3 on 128x64 (8 tiles of 72 slices) in 64 blocks, b32's (104 tiles) in three parts.
  const cuda::MmaTile narrow{128, 64, 32, 2, 4};
  EXPECT_EQ(cuda::streamKBlocks(spec(49, 512, 4608), narrow), 64);
  EXPECT_EQ(cuda::scheduleOf(spec(49, 512, 4608), cuda::MmaTile{128, 64, 64, 2, 4}, 64).parts, 8);
  EXPECT_EQ(cuda::streamKBlocks(spec(1568, 512, 4608), narrow), 396);
  // At most 16 tiles are split from eight slices on, in pieces of two slices at least: BERT-base
  // b1's output projection (12 tiles, 12 slices) in six parts; four slices, or 24 tiles at
  // k = 768, are not split.
  EXPECT_EQ(cuda::streamKBlocks(spec(128, 768, 768), narrow), 72);
  EXPECT_EQ(cuda::streamKBlocks(spec(128, 768, 256), narrow), std::nullopt);
  EXPECT_EQ(cuda::streamKBlocks(spec(197, 768, 768), narrow), std::nullopt);
  EXPECT_EQ(cuda::scheduleOf(spec(1568, 512, 4608), cuda::MmaTile{128, 64, 64, 2, 4}, 396).parts, 3);

  // ViT-B/16 b32's MLP-out, its operands 16-bit values.
  auto mlpOut = [](Graph &graph) {
    Value *a = widenedInput(graph, "a", DType::Float16, {6304, 3072});
    Value *b = widenedInput(graph, "b", DType::Float16, {3072, 768});
    graph.addOutput(graph.addNode(OpKind::MatMul, {a, b}, 1, "project")->output(0));
    inferGraph(graph);
  };
  for (bool streamK : {true, false}) {
    Graph graph;
    mlpOut(graph);
    CompileOptions options;
    options.target.target = package::Target::Cuda;
    options.target.cuda.archs = {"sm_80", "sm_90"};
    options.target.cuda.streamK = streamK;
    auto work = std::filesystem::temp_directory_path() / "sinter-cuda-stream-k-test";
    std::filesystem::create_directories(work);
    std::vector<std::string> objects;
    CompileStatistics stats;
    package::Manifest manifest = buildManifest(graph, options, work.string(), objects, stats);
    std::filesystem::remove_all(work);
    const package::Launch *gemm = nullptr;
    for (const package::Step &step : manifest.steps)
      if (const auto *launch = std::get_if<package::Launch>(&step))
        if (manifest.kernels[launch->kernel].generator.starts_with("cuda-c tensor-core f16 wgmma"))
          gemm = launch;
    ASSERT_NE(gemm, nullptr) << "stream-K " << streamK;
    const std::string &generator = manifest.kernels[gemm->kernel].generator;
    if (!streamK) {
      EXPECT_EQ(generator, "cuda-c tensor-core f16 wgmma");
      EXPECT_EQ(gemm->args.size(), 3u);
      EXPECT_EQ(gemm->grid[0] * gemm->grid[1] * gemm->grid[2], 300u);
      continue;
    }
    EXPECT_EQ(generator, "cuda-c tensor-core f16 wgmma stream-k");
    EXPECT_EQ(gemm->grid[0], 264u);
    EXPECT_EQ(gemm->grid[1] * gemm->grid[2], 1u);
    ASSERT_EQ(gemm->args.size(), 4u); // a, b, the product, the workspace
    const uint64_t workspaceBytes = 252ull * 128 * 128 * 4;
    const package::BufferRef &workspace = gemm->args.back();
    EXPECT_EQ(workspace.region, package::Region::Arena);
    EXPECT_LE(workspace.offset + workspaceBytes, manifest.arenaBytes);
    const uint64_t operandBytes[] = {6304 * 3072 * 2, 3072 * 768 * 2, 6304 * 768 * 2};
    for (size_t i = 0; i < 3; ++i) {
      const package::BufferRef &operand = gemm->args[i];
      if (operand.region != package::Region::Arena)
        continue;
      EXPECT_TRUE(operand.offset + operandBytes[i] <= workspace.offset ||
                  workspace.offset + workspaceBytes <= operand.offset)
          << "argument " << i << " overlaps the workspace";
    }
  }

  // The kernel's source: the module's arrival counters, the exchange, and the mma.sync body's
  // loop over whole tiles.
  Graph graph;
  mlpOut(graph);
  std::optional<Contraction> contraction;
  for (KernelGroup &group : formKernelGroups(graph, true))
    if (!contraction)
      contraction = lowerContraction(group);
  ASSERT_TRUE(contraction);
  cuda::MmaKernelOptions kernelOptions;
  kernelOptions.warpgroupMma = true;
  kernelOptions.streamKBlocks = 264;
  LaunchShape launch;
  std::string source = cuda::printMmaContraction(*contraction, tile, cuda::MmaOperands::Float16, launch, kernelOptions);
  SCOPED_TRACE(source);
  EXPECT_NE(source.find("_arrivals[36];"), std::string::npos);
  EXPECT_NE(source.find("float4 *__restrict__ sn_workspace"), std::string::npos);
  EXPECT_NE(source.find("of the 300 tiles, the first 264 whole"), std::string::npos);
  EXPECT_NE(source.find("then the last 36 in 7 parts of their 48 slices"), std::string::npos);
  EXPECT_NE(source.find("work < 516LL; work += 264LL"), std::string::npos); // 264 + 252 pieces
  EXPECT_NE(source.find("for (int t = kBegin; t < kEnd; ++t)"), std::string::npos);
  EXPECT_NE(source.find("lastArrival = arrived == 6u;"), std::string::npos);
  EXPECT_NE(source.find("for (long long tileIndex = blockIdx.x; tileIndex < 300LL; tileIndex += 264LL)"),
            std::string::npos);
  EXPECT_EQ(cuda::mmaWorkspaceBytes(contraction->spec, tile, cuda::MmaOperands::Float16, kernelOptions),
            252ull * 128 * 128 * 4);
}

// The fused attention kernel takes 64 queries a block and 64 keys a step. Heads of 197 tokens
// (ViT-B/16) leave the last block one warp of queries and the last step five keys: the warps
// whose queries all lie past the end multiply nothing, and the tiles of keys wholly past it
// are skipped; heads of 128 tokens have neither, and a warp's every tile is multiplied.
TEST(CudaCodegen, AttentionSkipsQueriesAndKeysPastTheEnd) {
  for (int64_t tokens : {197, 128}) {
    Graph graph;
    auto widened = [&](const char *name) { return widenedInput(graph, name, DType::Float16, {2, 3, tokens, 64}); };
    Node *attention = graph.addNode(OpKind::Attention, {widened("q"), widened("k"), widened("v")}, 1, "attention");
    attention->setAttr("scale", 0.125f);
    graph.addOutput(attention->output(0));
    inferGraph(graph);
    std::optional<FusedAttention> fused;
    for (KernelGroup &group : formKernelGroups(graph, true))
      if (!fused)
        fused = lowerFusedAttention(group);
    ASSERT_TRUE(fused);
    ASSERT_EQ(cuda::fusedAttentionOperands(fused->spec), DType::Float16);
    LaunchShape launch;
    std::string source = cuda::printFusedAttention(*fused, DType::Float16, launch);
    SCOPED_TRACE(std::to_string(tokens) + " tokens\n" + source);
    EXPECT_EQ(launch.grid[0], uint32_t((tokens + 63) / 64));
    const std::string n = std::to_string(tokens);
    const bool partial = tokens % 64 != 0;
    EXPECT_EQ(source.find("const bool active = rowBase + warp * 16 < " + n + "LL;") != std::string::npos, partial);
    EXPECT_EQ(source.find("const int keys = " + n + " - (int)keyBase;") != std::string::npos, partial);
    EXPECT_EQ(source.find("if (t * 8 >= keys) continue;") != std::string::npos, partial);
    EXPECT_EQ(source.find("if (kk * 16 >= keys) continue;") != std::string::npos, partial);
  }
}

// A depthwise 7x7 convolution (49 taps a point) with points enough to fill the GPU takes a thread
// a point: a warp a point took 32 times the threads and half-idle lanes (ConvNeXt-T b32 on the
// H200). With few points (batch 1 of a small image) the warp keeps sharing the taps.
TEST(CudaCodegen, ManyShortReductionsTakeAThreadAPoint) {
  auto depthwise = [](int64_t batch, int64_t channels, int64_t size) {
    Graph graph;
    Value *x = graph.addInput("x", {DType::Float32, {batch, channels, size, size}});
    Value *w = graph.addInput("w", {DType::Float32, {channels, 1, 7, 7}});
    Node *conv = graph.addNode(OpKind::Conv, {x, w}, 1, "conv");
    conv->setAttr("group", channels);
    conv->setAttr("pads", std::vector<int64_t>{3, 3, 3, 3});
    graph.addOutput(conv->output(0));
    inferGraph(graph);
    return lowerGroup(singleNodeGroup(*conv, 0));
  };
  Kernel large = depthwise(32, 96, 56); // 9.6M points
  EXPECT_EQ(large.parallelExtent, 32 * 96 * 56 * 56);
  EXPECT_FALSE(cuda::warpPerPoint(large)) << printKernel(large);
  EXPECT_EQ(cuda::threadsNeeded(large), large.parallelExtent);
  Kernel small = depthwise(1, 16, 28); // 12.5K points
  EXPECT_TRUE(cuda::warpPerPoint(small)) << printKernel(small);
  EXPECT_EQ(cuda::threadsNeeded(small), small.parallelExtent * 32);
}

// Row reductions long enough to share give each row to a warp (32 threads per row in the launch,
// shuffles in the PTX); short rows keep a thread each. Every accumulator type's identity and
// exchange must compile, so the test reduces f32, i32, i8 and u8 rows.
TEST(CudaCodegen, LongRowReductionsGetAWarpPerRow) {
  Graph graph;
  Value *x = graph.addInput("x", {DType::Float32, {8, 256}});
  Value *scale = graph.addInput("scale", {DType::Float32, {256}});
  Node *norm = graph.addNode(OpKind::LayerNormalization, {x, scale}, 1, "norm");
  Node *softmax = graph.addNode(OpKind::Softmax, {x}, 1, "softmax");
  Value *small = graph.addInput("small", {DType::Float32, {8, 4}});
  Node *smallSoftmax = graph.addNode(OpKind::Softmax, {small}, 1, "small_softmax");
  std::vector<Node *> reductions;
  for (DType type : {DType::Int32, DType::Int8, DType::Uint8}) {
    Value *ints = graph.addInput("ints_" + std::string(dtypeName(type)), {type, {3, 100}});
    std::vector<OpKind> kinds = {OpKind::ReduceMax, OpKind::ReduceMin};
    if (type == DType::Int32)
      kinds.push_back(OpKind::ReduceSum);
    for (OpKind kind : kinds) {
      Node *reduce = graph.addNode(kind, {ints}, 1, std::string(opName(kind)) + "_" + std::string(dtypeName(type)));
      reduce->setAttr("axes", std::vector<int64_t>{1});
      reductions.push_back(reduce);
    }
  }
  inferGraph(graph);

  std::unique_ptr<Backend> backend = createBackend(cudaTarget({"sm_80"}));
  package::Manifest manifest;
  auto add = [&](Node *node) {
    KernelGroup group = singleNodeGroup(*node, int(manifest.kernels.size()));
    Kernel kernel = lowerGroup(group);
    LaunchShape launch;
    manifest.kernels.push_back(backend->addKernel(lowerForBackend(group, backend->capabilities()), launch));
    return std::make_pair(kernel, launch);
  };
  auto [normKernel, normLaunch] = add(norm);
  EXPECT_TRUE(cuda::warpPerPoint(normKernel));
  EXPECT_EQ(uint64_t(normLaunch.grid[0]) * normLaunch.block[0], 8u * 32u);
  EXPECT_NE(printKernel(normKernel).find("reduce for"), std::string::npos);
  EXPECT_NE(printKernel(normKernel).find("parallel for"), std::string::npos);
  auto [softmaxKernel, softmaxLaunch] = add(softmax);
  EXPECT_TRUE(cuda::warpPerPoint(softmaxKernel));
  auto [smallKernel, smallLaunch] = add(smallSoftmax);
  EXPECT_FALSE(cuda::warpPerPoint(smallKernel));
  EXPECT_EQ(smallLaunch.grid[0], 1u);
  for (Node *reduce : reductions)
    EXPECT_TRUE(cuda::warpPerPoint(add(reduce).first)) << reduce->describe();

  auto work = std::filesystem::temp_directory_path() / "sinter-cuda-warp-test";
  std::filesystem::create_directories(work);
  backend->finish(manifest, work.string());
  const auto &binaries = manifest.cudaModules[0].binaries;
  std::string ptx(binaries.back().bytes.begin(), binaries.back().bytes.end());
  EXPECT_NE(ptx.find("shfl.sync.bfly"), std::string::npos);
  std::filesystem::remove_all(work);
}

namespace {

/// Occurrences of `needle` in `text`.
size_t countOf(const std::string &text, const std::string &needle) {
  size_t count = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1))
    ++count;
  return count;
}

} // namespace

TEST(CudaCodegen, WarpRowsAreLoadedOnceInSixteenByteRuns) {
  Graph graph;
  auto norm = [&](const std::string &name, Value *x, int64_t length) {
    Value *scale = graph.addInput(name + "_scale", {DType::Float32, {length}});
    Node *node = graph.addNode(OpKind::LayerNormalization, {x, scale}, 1, name);
    graph.addOutput(node->output(0));
    return node;
  };
  Node *f32 = norm("f32", graph.addInput("x", {DType::Float32, {8, 768}}), 768);
  Node *f16 = norm("f16", widenedInput(graph, "h", DType::Float16, {8, 768}), 768);
  Node *shortRuns = norm("short_runs", graph.addInput("s", {DType::Float32, {8, 96}}), 96);
  Node *ragged = norm("ragged", graph.addInput("r", {DType::Float32, {8, 1000}}), 1000);
  inferGraph(graph);
  std::unique_ptr<Backend> backend = createBackend(cudaTarget({"sm_90"}));
  package::Manifest manifest;
  const std::vector<KernelGroup> groups = formKernelGroups(graph, true);
  auto text = [&](const Node *last) {
    auto group = std::find_if(groups.begin(), groups.end(), [&](const KernelGroup &g) { return g.nodes.back() == last; });
    EXPECT_NE(group, groups.end());
    Kernel kernel = lowerGroup(*group);
    LaunchShape launch;
    manifest.kernels.push_back(backend->addKernel(lowerForBackend(*group, backend->capabilities()), launch));
    return cuda::printCudaKernel(kernel, 256);
  };
  // f32 rows of 768: a lane holds 24 elements in six runs of four, one 16-byte load each, and
  // the input is read nowhere else; the output is stored four at a time.
  std::string kernel = text(f32);
  EXPECT_EQ(countOf(kernel, "float sn_row0[24];"), 1u) << kernel;
  EXPECT_EQ(countOf(kernel, "sn_row1"), 0u) << kernel;
  EXPECT_NE(kernel.find("for (int sn_g = 0; sn_g < 6; ++sn_g)"), std::string::npos) << kernel;
  EXPECT_NE(kernel.find("(sn_g * 128 + lane * 4)"), std::string::npos) << kernel;
  EXPECT_EQ(countOf(kernel, "const uint4 sn_w = *reinterpret_cast<const uint4 *>(&b0["), 1u) << kernel;
  EXPECT_EQ(countOf(kernel, "b0["), 1u) << kernel;
  EXPECT_EQ(countOf(kernel, "*reinterpret_cast<uint4 *>(&b2["), 1u) << kernel;
  // mean, variance (its difference from the mean printed once, as a local), output
  EXPECT_EQ(countOf(kernel, "sn_row0[sn_g * 4 + sn_j]"), 3u) << kernel;
  // The scale, read by the output loop alone, comes a run at a time as that loop reaches it.
  EXPECT_EQ(countOf(kernel, "float sn_run0[4];"), 1u) << kernel;
  EXPECT_EQ(countOf(kernel, "const uint4 sn_w = *reinterpret_cast<const uint4 *>(&b1["), 1u) << kernel;
  EXPECT_EQ(countOf(kernel, "b1["), 1u) << kernel;
  // f16 rows: runs of eight, still 16 bytes; the f32 output takes two stores a run.
  kernel = text(f16);
  EXPECT_EQ(countOf(kernel, "unsigned short sn_row0[24];"), 1u) << kernel;
  EXPECT_EQ(countOf(kernel, "sn_row0[sn_g * 8 + sn_j]"), 3u) << kernel;
  EXPECT_NE(kernel.find("(sn_g * 256 + lane * 8)"), std::string::npos) << kernel;
  EXPECT_EQ(countOf(kernel, "const uint4 sn_w = *reinterpret_cast<const uint4 *>(&b0["), 1u) << kernel;
  EXPECT_EQ(countOf(kernel, "const uint4 sn_w = *reinterpret_cast<const uint4 *>(&b1["), 2u) << kernel;
  EXPECT_EQ(countOf(kernel, "*reinterpret_cast<uint4 *>(&b2["), 2u) << kernel;
  // 96 does not split into runs of four (or two) for 32 lanes: one element a run, loaded once;
  // the scale is read element by element.
  kernel = text(shortRuns);
  EXPECT_EQ(countOf(kernel, "float sn_row0[3];"), 1u) << kernel;
  EXPECT_NE(kernel.find("(sn_g * 32 + lane * 1)"), std::string::npos) << kernel;
  EXPECT_EQ(countOf(kernel, "const unsigned sn_w"), 1u) << kernel;
  EXPECT_EQ(countOf(kernel, "b0["), 1u) << kernel;
  // 1000 is no multiple of 32: the lanes stride through each loop, reading the row in each
  // (mean, variance, output).
  kernel = text(ragged);
  EXPECT_EQ(countOf(kernel, "sn_row"), 0u) << kernel;
  EXPECT_EQ(countOf(kernel, "b0["), 3u) << kernel;

  // NVRTC and ptxas take them.
  auto work = std::filesystem::temp_directory_path() / "sinter-cuda-warp-rows-test";
  std::filesystem::create_directories(work);
  backend->finish(manifest, work.string());
  std::filesystem::remove_all(work);
  EXPECT_FALSE(manifest.cudaModules.empty());
}

// Index DAGs whose unfolded trees are exponential (2^60 nodes here, as a channel shuffle's
// composed reshapes and transposes make) print in text linear in their distinct nodes: each
// shared node is a local, defined once before the line that uses it. A shared load that only a
// select's branch reads stays in that branch (hoisting it would read out of bounds where the
// condition fails); one that every evaluation reads is a local too. NVRTC takes the result.
TEST(CudaCodegen, SharedSubexpressionsArePrintedOnceAsLocals) {
  auto kernelFor = [](bool guardedLoad) {
    KernelBuilder builder(guardedLoad ? "guarded" : "unguarded");
    const int x = builder.addBuffer("x", DType::Float32, 1024, false);
    const int y = builder.addBuffer("y", DType::Float32, 1024, true);
    builder.setParallelExtent(1024);
    ExprRef e = builder.gid();
    for (int level = 0; level < 60; ++level)
      e = add(div(e, 3), rem(e, 5));
    ExprRef element = load(x, DType::Float32, rem(e, 1024));
    ExprRef square = binary(BinaryOp::Mul, element, element);
    ExprRef value = guardedLoad ? select(binary(BinaryOp::Lt, builder.gid(), intConstant(512)), square,
                                         constant(DType::Float32, 0.0))
                                : square;
    builder.emit(store(y, builder.gid(), value));
    return builder.take();
  };
  for (bool guardedLoad : {true, false}) {
    const std::string text = cuda::printCudaKernel(kernelFor(guardedLoad), 256);
    EXPECT_LT(text.size(), 12000u) << text.substr(0, 2000);
    EXPECT_GE(countOf(text, "const auto s"), 59u) << text; // every level but the last is shared
    std::string loadLines;
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);)
      if (line.find("b0[") != std::string::npos)
        loadLines += line + "\n";
    if (guardedLoad) {
      EXPECT_EQ(countOf(loadLines, "b0["), 2u) << loadLines;
      EXPECT_EQ(countOf(loadLines, "const auto"), 0u) << loadLines;
      EXPECT_NE(loadLines.find("? "), std::string::npos) << loadLines;
    } else {
      EXPECT_EQ(countOf(loadLines, "b0["), 1u) << loadLines;
      EXPECT_EQ(countOf(loadLines, "const auto"), 1u) << loadLines;
    }
    EXPECT_NO_THROW(cuda::compileToPtx(cuda::cudaPrelude() + text, "compute_80", "shared_subexpressions.cu"));
  }
}

// The same through the contraction kernels: thirty channel shuffles (reshape, transpose,
// reshape) before a GEMM fuse into its operand's index, which the tiled and the tensor-core
// operand loaders print; the compile finishes and NVRTC and ptxas take every kernel.
TEST(CudaCodegen, ChannelShufflesBeforeAGemmCompile) {
  Graph graph;
  Value *x = graph.addInput("x", {DType::Float32, {1, 64, 8, 8}});
  Value *shuffled = x;
  for (int level = 0; level < 30; ++level) {
    const std::string name = "shuffle" + std::to_string(level);
    Node *split = graph.addNode(OpKind::Reshape, {shuffled, graph.addConstant(name + "_split", Tensor::fromInts({1, 2, 32, 8, 8}))}, 1, name + "_split");
    Node *swap = graph.addNode(OpKind::Transpose, {split->output(0)}, 1, name + "_swap");
    swap->setAttr("perm", std::vector<int64_t>{0, 2, 1, 3, 4});
    shuffled = graph.addNode(OpKind::Reshape, {swap->output(0), graph.addConstant(name + "_merge", Tensor::fromInts({1, 64, 8, 8}))}, 1, name + "_merge")->output(0);
  }
  Node *rows = graph.addNode(OpKind::Reshape, {shuffled, graph.addConstant("rows", Tensor::fromInts({64, 64}))}, 1, "rows");
  Value *w = graph.addInput("w", {DType::Float32, {64, 96}});
  graph.addOutput(graph.addNode(OpKind::MatMul, {rows->output(0), w}, 1, "project")->output(0));
  graph.addOutput(graph.addNode(OpKind::Relu, {shuffled}, 1, "relu")->output(0));
  inferGraph(graph);
  std::unique_ptr<Backend> backend = createBackend(cudaTarget({"sm_90"}));
  package::Manifest manifest;
  for (const KernelGroup &group : formKernelGroups(graph, true)) {
    LaunchShape launch;
    manifest.kernels.push_back(backend->addKernel(lowerForBackend(group, backend->capabilities()), launch));
  }
  EXPECT_GE(manifest.kernels.size(), 2u);
  // The tensor-core and the tiled forms of the GEMM both (the backend chose one).
  std::string mma = tf32PairsSource(graph);
  EXPECT_FALSE(mma.empty());
  EXPECT_LT(mma.size(), 200000u);
  std::optional<Contraction> contraction;
  for (KernelGroup &group : formKernelGroups(graph, true))
    if (!contraction)
      contraction = lowerContraction(group);
  ASSERT_TRUE(contraction);
  LaunchShape tiledLaunch;
  std::string tiled = cuda::printTiledContraction(*contraction, {64, 64, 16, 4, 4}, tiledLaunch);
  EXPECT_LT(tiled.size(), 200000u);
  EXPECT_NO_THROW(cuda::compileToPtx(cuda::cudaPrelude() + tiled, "compute_80", "shuffled_tiled.cu"));
  auto work = std::filesystem::temp_directory_path() / "sinter-cuda-shuffles-test";
  std::filesystem::create_directories(work);
  backend->finish(manifest, work.string());
  std::filesystem::remove_all(work);
  EXPECT_FALSE(manifest.cudaModules.empty());
}

TEST(CudaCodegen, UnknownArchitectureIsAUserError) {
  EXPECT_THROW(createBackend(cudaTarget({"sm_9x"})), UserError);
}
