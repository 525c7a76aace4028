// Which graph inputs a data-dependent shape needs (the --bind-input hint): the inputs whose data a
// shape rule asked for and did not get, and the graph inputs their data comes from. The expected
// answers follow from the ONNX op definitions (Reshape's shape and Slice's starts are data that
// decides the output shape; Reshape's data and Shape's input are not).
#include "sinter/ir/data_dependence.h"
#include "sinter/ir/graph.h"
#include "sinter/ir/infer.h"

#include <gtest/gtest.h>

using namespace sinter;

namespace {

std::vector<std::string> names(const std::vector<const Value *> &values) {
  std::vector<std::string> result;
  for (const Value *value : values)
    result.push_back(value->name());
  return result;
}

Node *inferred(Graph &graph, OpKind kind, const std::vector<Value *> &inputs, const char *name) {
  Node *node = graph.addNode(kind, inputs, 1, name);
  inferNode(*node);
  return node;
}

} // namespace

TEST(DataDependence, ReshapeNeedsItsShapeNotItsData) {
  Graph graph;
  Value *x = graph.addInput("x", {DType::Float32, shapeOf({2, 6})});
  Value *shape = graph.addInput("shape", {DType::Int64, shapeOf({2})});
  Node *reshape = inferred(graph, OpKind::Reshape, {x, shape}, "r");
  EXPECT_FALSE(isStatic(reshape->output()->shape()));
  EXPECT_EQ(unresolvedValueInputs(*reshape), std::vector<int>{1});
  EXPECT_EQ(names(graphInputsFeeding(*shape)), std::vector<std::string>{"shape"});
}

TEST(DataDependence, StaticShapesNeedNothing) {
  Graph graph;
  Value *x = graph.addInput("x", {DType::Float32, shapeOf({2, 6})});
  Value *shape = graph.addConstant("shape", Tensor::fromInts({3, 4}));
  Node *reshape = inferred(graph, OpKind::Reshape, {x, shape}, "r");
  EXPECT_TRUE(isStatic(reshape->output()->shape()));
  EXPECT_TRUE(unresolvedValueInputs(*reshape).empty());
  EXPECT_TRUE(graphInputsFeeding(*shape).empty());
  EXPECT_EQ(bindInputHint({}), "");
}

TEST(DataDependence, TheWalkFollowsDataAndStopsAtShape) {
  // ends = Concat(Shape(x)[0:1], Cast(k)): x contributes only its (static) shape, k its data.
  Graph graph;
  Value *x = graph.addInput("x", {DType::Float32, shapeOf({5, 6})});
  Value *k = graph.addInput("k", {DType::Int32, shapeOf({1})});
  Value *starts = graph.addInput("starts", {DType::Int64, shapeOf({2})});
  Node *shapeOfX = graph.addNode(OpKind::Shape, {x}, 1, "shape");
  shapeOfX->setAttr("end", Attribute(int64_t(1)));
  inferNode(*shapeOfX);
  Node *cast = graph.addNode(OpKind::Cast, {k}, 1, "cast");
  cast->setAttr("to", Attribute(int64_t(7)));
  inferNode(*cast);
  Node *concat = graph.addNode(OpKind::Concat, {shapeOfX->output(), cast->output()}, 1, "concat");
  concat->setAttr("axis", Attribute(int64_t(0)));
  inferNode(*concat);
  Node *slice = inferred(graph, OpKind::Slice, {x, starts, concat->output()}, "slice");
  EXPECT_FALSE(isStatic(slice->output()->shape()));
  std::vector<const Value *> needed;
  for (int i : unresolvedValueInputs(*slice))
    needed.push_back(slice->input(i));
  EXPECT_EQ(names(graphInputsFeeding(needed)), (std::vector<std::string>{"starts", "k"}));
  EXPECT_EQ(bindInputHint(graphInputsFeeding(needed)),
            "; it depends on graph inputs 'starts', 'k': give their values at compile time with "
            "--bind-input starts=FILE --bind-input k=FILE");
  EXPECT_EQ(bindInputHint({k}), "; it depends on graph input 'k': give its value at compile time "
                                "with --bind-input k=FILE");
}
