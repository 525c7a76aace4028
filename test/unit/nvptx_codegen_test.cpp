// The NVPTX route (--gpu-codegen llvm) without a GPU: kernels are built as LLVM IR, printed as PTX
// by LLVM's NVPTX backend and assembled by ptxas into cubins whose ELF headers say CUDA and the
// requested architecture; groups the route does not lower go to the CUDA C backend, as a second
// module, and each kernel entry says which generator built it.
#include "codegen_test_util.h"
#include "sinter/codegen/targets/targets.h"
#include "sinter/codegen/lowering/lowering.h"
#include "sinter/ir/graph.h"
#include "sinter/ir/infer.h"
#include "sinter/support/error.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>

using namespace sinter;
using namespace sinter::codegen;

namespace {

namespace fs = std::filesystem;
using sinter::testing::readCubinHeader;
using sinter::testing::singleNodeGroup;

std::string readText(const fs::path &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

/// Sets an environment variable for one scope, then restores it.
class ScopedEnvironment {
public:
  ScopedEnvironment(const char *name, const char *value) : name_(name) {
    if (const char *old = std::getenv(name))
      old_ = old;
    setenv(name, value, 1);
  }
  ~ScopedEnvironment() {
    if (old_)
      setenv(name_, old_->c_str(), 1);
    else
      unsetenv(name_);
  }

private:
  const char *name_;
  std::optional<std::string> old_;
};

/// y = f16(exp(x + b)) and z = x @ w, one node per kernel group, through the backend for options.
struct Compiled {
  package::Manifest manifest;
  std::vector<LaunchShape> launches;
};

Compiled compileSmallGraph(const TargetOptions &options, const fs::path &work) {
  Graph graph;
  Value *x = graph.addInput("x", {DType::Float32, {4, 3}});
  Value *bias = graph.addInput("b", {DType::Float32, {3}});
  Value *weights = graph.addInput("w", {DType::Float32, {3, 5}});
  Node *add = graph.addNode(OpKind::Add, {x, bias}, 1, "add");
  Node *exp = graph.addNode(OpKind::Exp, {add->output()}, 1, "exp");
  Node *cast = graph.addNode(OpKind::Cast, {exp->output()}, 1, "cast");
  cast->setAttr("to", int64_t(10)); // f16
  Node *matmul = graph.addNode(OpKind::MatMul, {x, weights}, 1, "matmul");
  inferGraph(graph);
  graph.addOutput(cast->output());
  graph.addOutput(matmul->output());

  Compiled compiled;
  compiled.manifest.target = package::Target::Cuda;
  compiled.manifest.cudaArchs = options.cuda.archs;
  std::unique_ptr<Backend> backend = createBackend(options);
  for (const auto &node : graph.nodes()) {
    KernelGroup group = singleNodeGroup(*node, int(compiled.manifest.kernels.size()));
    LaunchShape launch;
    compiled.manifest.kernels.push_back(backend->addKernel(lowerForBackend(group, backend->capabilities()), launch));
    compiled.launches.push_back(launch);
  }
  fs::create_directories(work);
  EXPECT_TRUE(backend->finish(compiled.manifest, work.string()).empty());
  return compiled;
}

TargetOptions nvptxOptions() {
  TargetOptions options;
  options.target = package::Target::Cuda;
  options.cuda.gpuCodegen = "llvm";
  options.cuda.archs = {"sm_90", "sm_80"};
  return options;
}

} // namespace

TEST(NvptxCodegen, KernelsAssembleForEveryArchAndContractionsFallBackToCudaC) {
  fs::path work = fs::temp_directory_path() / "sinter-nvptx-codegen-test";
  Compiled compiled = compileSmallGraph(nvptxOptions(), work);
  const package::Manifest &manifest = compiled.manifest;

  ASSERT_EQ(manifest.kernels.size(), 4u);
  for (size_t i = 0; i < 3; ++i) { // add, exp, cast
    EXPECT_EQ(manifest.kernels[i].generator, "llvm-nvptx") << manifest.kernels[i].name;
    EXPECT_EQ(manifest.kernels[i].cudaModule, 0u);
    EXPECT_EQ(compiled.launches[i].block[0], 256u);
    EXPECT_EQ(compiled.launches[i].grid[0], 1u);
    EXPECT_EQ(compiled.launches[i].parallelExtent, 12);
  }
  // MatMul: the CUDA C backend's "cuda-c" or "cuda-c tiled".
  EXPECT_EQ(manifest.kernels[3].generator.rfind("cuda-c", 0), 0u);
  EXPECT_EQ(manifest.kernels[3].cudaModule, 1u);

  ASSERT_EQ(manifest.cudaModules.size(), 2u);
  for (const package::CudaModule &module : manifest.cudaModules) {
    const auto &binaries = module.binaries;
    // sm_80, sm_90 cubins (sorted) and PTX: the NVPTX module's for compute_90 (LLVM compiles
    // per architecture), the CUDA C module's for compute_80 (every cubin's source).
    ASSERT_EQ(binaries.size(), 3u);
    EXPECT_EQ(binaries[0].arch, "sm_80");
    EXPECT_FALSE(binaries[0].isPtx);
    EXPECT_EQ(readCubinHeader(binaries[0].bytes).machine, 190);
    EXPECT_EQ(readCubinHeader(binaries[0].bytes).sm, 80u);
    EXPECT_EQ(binaries[1].arch, "sm_90");
    EXPECT_EQ(readCubinHeader(binaries[1].bytes).machine, 190);
    EXPECT_EQ(readCubinHeader(binaries[1].bytes).sm, 90u);
    EXPECT_TRUE(binaries[2].isPtx);
    EXPECT_EQ(binaries[2].arch, &module == &manifest.cudaModules[0] ? "compute_90" : "compute_80");
  }
  std::string ptx(manifest.cudaModules[0].binaries[2].bytes.begin(),
                  manifest.cudaModules[0].binaries[2].bytes.end());
  EXPECT_NE(ptx.find("Generated by LLVM NVPTX Back-End"), std::string::npos);
  EXPECT_NE(ptx.find(".target sm_90"), std::string::npos);
  EXPECT_NE(ptx.find(".entry fused_add_0("), std::string::npos);
  EXPECT_NE(ptx.find(".entry fused_exp_1("), std::string::npos);
  EXPECT_NE(ptx.find(".entry fused_cast_2("), std::string::npos);
  EXPECT_EQ(ptx.find("fused_matmul_3"), std::string::npos);
  EXPECT_EQ(ptx.find("__nv_expf"), std::string::npos); // libdevice linked and inlined
  EXPECT_NE(ptx.find(".maxntid 256, 1, 1"), std::string::npos);
  EXPECT_NE(ptx.find("cvt.rn.f16.f32"), std::string::npos); // f16 store as the CUDA C route
  std::string cudaPtx(manifest.cudaModules[1].binaries[2].bytes.begin(),
                      manifest.cudaModules[1].binaries[2].bytes.end());
  EXPECT_NE(cudaPtx.find(".entry fused_matmul_3"), std::string::npos);
  fs::remove_all(work);
}

TEST(NvptxCodegen, EmitSourceWritesEachKernelsIrAndPtx) {
  fs::path work = fs::temp_directory_path() / "sinter-nvptx-emit-test";
  fs::path sources = work / "sources";
  TargetOptions options = nvptxOptions();
  options.emitSourceDirectory = sources.string();
  compileSmallGraph(options, work / "build");

  std::string ir = readText(sources / "fused_add_0.ll");
  EXPECT_NE(ir.find("define void @fused_add_0(ptr noalias"), std::string::npos) << ir;
  EXPECT_NE(ir.find("fadd"), std::string::npos) << ir;
  std::string ptx = readText(sources / "fused_add_0.ptx");
  EXPECT_EQ(ptx.find(".visible .entry fused_add_0("), 0u) << ptx;
  EXPECT_NE(ptx.find("add.f32"), std::string::npos) << ptx;
  EXPECT_NE(ptx.find("ld.global.nc.f32"), std::string::npos) << ptx; // read-only input
  EXPECT_NE(ptx.find("st.global.f32"), std::string::npos) << ptx;
  EXPECT_EQ(ptx.find("fused_exp_1"), std::string::npos) << ptx; // this kernel only
  EXPECT_TRUE(fs::exists(sources / "fused_add_0.kir"));
  EXPECT_TRUE(fs::exists(sources / "nvptx_module.sm_80.ptx"));
  EXPECT_TRUE(fs::exists(sources / "nvptx_module.sm_90.ptx"));
  EXPECT_TRUE(fs::exists(sources / "nvptx_module.unoptimized.ll"));
  EXPECT_TRUE(fs::exists(sources / "fused_matmul_3.cu")); // the CUDA C fallback's source
  std::string routes = readText(sources / "routes.txt");
  EXPECT_NE(routes.find("fused_add_0: llvm-nvptx\n"), std::string::npos) << routes;
  EXPECT_NE(routes.find("fused_matmul_3: cuda-c, MatMul (gemm)"), std::string::npos) << routes;
  fs::remove_all(work);
}

TEST(NvptxCodegen, MathFallsBackToCudaCWithoutLibdevice) {
  ScopedEnvironment noLibdevice("SINTER_LIBDEVICE", "/nonexistent/libdevice.10.bc");
  fs::path work = fs::temp_directory_path() / "sinter-nvptx-nolibdevice-test";
  Compiled compiled = compileSmallGraph(nvptxOptions(), work);
  const package::Manifest &manifest = compiled.manifest;
  ASSERT_EQ(manifest.kernels.size(), 4u);
  EXPECT_EQ(manifest.kernels[0].generator, "llvm-nvptx"); // add
  EXPECT_EQ(manifest.kernels[1].generator, "cuda-c");     // exp needs libdevice
  EXPECT_EQ(manifest.kernels[2].generator, "llvm-nvptx"); // cast
  EXPECT_EQ(manifest.kernels[3].generator.rfind("cuda-c", 0), 0u); // matmul
  ASSERT_EQ(manifest.cudaModules.size(), 2u);
  EXPECT_EQ(manifest.kernels[1].cudaModule, 1u);
  EXPECT_EQ(manifest.kernels[3].cudaModule, 1u);
  fs::remove_all(work);
}

TEST(NvptxCodegen, UnknownGpuCodegenIsAUserError) {
  TargetOptions options = nvptxOptions();
  options.cuda.gpuCodegen = "spirv";
  EXPECT_THROW(createBackend(options), UserError);
  options.cuda.gpuCodegen = "llvm";
  options.cuda.archs = {"sm_9x"};
  EXPECT_THROW(createBackend(options), UserError);
}
