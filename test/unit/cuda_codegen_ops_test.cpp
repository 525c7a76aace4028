// The CUDA C backend without a GPU, for the op families lowered in lower_indexing_scatter.cpp,
// lower_quantization.cpp, lower_recurrent_stateful.cpp, lower_resampling.cpp, lower_contraction_linear_algebra.cpp
// and the newer rules of lower_data_movement.cpp and lower_elementwise.cpp: every node's kernel is
// generated, compiled by NVRTC and assembled by ptxas, and the PTX has an entry for each. Their
// numerical results are checked against the ONNX node tests by the conformance runner.
#include "codegen_test_util.h"
#include "sinter/codegen/targets/targets.h"
#include "sinter/codegen/lowering/lowering.h"
#include "sinter/ir/graph.h"
#include "sinter/ir/infer.h"

#include <gtest/gtest.h>

#include <filesystem>

using namespace sinter;
using namespace sinter::codegen;

using sinter::testing::readCubinHeader;
using sinter::testing::singleNodeGroup;

namespace {

/// Compiles each node of `graph` as its own kernel for sm_80; returns the PTX of every module, with the kernels
/// lowered from it in `kernels`.
std::string compileEachNode(const Graph &graph, std::vector<Kernel> *kernels = nullptr) {
  TargetOptions options;
  options.target = package::Target::Cuda;
  options.cuda.archs = {"sm_80"};
  std::unique_ptr<Backend> backend = createBackend(options);
  package::Manifest manifest;
  for (const auto &node : graph.nodes()) {
    KernelGroup group = singleNodeGroup(*node, int(manifest.kernels.size()));
    Kernel kernel = lowerGroup(group);
    LaunchShape launch;
    manifest.kernels.push_back(backend->addKernel(lowerForBackend(group, backend->capabilities()), launch));
    if (kernels)
      kernels->push_back(std::move(kernel));
  }
  auto work = std::filesystem::temp_directory_path() /
              ("sinter-cuda-ops-test-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
               ::testing::UnitTest::GetInstance()->current_test_info()->name());
  std::filesystem::create_directories(work);
  backend->finish(manifest, work.string());
  std::filesystem::remove_all(work);
  EXPECT_GE(manifest.cudaModules.size(), 1u);
  std::string ptx; // every module's (a module holds up to 8 kernels)
  for (const package::CudaModule &module : manifest.cudaModules) {
    const auto &binaries = module.binaries;
    EXPECT_EQ(binaries.size(), 2u); // the sm_80 cubin and PTX
    if (binaries.size() != 2)
      return "";
    EXPECT_EQ(readCubinHeader(binaries[0].bytes).sm, 80u);
    ptx += std::string(binaries[1].bytes.begin(), binaries[1].bytes.end());
  }
  return ptx;
}

bool hasEntry(const std::string &ptx, const std::string &name) {
  return ptx.find(".entry " + name) != std::string::npos;
}

int scratchBuffers(const Kernel &kernel) {
  int count = 0;
  for (const BufferParam &buffer : kernel.buffers)
    count += buffer.scratch;
  return count;
}

} // namespace

TEST(CudaCodegenOps, ScatterFamilyAssembles) {
  Graph graph;
  Value *data = graph.addInput("data", {DType::Float32, {4, 5}});
  Value *indices = graph.addInput("indices", {DType::Int64, {2, 5}});
  Value *updates = graph.addInput("updates", {DType::Float32, {2, 5}});
  Node *elements = graph.addNode(OpKind::ScatterElements, {data, indices, updates}, 1, "elements");
  elements->setAttr("reduction", std::string("max"));
  Value *tuples = graph.addInput("tuples", {DType::Int64, {3, 1}});
  Value *rows = graph.addInput("rows", {DType::Float32, {3, 5}});
  Node *nd = graph.addNode(OpKind::ScatterND, {data, tuples, rows}, 1, "nd");
  nd->setAttr("reduction", std::string("add"));
  Value *cache = graph.addInput("cache", {DType::Float16, {2, 3, 8, 4}});
  Value *update = graph.addInput("update", {DType::Float16, {2, 3, 2, 4}});
  Value *positions = graph.addInput("positions", {DType::Int64, {2}});
  Node *tensor = graph.addNode(OpKind::TensorScatter, {cache, update, positions}, 1, "tensor");
  tensor->setAttr("mode", std::string("circular"));
  inferGraph(graph);
  std::string ptx = compileEachNode(graph);
  EXPECT_TRUE(hasEntry(ptx, "fused_scatterelements_0"));
  EXPECT_TRUE(hasEntry(ptx, "fused_scatternd_1"));
  EXPECT_TRUE(hasEntry(ptx, "fused_tensorscatter_2"));
}

TEST(CudaCodegenOps, QuantizationFamilyAssembles) {
  Graph graph;
  Value *x = graph.addInput("x", {DType::Float32, {3, 4}});
  Value *scale = graph.addInput("scale", {DType::Float32, {4}});
  Value *zero = graph.addInput("zero", {DType::Int8, {4}});
  graph.addNode(OpKind::QuantizeLinear, {x, scale, zero}, 1, "quantize");
  Value *q = graph.addInput("q", {DType::Uint16, {3, 4}});
  Value *blockScale = graph.addInput("block_scale", {DType::Float32, {3, 2}});
  Node *dequantize = graph.addNode(OpKind::DequantizeLinear, {q, blockScale}, 1, "dequantize");
  dequantize->setAttr("block_size", int64_t(2));
  inferGraph(graph);
  std::string ptx = compileEachNode(graph);
  EXPECT_TRUE(hasEntry(ptx, "fused_quantizelinear_0"));
  EXPECT_TRUE(hasEntry(ptx, "fused_dequantizelinear_1"));
}

TEST(CudaCodegenOps, SequenceModelFamilyAssemblesWithScratchState) {
  Graph graph;
  Value *x = graph.addInput("x", {DType::Float32, {1, 2, 3, 8}});
  Value *cosine = graph.addInput("cos", {DType::Float32, {16, 4}});
  Value *sine = graph.addInput("sin", {DType::Float32, {16, 4}});
  Value *positions = graph.addInput("positions", {DType::Int64, {1, 3}});
  Node *rotary = graph.addNode(OpKind::RotaryEmbedding, {x, cosine, sine, positions}, 1, "rotary");
  rotary->setAttr("interleaved", int64_t(1));
  Value *signal = graph.addInput("signal", {DType::Float32, {2, 3, 5}});
  Value *weight = graph.addInput("weight", {DType::Float32, {3, 1, 4}});
  Value *bias = graph.addInput("bias", {DType::Float32, {3}});
  Value *past = graph.addInput("past", {DType::Float32, {2, 3, 3}});
  Node *conv = graph.addNode(OpKind::CausalConvWithState, {signal, weight, bias, past}, 2, "conv");
  conv->setAttr("activation", std::string("silu"));
  Value *query = graph.addInput("query", {DType::Float32, {2, 3, 4 * 8}});
  Value *key = graph.addInput("key", {DType::Float32, {2, 3, 2 * 8}});
  Value *value = graph.addInput("value", {DType::Float32, {2, 3, 2 * 6}});
  Value *state = graph.addInput("state", {DType::Float32, {2, 2, 8, 6}});
  Value *decay = graph.addInput("decay", {DType::Float32, {2, 3, 2}});
  Value *beta = graph.addInput("beta", {DType::Float32, {2, 3, 1}});
  Node *attention = graph.addNode(OpKind::LinearAttention, {query, key, value, state, decay, beta}, 2, "attention");
  attention->setAttr("q_num_heads", int64_t(4));
  attention->setAttr("kv_num_heads", int64_t(2));
  inferGraph(graph);
  std::vector<Kernel> kernels;
  std::string ptx = compileEachNode(graph, &kernels);
  EXPECT_TRUE(hasEntry(ptx, "fused_rotaryembedding_0"));
  EXPECT_TRUE(hasEntry(ptx, "fused_causalconvwithstate_1"));
  EXPECT_TRUE(hasEntry(ptx, "fused_linearattention_2"));
  ASSERT_EQ(kernels.size(), 3u);
  // LinearAttention carries one state column of d_k values per (batch, kv head, value dim).
  EXPECT_EQ(scratchBuffers(kernels[2]), 1);
  EXPECT_EQ(kernels[2].parallelExtent, 2 * 2 * 6);
  EXPECT_EQ(kernels[2].buffers.back().elements, 2 * 2 * 6 * 8);
  EXPECT_EQ(scratchBuffers(kernels[0]) + scratchBuffers(kernels[1]), 0);
}

TEST(CudaCodegenOps, GridSampleAssemblesForEveryMode) {
  Graph graph;
  Value *x = graph.addInput("x", {DType::Float32, {1, 2, 4, 5}});
  Value *grid = graph.addInput("grid", {DType::Float32, {1, 3, 3, 2}});
  Value *volume = graph.addInput("volume", {DType::Float32, {1, 1, 3, 4, 5}});
  Value *volumeGrid = graph.addInput("volume_grid", {DType::Float32, {1, 2, 2, 2, 3}});
  int index = 0;
  std::vector<std::string> names;
  for (const char *mode : {"nearest", "linear", "cubic"})
    for (const char *padding : {"zeros", "border", "reflection"}) {
      bool volumetric = std::string(mode) != "cubic" && std::string(padding) == "reflection";
      Node *node = graph.addNode(OpKind::GridSample, volumetric ? std::vector<Value *>{volume, volumeGrid}
                                                                : std::vector<Value *>{x, grid},
                                 1, "sample");
      node->setAttr("mode", std::string(mode));
      node->setAttr("padding_mode", std::string(padding));
      node->setAttr("align_corners", int64_t(index % 2));
      names.push_back("fused_gridsample_" + std::to_string(index++));
    }
  inferGraph(graph);
  std::string ptx = compileEachNode(graph);
  for (const std::string &name : names)
    EXPECT_TRUE(hasEntry(ptx, name)) << name;
}

TEST(CudaCodegenOps, LinearAlgebraFamilyAssembles) {
  Graph graph;
  Value *a = graph.addInput("a", {DType::Float32, {2, 3, 4}});
  Value *b = graph.addInput("b", {DType::Float32, {2, 4, 5}});
  Node *einsum = graph.addNode(OpKind::Einsum, {a, b}, 1, "einsum");
  einsum->setAttr("equation", std::string("bij,bjk->bik"));
  Value *square = graph.addInput("square", {DType::Float32, {3, 3, 3}});
  Node *trace = graph.addNode(OpKind::Einsum, {square}, 1, "trace");
  trace->setAttr("equation", std::string("...ii->..."));
  graph.addNode(OpKind::Det, {square}, 1, "det");
  inferGraph(graph);
  std::vector<Kernel> kernels;
  std::string ptx = compileEachNode(graph, &kernels);
  EXPECT_TRUE(hasEntry(ptx, "fused_einsum_0"));
  EXPECT_TRUE(hasEntry(ptx, "fused_einsum_1"));
  EXPECT_TRUE(hasEntry(ptx, "fused_det_2"));
  ASSERT_EQ(kernels.size(), 3u);
  EXPECT_EQ(scratchBuffers(kernels[2]), 1); // the LU factorisation, one matrix per index
  EXPECT_EQ(kernels[2].buffers.back().elements, 3 * 3 * 3);
  EXPECT_EQ(kernels[2].buffers.back().dtype, DType::Float64);
}

TEST(CudaCodegenOps, IndexingAndBitCastAssemble) {
  Graph graph;
  Value *data = graph.addInput("data", {DType::Float32, {2, 3, 4}});
  Value *tuples = graph.addInput("tuples", {DType::Int64, {2, 2, 1}});
  Node *gather = graph.addNode(OpKind::GatherND, {data, tuples}, 1, "gather");
  gather->setAttr("batch_dims", int64_t(1));
  Value *lengths = graph.addInput("lengths", {DType::Int64, {3}});
  Node *reverse = graph.addNode(OpKind::ReverseSequence, {data, lengths}, 1, "reverse");
  reverse->setAttr("batch_axis", int64_t(1));
  reverse->setAttr("time_axis", int64_t(0));
  Value *matrix = graph.addInput("matrix", {DType::Int32, {3, 5}});
  Node *eye = graph.addNode(OpKind::EyeLike, {matrix}, 1, "eye");
  eye->setAttr("k", int64_t(-1));
  eye->setAttr("dtype", int64_t(11)); // f64
  Node *toInt = graph.addNode(OpKind::BitCast, {data}, 1, "to_int");
  toInt->setAttr("to", int64_t(12)); // u32
  Value *wide = graph.addInput("wide", {DType::Int64, {4}});
  Node *toDouble = graph.addNode(OpKind::BitCast, {wide}, 1, "to_double");
  toDouble->setAttr("to", int64_t(11)); // f64
  inferGraph(graph);
  std::string ptx = compileEachNode(graph);
  for (const char *name : {"fused_gathernd_0", "fused_reversesequence_1", "fused_eyelike_2", "fused_bitcast_3",
                           "fused_bitcast_4"})
    EXPECT_TRUE(hasEntry(ptx, name)) << name;
}
