// Kernel fusion (codegen/fusion.h) on text IR: which nodes share a kernel, in what order, and
// what each group reads and writes. End-to-end correctness of fused kernels is checked against
// onnxruntime by the model tests on the CPU target and by the GPU suite.
#include "sinter/codegen/schedule/fusion.h"
#include "sinter/ir/parser.h"

#include <gtest/gtest.h>

using namespace sinter;
using namespace sinter::codegen;

namespace {

/// "conv+batchnormalization+add+relu | gemm" : each group's ops joined by '+', groups by " | ".
std::string describe(const std::vector<KernelGroup> &groups) {
  std::string text;
  for (const KernelGroup &group : groups) {
    if (!text.empty())
      text += " | ";
    for (size_t i = 0; i < group.nodes.size(); ++i)
      text += (i ? "+" : "") + std::string(group.nodes[i]->opName());
  }
  return text;
}

std::vector<std::string> names(const std::vector<const Value *> &values) {
  std::vector<std::string> result;
  for (const Value *value : values)
    result.push_back(value->name());
  return result;
}

} // namespace

TEST(Fusion, ConvAbsorbsBatchNormResidualAddAndRelu) {
  std::unique_ptr<Graph> graph = parseGraph(R"(graph @main(%x: f32[1,8,6,6]) -> (%out) {
  %w = constant f32[8,8,1,1] dense<"0x00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000">
  %s = constant f32[8] [1, 1, 1, 1, 1, 1, 1, 1]
  %b = constant f32[8] [0, 0, 0, 0, 0, 0, 0, 0]
  %c = Conv(%x, %w) : f32[1,8,6,6]
  %n = BatchNormalization(%c, %s, %b, %b, %s) : f32[1,8,6,6]
  %a = Add(%n, %x) : f32[1,8,6,6]
  %out = Relu(%a) : f32[1,8,6,6]
  return
})");
  std::vector<KernelGroup> groups = formKernelGroups(*graph, true);
  EXPECT_EQ(describe(groups), "Conv+BatchNormalization+Add+Relu");
  EXPECT_EQ(names(groups[0].inputs), (std::vector<std::string>{"x", "w", "s", "b"}));
  EXPECT_EQ(names(groups[0].outputs), (std::vector<std::string>{"out"}));
  EXPECT_EQ(describe(formKernelGroups(*graph, false)), "Conv | BatchNormalization | Add | Relu");
}

TEST(Fusion, AValueGatingItselfStaysInTheEpilogue) {
  // SiLU: the MatMul's result feeds Sigmoid and the Mul where the two meet again.
  std::unique_ptr<Graph> graph = parseGraph(R"(graph @main(%x: f32[4,8], %w: f32[8,8]) -> (%y) {
  %m = MatMul(%x, %w) : f32[4,8]
  %s = Sigmoid(%m) : f32[4,8]
  %y = Mul(%m, %s) : f32[4,8]
  return
})");
  std::vector<KernelGroup> groups = formKernelGroups(*graph, true);
  EXPECT_EQ(describe(groups), "MatMul+Sigmoid+Mul");
  EXPECT_EQ(names(groups[0].outputs), (std::vector<std::string>{"y"}));
  // GELU written out (x * 0.5 * (1 + erf(x / sqrt 2))): a longer side chain, then the chain goes on.
  graph = parseGraph(R"(graph @main(%x: f32[4,8], %w: f32[8,8]) -> (%z) {
  %r = constant f32[] [1.4142135]
  %one = constant f32[] [1.0]
  %half = constant f32[] [0.5]
  %m = MatMul(%x, %w) : f32[4,8]
  %d = Div(%m, %r) : f32[4,8]
  %e = Erf(%d) : f32[4,8]
  %a = Add(%e, %one) : f32[4,8]
  %g = Mul(%m, %a) : f32[4,8]
  %h = Mul(%g, %half) : f32[4,8]
  %z = Relu(%h) : f32[4,8]
  return
})");
  EXPECT_EQ(describe(formKernelGroups(*graph, true)), "MatMul+Div+Erf+Add+Mul+Mul+Relu");
  // x * x: one node reads the value twice.
  graph = parseGraph(R"(graph @main(%x: f32[4,8], %w: f32[8,8]) -> (%y) {
  %m = MatMul(%x, %w) : f32[4,8]
  %y = Mul(%m, %m) : f32[4,8]
  return
})");
  EXPECT_EQ(describe(formKernelGroups(*graph, true)), "MatMul+Mul");
}

TEST(Fusion, ValuesReadTwiceOtherwiseEndTheEpilogue) {
  // Two readers that never meet again: the MatMul's result is written once and both read it.
  std::unique_ptr<Graph> graph = parseGraph(R"(graph @main(%x: f32[4,8], %w: f32[8,8]) -> (%y, %z) {
  %m = MatMul(%x, %w) : f32[4,8]
  %y = Sigmoid(%m) : f32[4,8]
  %z = Relu(%m) : f32[4,8]
  return
})");
  std::vector<KernelGroup> groups = formKernelGroups(*graph, true);
  EXPECT_EQ(describe(groups), "MatMul | Sigmoid | Relu");
  EXPECT_EQ(names(groups[0].outputs), (std::vector<std::string>{"m"}));
  // A gate whose value is also a graph output: stored, and the gate reads it.
  graph = parseGraph(R"(graph @main(%x: f32[4,8], %w: f32[8,8]) -> (%m, %y) {
  %m = MatMul(%x, %w) : f32[4,8]
  %s = Sigmoid(%m) : f32[4,8]
  %y = Mul(%m, %s) : f32[4,8]
  return
})");
  EXPECT_EQ(describe(formKernelGroups(*graph, true)), "MatMul | Sigmoid+Mul");
  // The side chain's middle value read elsewhere too: not a gate.
  graph = parseGraph(R"(graph @main(%x: f32[4,8], %w: f32[8,8]) -> (%y, %t) {
  %m = MatMul(%x, %w) : f32[4,8]
  %s = Sigmoid(%m) : f32[4,8]
  %y = Mul(%m, %s) : f32[4,8]
  %t = Neg(%s) : f32[4,8]
  return
})");
  EXPECT_EQ(describe(formKernelGroups(*graph, true)).substr(0, 9), "MatMul | ");
}

TEST(Fusion, ElementwiseChainsBecomeOneKernelAndShapeOpsFoldIntoConsumers) {
  std::unique_ptr<Graph> graph = parseGraph(R"(graph @main(%x: f32[2,3,4], %w: f32[12,5]) -> (%y, %z) {
  %e = Exp(%x) : f32[2,3,4]
  %t = Tanh(%e) : f32[2,3,4]
  %shape = constant i64[2] [2, 12]
  %r = Reshape(%t, %shape) : f32[2,12]
  %y = MatMul(%r, %w) : f32[2,5]
  %z = Neg(%e) : f32[2,3,4]
  return
})");
  // %e has two users (Tanh and Neg), so it is written; Tanh is expensive to recompute per read
  // of the MatMul, so it stays a kernel of its own; Reshape only renames indices, so it joins.
  std::vector<KernelGroup> groups = formKernelGroups(*graph, true);
  EXPECT_EQ(describe(groups), "Exp | Tanh | Reshape+MatMul | Neg");
}

TEST(Fusion, EpiloguesGoOnThroughAReshapeThatAnElementwiseLinkFollows) {
  // GPT-2's Gemm over [tokens, features], then the residual add and the GELU over [batch,
  // sequence, features]: the reshape keeps every element where it is.
  std::unique_ptr<Graph> graph = parseGraph(R"(graph @main(%x: f32[6,8], %w: f32[8,4], %r: f32[2,3,4]) -> (%y, %z) {
  %shape = constant i64[3] [2, 3, 4]
  %flat = constant i64[2] [6, 4]
  %m = MatMul(%x, %w) : f32[6,4]
  %v = Reshape(%m, %shape) : f32[2,3,4]
  %a = Add(%v, %r) : f32[2,3,4]
  %y = Gelu(%a) : f32[2,3,4]
  %n = MatMul(%x, %w) : f32[6,4]
  %z = Reshape(%n, %shape) : f32[2,3,4]
  return
})");
  // A reshape with no elementwise link after it ends the epilogue: it stays a view of its own.
  EXPECT_EQ(describe(formKernelGroups(*graph, true)), "MatMul+Reshape+Add+Gelu | MatMul | Reshape");
}

TEST(Fusion, BroadcastingConsumersAreNotEpilogues) {
  std::unique_ptr<Graph> graph = parseGraph(R"(graph @main(%x: f32[3,1], %w: f32[1,1], %big: f32[3,4]) -> (%y) {
  %m = MatMul(%x, %w) : f32[3,1]
  %y = Add(%m, %big) : f32[3,4]
  return
})");
  EXPECT_EQ(describe(formKernelGroups(*graph, true)), "MatMul | Add");
}

TEST(Fusion, ACastBesideOtherUsesIsStoredByTheKernel) {
  // A post-norm block in f16: the LayerNorm's f32 output feeds the residual add later, and its
  // f16 rounding feeds the MatMul now. The Cast joins the LayerNorm, which writes both.
  std::unique_ptr<Graph> graph = parseGraph(R"(graph @main(%x: f32[4,8], %s: f32[8], %w: f16[8,8]) -> (%y) {
  %n = LayerNormalization(%x, %s, %s) {axis = -1} : f32[4,8]
  %h = Cast(%n) {to = 10} : f16[4,8]
  %m = MatMul(%h, %w) : f16[4,8]
  %u = Cast(%m) {to = 1} : f32[4,8]
  %y = Add(%u, %n) : f32[4,8]
  return
})");
  std::vector<KernelGroup> groups = formKernelGroups(*graph, true);
  EXPECT_EQ(describe(groups), "LayerNormalization+Cast | MatMul+Cast+Add");
  EXPECT_EQ(names(groups[0].outputs), (std::vector<std::string>{"n", "h"}));

  // Here the Add reads %n before the Cast's place: the LayerNorm's kernel must run first, so the
  // Cast cannot wait for it; it stays with its MatMul.
  graph = parseGraph(R"(graph @main(%x: f32[4,8], %s: f32[8], %w: f16[8,8]) -> (%y, %z) {
  %n = LayerNormalization(%x, %s, %s) {axis = -1} : f32[4,8]
  %z = Add(%n, %x) : f32[4,8]
  %h = Cast(%n) {to = 10} : f16[4,8]
  %y = MatMul(%h, %w) : f16[4,8]
  return
})");
  EXPECT_EQ(describe(formKernelGroups(*graph, true)), "LayerNormalization | Add | Cast+MatMul");
}

TEST(Fusion, AWideningCastIsItsReadersPrologue) {
  // The GELU's f16 result widened for a MatMul that keeps f32 sums: the Cast goes with the
  // MatMul (which then reads f16), not after the GELU (which would store f32).
  std::unique_ptr<Graph> graph = parseGraph(R"(graph @main(%x: f16[4,8], %w: f16[8,8], %v: f32[8,8]) -> (%y) {
  %m = MatMul(%x, %w) : f16[4,8]
  %g = Gelu(%m) : f16[4,8]
  %c = Cast(%g) {to = 1} : f32[4,8]
  %y = MatMul(%c, %v) : f32[4,8]
  return
})");
  std::vector<KernelGroup> groups = formKernelGroups(*graph, true);
  EXPECT_EQ(describe(groups), "MatMul+Gelu | Cast+MatMul");
  EXPECT_EQ(names(groups[0].outputs), (std::vector<std::string>{"g"}));

  // A pre-norm block with its residual stream in f16 (--norm-inputs stored): the residual sum
  // feeds the next residual add and, widened, the LayerNorm. The widening Cast is not a side
  // cast of the GEMM's kernel (which would store an f32 copy too): the LayerNorm widens the f16
  // sum in its prologue.
  graph = parseGraph(R"(graph @main(%x: f16[4,8], %w: f16[8,8], %s: f32[8], %v: f16[4,8]) -> (%y, %z) {
  %m = MatMul(%x, %w) : f16[4,8]
  %r = Add(%m, %x) : f16[4,8]
  %c = Cast(%r) {to = 1} : f32[4,8]
  %y = LayerNormalization(%c, %s, %s) {axis = -1} : f32[4,8]
  %z = Add(%r, %v) : f16[4,8]
  return
})");
  groups = formKernelGroups(*graph, true);
  EXPECT_EQ(describe(groups), "MatMul+Add | Cast+LayerNormalization | Add");
  EXPECT_EQ(names(groups[0].outputs), (std::vector<std::string>{"r"}));
}

TEST(Fusion, WithoutDeepProloguesConcatsAreStoredAndConvsReadTheirInputDirectly) {
  // A channel shuffle (ShuffleNetV2): concat, reshape, transpose, reshape, slice, into a Conv and
  // into the next concat. The weights' permute is computed from constants alone and joins the
  // Conv either way.
  std::unique_ptr<Graph> graph = parseGraph(R"(graph @main(%a: f32[1,4,3,3], %b: f32[1,4,3,3]) -> (%y, %z) {
  %c = Concat(%a, %b) {axis = 1} : f32[1,8,3,3]
  %s5 = constant i64[5] [1, 2, 4, 3, 3]
  %r = Reshape(%c, %s5) : f32[1,2,4,3,3]
  %t = Transpose(%r) {perm = [0, 2, 1, 3, 4]} : f32[1,4,2,3,3]
  %s4 = constant i64[4] [1, 8, 3, 3]
  %u = Reshape(%t, %s4) : f32[1,8,3,3]
  %starts = constant i64[1] [0]
  %ends = constant i64[1] [4]
  %axes = constant i64[1] [1]
  %half = Slice(%u, %starts, %ends, %axes) : f32[1,4,3,3]
  %w0 = constant f32[4,4,1,1] dense<"0x00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000">
  %w = Transpose(%w0) {perm = [0, 1, 2, 3]} : f32[4,4,1,1]
  %y = Conv(%half, %w) : f32[1,4,3,3]
  %starts2 = constant i64[1] [4]
  %ends2 = constant i64[1] [8]
  %other = Slice(%u, %starts2, %ends2, %axes) : f32[1,4,3,3]
  %z = Concat(%other, %y) {axis = 1} : f32[1,8,3,3]
  return
})");
  // %u has two readers, so it is stored either way.
  EXPECT_EQ(describe(formKernelGroups(*graph, true)),
            "Concat+Reshape+Transpose+Reshape | Slice+Transpose+Conv | Slice+Concat");
  EXPECT_EQ(describe(formKernelGroups(*graph, true, false)),
            "Concat | Reshape+Transpose+Reshape | Slice | Transpose+Conv | Slice+Concat");
}

TEST(Fusion, WithoutDeepProloguesAMatMulStillReadsThroughViews) {
  // The transpose and the slice remap indices and stay in the MatMul; the pad selects against
  // its pad value and is stored (with the Exp before it) when prologues are not deep.
  std::unique_ptr<Graph> graph = parseGraph(R"(graph @main(%k: f32[2,8,6], %x: f32[2,6,4], %q: f32[2,4,6]) -> (%y) {
  %t = Transpose(%k) {perm = [0, 2, 1]} : f32[2,6,8]
  %starts = constant i64[1] [0]
  %ends = constant i64[1] [4]
  %axes = constant i64[1] [1]
  %s = Slice(%t, %starts, %ends, %axes) : f32[2,4,8]
  %e = Exp(%x) : f32[2,6,4]
  %pads = constant i64[6] [0, 1, 0, 0, 1, 0]
  %p = Pad(%e, %pads) : f32[2,8,4]
  %m = MatMul(%s, %p) : f32[2,4,4]
  %y = MatMul(%m, %q) : f32[2,4,6]
  return
})");
  EXPECT_EQ(describe(formKernelGroups(*graph, true)), "Exp | Transpose+Slice+Pad+MatMul | MatMul");
  EXPECT_EQ(describe(formKernelGroups(*graph, true, false)), "Exp+Pad | Transpose+Slice+MatMul | MatMul");
}
