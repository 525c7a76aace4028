#include "sinter/ir/graph.h"
#include "sinter/support/error.h"

#include <gtest/gtest.h>

using namespace sinter;

TEST(Graph, UseListsFollowEdits) {
  Graph graph;
  Value *x = graph.addInput("x", {DType::Float32, {2, 3}});
  Node *relu = graph.addNode(OpKind::Relu, {x}, 1, "relu");
  Node *neg = graph.addNode(OpKind::Neg, {relu->output()}, 1, "neg");
  graph.addOutput(neg->output());
  ASSERT_EQ(x->uses().size(), 1u);
  EXPECT_EQ(relu->output()->uses()[0].user, neg);

  neg->setInput(0, x);
  EXPECT_EQ(x->uses().size(), 2u);
  EXPECT_FALSE(relu->output()->hasUses());
  graph.eraseNode(relu);
  EXPECT_EQ(graph.numNodes(), 1);
  EXPECT_EQ(x->uses().size(), 1u);
}

TEST(Graph, ErasingAUsedNodeIsAnInternalError) {
  Graph graph;
  Value *x = graph.addInput("x", {DType::Float32, {2}});
  Node *relu = graph.addNode(OpKind::Relu, {x}, 1);
  graph.addOutput(relu->output());
  EXPECT_THROW(graph.eraseNode(relu), InternalError);
}

TEST(Graph, TopologicalSortIsStableAndFindsCycles) {
  Graph graph;
  Value *x = graph.addInput("x", {DType::Float32, {2}});
  Node *a = graph.addNode(OpKind::Relu, {x}, 1, "a");
  Node *b = graph.addNode(OpKind::Neg, {x}, 1, "b");
  Node *c = graph.addNode(OpKind::Add, {a->output(), b->output()}, 1, "c");
  graph.addOutput(c->output());
  graph.topologicalSort();
  EXPECT_EQ(graph.nodes()[0].get(), a);
  EXPECT_EQ(graph.nodes()[1].get(), b);
  a->setInput(0, c->output()); // a <- c <- a
  EXPECT_THROW(graph.topologicalSort(), UserError);
}

TEST(Graph, NamesAreUnique) {
  Graph graph;
  Value *first = graph.addInput("x", {DType::Float32, {}});
  Value *second = graph.addInput("x", {DType::Float32, {}});
  EXPECT_NE(first->name(), second->name());
  EXPECT_EQ(graph.findValue(second->name()), second);
}

TEST(OpTable, NamesRoundTripAndSchemaIsParsed) {
  for (int i = 0; i < kNumOps; ++i) {
    auto kind = static_cast<OpKind>(i);
    EXPECT_EQ(opFromName(opName(kind)), kind);
  }
  const OpInfo &cast = opInfo(OpKind::Cast);
  ASSERT_NE(cast.findAttribute("to"), nullptr);
  EXPECT_TRUE(cast.findAttribute("to")->required);
  EXPECT_EQ(cast.findAttribute("to")->kind, AttrKind::Int);
  EXPECT_EQ(opInfo(OpKind::Concat).maxInputs, -1);
}

TEST(Tensor, HalfAndBfloat16RoundToNearestEven) {
  EXPECT_EQ(floatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(floatToHalf(65504.0f), 0x7bff);
  EXPECT_EQ(floatToHalf(1e6f), 0x7c00);
  EXPECT_EQ(halfToFloat(0x0001), 5.9604644775390625e-8f); // smallest subnormal
  EXPECT_EQ(floatToHalf(5.9604644775390625e-8f), 0x0001);
  EXPECT_EQ(halfToFloat(0xc000), -2.0f);
  // 1 + 2^-11 is halfway between 1 and the next half; ties to even (1.0).
  EXPECT_EQ(floatToHalf(1.00048828125f), 0x3c00);
  EXPECT_EQ(floatToBfloat16(1.0f), 0x3f80);
  EXPECT_EQ(bfloat16ToFloat(0x4049), 3.140625f);
}
