// Typed attribute decoders (ir/op_attributes.h, ir/einsum.h), which the reference, the passes and
// lowering share: defaults as the ONNX operator definitions give them, and errors that name the
// node. Einsum's labels follow the ONNX Einsum definition (implicit output: the letters used once,
// in alphabetical order).
#include "sinter/ir/einsum.h"
#include "sinter/ir/graph.h"
#include "sinter/ir/op_attributes.h"
#include "sinter/ir/parser.h"
#include "sinter/support/error.h"

#include <gtest/gtest.h>

using namespace sinter;

namespace {

const Node &onlyNode(const Graph &graph) { return *graph.nodes().front(); }

} // namespace

TEST(OpAttributes, NormalizationEpsilonDefaultsTo1e5) {
  std::unique_ptr<Graph> plain = parseGraph(R"(graph @main(%x: f32[2,4], %s: f32[4]) -> (%y) {
  %y = LayerNormalization(%x, %s, %s) {axis = -1} : f32[2,4]
  return
})");
  EXPECT_EQ(normalizationEpsilon(onlyNode(*plain)), 1e-5f);
  std::unique_ptr<Graph> given = parseGraph(R"(graph @main(%x: f32[2,4], %s: f32[4]) -> (%y) {
  %y = LayerNormalization(%x, %s, %s) {axis = -1, epsilon = 0.001} : f32[2,4]
  return
})");
  EXPECT_EQ(normalizationEpsilon(onlyNode(*given)), 0.001f);
}

TEST(OpAttributes, ScatterReductionNamesAndErrors) {
  auto reductionOf = [](const std::string &attributes) {
    std::unique_ptr<Graph> graph = parseGraph(R"(graph @main(%x: f32[4], %i: i64[2], %u: f32[2]) -> (%y) {
  %y = ScatterElements(%x, %i, %u))" + attributes + R"( : f32[4]
  return
})");
    return scatterReduction(onlyNode(*graph));
  };
  EXPECT_EQ(reductionOf(""), ScatterReduction::None);
  EXPECT_EQ(reductionOf(R"( {reduction = "add"})"), ScatterReduction::Add);
  EXPECT_EQ(reductionOf(R"( {reduction = "mul"})"), ScatterReduction::Mul);
  EXPECT_EQ(reductionOf(R"( {reduction = "max"})"), ScatterReduction::Max);
  EXPECT_EQ(reductionOf(R"( {reduction = "min"})"), ScatterReduction::Min);
  try {
    reductionOf(R"( {reduction = "mean"})");
    FAIL() << "an unknown reduction was accepted";
  } catch (const UserError &error) {
    EXPECT_NE(std::string(error.what()).find("unknown reduction 'mean'"), std::string::npos) << error.what();
  }
}

TEST(OpAttributes, EinsumLabelsExplicitImplicitAndEllipsis) {
  auto plan = [](const std::string &equation, std::vector<std::vector<int64_t>> dims) {
    std::unique_ptr<Graph> graph = parseGraph(R"(graph @main(%a: f32[2,3], %b: f32[3,4]) -> (%y) {
  %y = Einsum(%a, %b) {equation = ")" + equation + R"("} : f32[2,4]
  return
})");
    return planEinsum(onlyNode(*graph), dims);
  };
  EinsumPlan matmul = plan("ij,jk->ik", {{2, 3}, {3, 4}});
  EXPECT_EQ(matmul.inputLabels, (std::vector<std::vector<int>>{{'i', 'j'}, {'j', 'k'}}));
  EXPECT_EQ(matmul.outputLabels, (std::vector<int>{'i', 'k'}));
  EXPECT_EQ(matmul.sizes.at('j'), 3);
  // Implicit: j appears twice, so it is summed; i and k are kept in alphabetical order.
  EXPECT_EQ(plan("kj,ji", {{4, 3}, {3, 2}}).outputLabels, (std::vector<int>{'i', 'k'}));
  // "...": the broadcast dims come first in an implicit output; extent 1 broadcasts.
  EinsumPlan batched = plan("...ij,...jk", {{5, 2, 3}, {1, 3, 4}});
  EXPECT_EQ(batched.outputLabels, (std::vector<int>{kEllipsisLabel, 'i', 'k'}));
  EXPECT_EQ(batched.sizes.at(kEllipsisLabel), 5);
  EXPECT_THROW(plan("ij,jk->ix", {{2, 3}, {3, 4}}), UserError);  // x is in no input
  EXPECT_THROW(plan("ij,jk->ik", {{2, 3}, {5, 4}}), UserError);  // j is 3 and 5
  EXPECT_THROW(plan("ijk,jk->ik", {{2, 3}, {3, 4}}), UserError); // three letters, rank 2
}
