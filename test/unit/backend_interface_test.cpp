// The backend interface (codegen/backend/backend.h): what each backend declares it can do, and
// what the driver's one lowering of a group hands it. The expectations follow docs/attention.md
// (the fused attention kernel is CUDA C's, mma.sync with 16-bit operands, sm_80 and newer) and
// contraction.h (MatMul, Gemm and Conv groups are described as batched GEMMs).
#include "sinter/codegen/backend/backend.h"
#include "sinter/codegen/schedule/fusion.h"
#include "sinter/codegen/targets/targets.h"
#include "sinter/ir/parser.h"

#include <gtest/gtest.h>

using namespace sinter;
using namespace sinter::codegen;

namespace {

TargetOptions target(package::Target kind, std::vector<std::string> archs = {}) {
  TargetOptions options;
  options.target = kind;
  if (!archs.empty())
    options.cuda.archs = std::move(archs);
  return options;
}

} // namespace

TEST(BackendInterface, OnlyTheCudaBackendsFuseAttentionAndOnlySm80AndNewerDescribeIt) {
  BackendCapabilities cpu = createBackend(target(package::Target::Cpu))->capabilities();
  EXPECT_FALSE(cpu.fusedAttention16Bit);
  EXPECT_FALSE(cpu.describesFusedAttention);
  BackendCapabilities sm80 = createBackend(target(package::Target::Cuda, {"sm_80", "sm_90"}))->capabilities();
  EXPECT_TRUE(sm80.fusedAttention16Bit);
  EXPECT_TRUE(sm80.describesFusedAttention);
  // The oldest architecture decides: sm_75 has no mma.sync for the kernel's operands.
  BackendCapabilities sm75 = createBackend(target(package::Target::Cuda, {"sm_75", "sm_90"}))->capabilities();
  EXPECT_TRUE(sm75.fusedAttention16Bit);
  EXPECT_FALSE(sm75.describesFusedAttention);
  // The NVPTX route hands what it does not lower to CUDA C, so it declares what CUDA C does.
  TargetOptions nvptx = target(package::Target::Cuda, {"sm_80"});
  nvptx.cuda.gpuCodegen = "llvm";
  BackendCapabilities route = createBackend(nvptx)->capabilities();
  EXPECT_TRUE(route.fusedAttention16Bit);
  EXPECT_TRUE(route.describesFusedAttention);
}

TEST(BackendInterface, TheDriversLoweringCarriesWhatBackendsRead) {
  std::unique_ptr<Graph> graph = parseGraph(R"(graph @main(%q: f16[1,2,4,8], %k: f16[1,2,4,8], %v: f16[1,2,4,8], %x: f32[3,4]) -> (%o, %y) {
  %o = Attention(%q, %k, %v) : f16[1,2,4,8]
  %w = constant f32[4,2] [1, 2, 3, 4, 5, 6, 7, 8]
  %y = MatMul(%x, %w) : f32[3,2]
  return
})");
  std::vector<KernelGroup> groups = formKernelGroups(*graph, false);
  ASSERT_EQ(groups.size(), 2u);
  const KernelGroup &attention = groups[0], &matmul = groups[1];

  BackendCapabilities describe;
  describe.describesFusedAttention = true;
  LoweredGroup described = lowerForBackend(attention, describe);
  ASSERT_TRUE(described.attention.has_value());
  EXPECT_EQ(described.attention->spec.batch, 2); // batch x heads
  EXPECT_EQ(described.attention->spec.d, 8);
  EXPECT_FALSE(described.contraction.has_value());
  EXPECT_EQ(described.ops, (std::vector<OpKind>{OpKind::Attention}));
  // Three f16 inputs and one f16 output of 64 elements each.
  EXPECT_EQ(described.bytesMoved, 4 * 64 * 2);
  EXPECT_FALSE(lowerForBackend(attention, BackendCapabilities{}).attention.has_value());

  LoweredGroup product = lowerForBackend(matmul, BackendCapabilities{});
  ASSERT_TRUE(product.contraction.has_value());
  EXPECT_EQ(product.contraction->spec.m, 3);
  EXPECT_EQ(product.contraction->spec.n, 2);
  EXPECT_EQ(product.contraction->spec.k, 4);
  // The weight is a constant input whose value a backend may pack; %x is not.
  ASSERT_EQ(product.constantInputs.size(), 2u);
  EXPECT_EQ(product.constantInputs[0], nullptr);
  ASSERT_NE(product.constantInputs[1], nullptr);
  EXPECT_EQ(product.constantInputs[1]->byteSize(), 8u * 4u);
  // The manifest entry names the ops and the bytes from the lowered group alone.
  package::Kernel entry = describeKernel(product, product.kernel, "test");
  EXPECT_EQ(entry.ops, (std::vector<std::string>{"MatMul"}));
  EXPECT_EQ(entry.bytesMoved, (12 + 8 + 6) * 4);
  EXPECT_EQ(entry.generator, "test");
}
