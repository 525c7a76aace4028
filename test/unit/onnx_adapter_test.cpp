// The ONNX importer's opset adapters, Constant nodes and folding. An older form and the
// opset-23 form of the same computation must give the same IR (compared in the text form);
// semantics that change shape (Softmax's 2-D coercion, Upsample, GroupNormalization) are checked
// by running the imported graph on the reference evaluator against values worked out by hand
// from the ONNX specification.
#include "onnx_test_util.h"

#include "sinter/ir/graph.h"
#include "sinter/ir/printer.h"
#include "sinter/reference/evaluator.h"

#include <cmath>

using namespace sinter;
using namespace sinter::onnx_test;
using ::onnx::TensorProto;

namespace {

Tensor f32Tensor(std::vector<int64_t> dims, const std::vector<float> &values) {
  Tensor tensor(DType::Float32, std::move(dims));
  for (size_t i = 0; i < values.size(); ++i)
    tensor.data<float>()[i] = values[i];
  return tensor;
}

std::vector<float> floatsOf(const Tensor &tensor) {
  std::vector<float> values;
  for (int64_t i = 0; i < tensor.elementCount(); ++i)
    values.push_back(float(tensor.getDouble(i)));
  return values;
}

// Old form: one node `op` on x with the ints attribute `attribute`. New form: the same values as
// an i64 initializer named "y.<attribute>" (the name the adapter gives) in input slot `slot`.
void expectAttributeBecomesInput(const std::string &op, int64_t oldOpset, int64_t newOpset,
                                 const std::vector<OnnxDim> &dims, const std::string &attribute,
                                 const std::vector<int64_t> &values, int slot,
                                 const std::string &expectedType) {
  SCOPED_TRACE(op + " opset " + std::to_string(oldOpset) + " vs " + std::to_string(newOpset));
  ModelBuilder before(oldOpset);
  before.inputF32("x", dims);
  attrInts(before.node(op, {"x"}, {"y"}, "n"), attribute, values);
  before.output("y");
  ModelBuilder after(newOpset);
  after.inputF32("x", dims);
  after.initializerI64("y." + attribute, {int64_t(values.size())}, values);
  std::vector<std::string> inputs(slot + 1, "");
  inputs[0] = "x";
  inputs[slot] = "y." + attribute;
  after.node(op, inputs, {"y"}, "n");
  after.output("y");
  auto oldGraph = before.import();
  auto newGraph = after.import();
  EXPECT_EQ(printGraph(*oldGraph), printGraph(*newGraph));
  EXPECT_EQ(oldGraph->outputs()[0]->type().str(), expectedType);
}

} // namespace

TEST(OnnxAdapters, AttributesThatBecameInputsGiveTheSameIR) {
  expectAttributeBecomesInput("Squeeze", 11, 13, {1, 3, 1}, "axes", {0, 2}, 1, "f32[3]");
  expectAttributeBecomesInput("Unsqueeze", 11, 13, {3}, "axes", {0, -1}, 1, "f32[1,3,1]");
  expectAttributeBecomesInput("ReduceSum", 12, 13, {2, 3}, "axes", {1}, 1, "f32[2,1]");
  expectAttributeBecomesInput("ReduceMean", 17, 18, {2, 3}, "axes", {0}, 1, "f32[1,3]");
  expectAttributeBecomesInput("ReduceMax", 13, 18, {2, 3, 4}, "axes", {0, 2}, 1, "f32[1,3,1]");
  expectAttributeBecomesInput("Pad", 10, 11, {2, 3}, "pads", {1, 0, 0, 2}, 1, "f32[3,5]");
}

TEST(OnnxAdapters, SliceAttributesBecomeInputs) {
  ModelBuilder before(9);
  before.inputF32("x", {4, 6});
  auto *slice = before.node("Slice", {"x"}, {"y"}, "s");
  attrInts(slice, "starts", {1, 2});
  attrInts(slice, "ends", {3, 100});
  attrInts(slice, "axes", {0, 1});
  before.output("y");
  ModelBuilder after(13);
  after.inputF32("x", {4, 6});
  after.initializerI64("y.starts", {2}, {1, 2});
  after.initializerI64("y.ends", {2}, {3, 100});
  after.initializerI64("y.axes", {2}, {0, 1});
  after.node("Slice", {"x", "y.starts", "y.ends", "y.axes"}, {"y"}, "s");
  after.output("y");
  EXPECT_EQ(printGraph(*before.import()), printGraph(*after.import()));
  EXPECT_EQ(before.import()->outputs()[0]->type().str(), "f32[2,4]");
}

TEST(OnnxAdapters, SplitAttributeAndEqualSplit) {
  ModelBuilder before(11);
  before.inputF32("x", {6});
  attrInts(before.node("Split", {"x"}, {"a", "b"}, "s"), "split", {2, 4});
  before.output("a");
  before.output("b");
  ModelBuilder after(13);
  after.inputF32("x", {6});
  after.initializerI64("a.split", {2}, {2, 4});
  after.node("Split", {"x", "a.split"}, {"a", "b"}, "s");
  after.output("a");
  after.output("b");
  auto graph = before.import();
  EXPECT_EQ(printGraph(*graph), printGraph(*after.import()));
  EXPECT_EQ(graph->outputs()[1]->type().str(), "f32[4]");

  // Before opset 18, no `split` means equal parts, one per output: num_outputs in the IR.
  ModelBuilder equal(13);
  equal.inputF32("x", {6});
  equal.node("Split", {"x"}, {"a", "b", "c"}, "s");
  equal.output("a");
  equal.output("c");
  graph = equal.import();
  const Node &split = *graph->nodes()[0];
  EXPECT_EQ(split.attrInt("num_outputs", -1), 3);
  EXPECT_EQ(graph->outputs()[1]->type().str(), "f32[2]");
}

TEST(OnnxAdapters, ScalarAttributesBecomeInputsOfTheDataType) {
  // Clip-6 min/max and Pad-2 value become scalars of the data's element type (f64 here).
  ModelBuilder clip(10);
  clip.input("x", TensorProto::DOUBLE, {3});
  auto *node = clip.node("Clip", {"x"}, {"y"}, "c");
  attrFloat(node, "min", -1.0f);
  attrFloat(node, "max", 2.5f);
  clip.output("y");
  auto graph = clip.import();
  const Node &clipNode = *graph->nodes()[0];
  ASSERT_EQ(clipNode.numInputs(), 3);
  EXPECT_EQ(clipNode.input(1)->type().str(), "f64[]");
  EXPECT_EQ(clipNode.input(1)->constant().getDouble(0), -1.0);
  EXPECT_EQ(clipNode.input(2)->constant().getDouble(0), 2.5);

  ModelBuilder maxOnly(10);
  maxOnly.inputF32("x", {3});
  attrFloat(maxOnly.node("Clip", {"x"}, {"y"}), "max", 6.0f);
  maxOnly.output("y");
  graph = maxOnly.import();
  EXPECT_EQ(graph->nodes()[0]->input(1), nullptr);
  EXPECT_EQ(graph->nodes()[0]->input(2)->constant().getDouble(0), 6.0);

  ModelBuilder pad(10);
  pad.inputF32("x", {2});
  auto *padNode = pad.node("Pad", {"x"}, {"y"});
  attrInts(padNode, "pads", {1, 1});
  attrFloat(padNode, "value", 1.5f);
  pad.output("y");
  graph = pad.import();
  EXPECT_EQ(graph->nodes()[0]->input(2)->type().str(), "f32[]");
  EXPECT_EQ(graph->nodes()[0]->input(2)->constant().getDouble(0), 1.5);
  EXPECT_EQ(graph->outputs()[0]->type().str(), "f32[4]");
}

TEST(OnnxAdapters, TopKAndDropoutAttributes) {
  ModelBuilder topk(9);
  topk.inputF32("x", {5});
  attrInt(topk.node("TopK", {"x"}, {"v", "i"}, "t"), "k", 2);
  topk.output("v");
  topk.output("i");
  auto graph = topk.import();
  EXPECT_EQ(graph->nodes()[0]->input(1)->constant().toInts(), (std::vector<int64_t>{2}));
  EXPECT_EQ(graph->outputs()[1]->type().str(), "i64[2]");

  ModelBuilder dropout(10);
  dropout.inputF32("x", {5});
  auto *node = dropout.node("Dropout", {"x"}, {"y"});
  attrFloat(node, "ratio", 0.25f);
  dropout.output("y");
  graph = dropout.import();
  EXPECT_EQ(graph->nodes()[0]->input(1)->type().str(), "f32[]");
  EXPECT_EQ(graph->nodes()[0]->input(1)->constant().getDouble(0), 0.25);
}

TEST(OnnxAdapters, SoftmaxBeforeOpset13CoercesTo2D) {
  // Softmax-11 with axis=1 on [2,2,2] normalises each batch's 4 values together.
  ModelBuilder m(11);
  m.inputF32("x", {2, 2, 2});
  attrInt(m.node("Softmax", {"x"}, {"y"}, "sm"), "axis", 1);
  m.output("y");
  auto graph = m.import();
  EXPECT_EQ(graph->outputs()[0]->name(), "y");
  EXPECT_EQ(graph->outputs()[0]->type().str(), "f32[2,2,2]");
  std::vector<float> x = {0, 1, 2, 3, -1, 0, 1, 5};
  Tensor result = reference::evaluate(*graph, {f32Tensor({2, 2, 2}, x)})[0];
  for (int batch = 0; batch < 2; ++batch) {
    double sum = 0;
    for (int i = 0; i < 4; ++i)
      sum += std::exp(x[batch * 4 + i]);
    for (int i = 0; i < 4; ++i)
      EXPECT_NEAR(result.getDouble(batch * 4 + i), std::exp(x[batch * 4 + i]) / sum, 1e-6);
  }

  // On the last axis the old and new forms agree: one Softmax node.
  ModelBuilder last(11);
  last.inputF32("x", {2, 3});
  last.node("Softmax", {"x"}, {"y"}, "sm");
  last.output("y");
  graph = last.import();
  ASSERT_EQ(graph->numNodes(), 1);
  EXPECT_EQ(graph->nodes()[0]->kind(), OpKind::Softmax);
  EXPECT_EQ(graph->nodes()[0]->attrInt("axis", -1), 1);
}

TEST(OnnxAdapters, UpsampleBecomesResizeWithAsymmetricNearest) {
  // The example of the ONNX Upsample specification: scales [1,1,2,3].
  const std::vector<float> expected = {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2,
                                       3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4};
  ModelBuilder seven(7);
  seven.inputF32("x", {1, 1, 2, 2});
  auto *node = seven.node("Upsample", {"x"}, {"y"}, "up");
  attrString(node, "mode", "nearest");
  attrFloats(node, "scales", {1, 1, 2, 3});
  seven.output("y");
  ModelBuilder nine(9);
  nine.inputF32("x", {1, 1, 2, 2});
  auto *scales = nine.initializer("y.scales", TensorProto::FLOAT, {4});
  for (float v : {1, 1, 2, 3})
    scales->add_float_data(v);
  attrString(nine.node("Upsample", {"x", "y.scales"}, {"y"}, "up"), "mode", "nearest");
  nine.output("y");
  for (ModelBuilder *m : {&seven, &nine}) {
    auto graph = m->import();
    const Node &resize = *graph->nodes()[0];
    EXPECT_EQ(resize.kind(), OpKind::Resize);
    EXPECT_EQ(resize.attrString("coordinate_transformation_mode", ""), "asymmetric");
    EXPECT_EQ(resize.attrString("nearest_mode", ""), "floor");
    EXPECT_EQ(graph->outputs()[0]->type().str(), "f32[1,1,4,6]");
    Tensor result = reference::evaluate(*graph, {f32Tensor({1, 1, 2, 2}, {1, 2, 3, 4})})[0];
    EXPECT_EQ(floatsOf(result), expected);
  }
}

TEST(OnnxAdapters, GroupNormalizationBefore21ScalesPerGroup) {
  // num_groups=2 over 4 channels: group scales [10, 20] become channel scales [10, 10, 20, 20].
  ModelBuilder m(18);
  m.inputF32("x", {1, 4, 2});
  m.initializerF32("scale", {2}, {10, 20});
  m.initializerF32("bias", {2}, {1, 2});
  attrInt(m.node("GroupNormalization", {"x", "scale", "bias"}, {"y"}, "gn"), "num_groups", 2);
  m.output("y");
  auto graph = m.import();
  ASSERT_EQ(graph->numNodes(), 1) << printGraph(*graph);
  const Node &norm = *graph->nodes()[0];
  EXPECT_EQ(floatsOf(norm.input(1)->constant()), (std::vector<float>{10, 10, 20, 20}));
  EXPECT_EQ(floatsOf(norm.input(2)->constant()), (std::vector<float>{1, 1, 2, 2}));
}

TEST(OnnxAdapters, AttributesThatNeverChangeTheResultAreDropped) {
  ModelBuilder gemm(7);
  gemm.inputF32("a", {2, 3});
  gemm.initializerF32("b", {3, 2}, {1, 2, 3, 4, 5, 6});
  gemm.initializerF32("c", {2}, {1, 1});
  attrInt(gemm.node("Gemm", {"a", "b", "c"}, {"y"}), "broadcast", 1);
  gemm.output("y");
  auto graph = gemm.import();
  EXPECT_FALSE(graph->nodes()[0]->hasAttr("broadcast"));
  EXPECT_EQ(graph->outputs()[0]->type().str(), "f32[2,2]");

  // BatchNormalization-7 spatial=1 is the only form; its training outputs go when unused.
  ModelBuilder norm(7);
  norm.inputF32("x", {1, 2, 3});
  for (const char *name : {"s", "b", "mean", "var"})
    norm.initializerF32(name, {2}, {1, 1});
  auto *bn = norm.node("BatchNormalization", {"x", "s", "b", "mean", "var"},
                       {"y", "running_mean", "running_var", "saved_mean", "saved_var"}, "bn");
  attrInt(bn, "spatial", 1);
  norm.output("y");
  graph = norm.import();
  EXPECT_EQ(graph->nodes()[0]->numOutputs(), 1);
  norm.output("saved_mean");
  EXPECT_CONTAINS(userErrorOf([&] { norm.import(); }),
                  "node 'bn' (BatchNormalization, opset 7): training-mode outputs (output 3 "
                  "'saved_mean' is used) are not supported before opset 14");
  norm.graph->mutable_output()->RemoveLast();
  bn->mutable_attribute(0)->set_i(0);
  EXPECT_CONTAINS(userErrorOf([&] { norm.import(); }),
                  "node 'bn' (BatchNormalization, opset 7): spatial=0 (per-activation statistics) "
                  "is not supported");
}

TEST(OnnxAdapters, UnknownWrongAndMissingAttributesAreUserErrors) {
  ModelBuilder unknown;
  unknown.inputF32("x", {2});
  attrInt(unknown.node("Relu", {"x"}, {"y"}, "r"), "fancy", 1);
  unknown.output("y");
  EXPECT_EQ(userErrorOf([&] { unknown.import(); }),
            "model.onnx: node 'r' (Relu, opset 17): attribute 'fancy' is not supported (Relu "
            "takes no attributes)");

  ModelBuilder wrongKind;
  wrongKind.inputF32("x", {2});
  attrString(wrongKind.node("Flatten", {"x"}, {"y"}, "f"), "axis", "one");
  wrongKind.output("y");
  EXPECT_CONTAINS(userErrorOf([&] { wrongKind.import(); }),
                  "node 'f' (Flatten, opset 17): attribute 'axis' is a string, expected an int");

  ModelBuilder missing;
  missing.inputF32("x", {2});
  missing.node("Concat", {"x", "x"}, {"y"}, "cat");
  missing.output("y");
  EXPECT_CONTAINS(userErrorOf([&] { missing.import(); }),
                  "node 'cat' (Concat, opset 17): attribute 'axis' is required");

  ModelBuilder cast;
  cast.inputF32("x", {2});
  attrInt(cast.node("Cast", {"x"}, {"y"}, "c"), "to", TensorProto::STRING);
  cast.output("y");
  EXPECT_CONTAINS(userErrorOf([&] { cast.import(); }),
                  "node 'c' (Cast, opset 17): casting to string is not supported");

  ModelBuilder arity;
  arity.inputF32("x", {2});
  arity.node("Relu", {"x", "x"}, {"y"}, "r");
  arity.output("y");
  EXPECT_CONTAINS(userErrorOf([&] { arity.import(); }),
                  "node 'r' (Relu, opset 17): has 2 inputs, but Relu takes 1");
}

TEST(OnnxAdapters, ScatterIsScatterElements) {
  ModelBuilder m(9);
  m.inputF32("x", {2, 2});
  m.initializerI64("i", {1, 2}, {1, 0});
  m.initializerF32("u", {1, 2}, {5, 6});
  attrInt(m.node("Scatter", {"x", "i", "u"}, {"y"}), "axis", 0);
  m.output("y");
  auto graph = m.import();
  EXPECT_EQ(graph->nodes()[0]->kind(), OpKind::ScatterElements);
  EXPECT_EQ(graph->nodes()[0]->attrInt("axis", -1), 0);
}

// ---- Constant nodes and folding -----------------------------------------------------------------

TEST(OnnxAdapters, ConstantNodeValueForms) {
  ModelBuilder m;
  auto *tensor = attrTensor(m.node("Constant", {}, {"t"}), "value");
  tensor->set_data_type(TensorProto::INT32);
  tensor->add_dims(2);
  tensor->add_int32_data(-4);
  tensor->add_int32_data(9);
  attrFloat(m.node("Constant", {}, {"f"}), "value_float", 2.5f);
  attrFloats(m.node("Constant", {}, {"fs"}), "value_floats", {1, 2, 3});
  attrInt(m.node("Constant", {}, {"i"}), "value_int", int64_t(1) << 60);
  attrInts(m.node("Constant", {}, {"is"}), "value_ints", {7, -7});
  for (const char *name : {"t", "f", "fs", "i", "is"})
    m.output(name);
  auto graph = m.import();
  EXPECT_EQ(graph->numNodes(), 0);
  const auto &outputs = graph->outputs();
  EXPECT_EQ(outputs[0]->type().str(), "i32[2]");
  EXPECT_EQ(outputs[0]->constant().toInts(), (std::vector<int64_t>{-4, 9}));
  EXPECT_EQ(outputs[1]->type().str(), "f32[]");
  EXPECT_EQ(outputs[1]->constant().getDouble(0), 2.5);
  EXPECT_EQ(outputs[2]->type().str(), "f32[3]");
  EXPECT_EQ(outputs[3]->type().str(), "i64[]");
  EXPECT_EQ(outputs[3]->constant().getInt(0), int64_t(1) << 60);
  EXPECT_EQ(outputs[4]->constant().toInts(), (std::vector<int64_t>{7, -7}));
  for (int i = 0; i < 5; ++i)
    EXPECT_EQ(outputs[i]->name(), m.graph->output(i).name());

  ModelBuilder strings;
  auto *node = strings.node("Constant", {}, {"s"}, "words");
  auto *attribute = node->add_attribute();
  attribute->set_name("value_string");
  attribute->set_type(::onnx::AttributeProto::STRING);
  attribute->set_s("hello");
  strings.output("s");
  EXPECT_EQ(userErrorOf([&] { strings.import(); }),
            "model.onnx: node 'words' (Constant, opset 17): string constants are not supported");
}

TEST(OnnxAdapters, ShapeComputationsFoldAsTheyAreImported) {
  // y = Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0)), [-1])): [2,3,4] -> [2,12].
  ModelBuilder m;
  m.inputF32("x", {2, 3, 4});
  m.node("Shape", {"x"}, {"shape"});
  m.initializerI64("zero", {}, {0});
  m.node("Gather", {"shape", "zero"}, {"batch"});
  m.initializerI64("axes", {1}, {0});
  m.node("Unsqueeze", {"batch", "axes"}, {"batch1"});
  m.initializerI64("minus_one", {1}, {-1});
  attrInt(m.node("Concat", {"batch1", "minus_one"}, {"target"}), "axis", 0);
  m.node("Reshape", {"x", "target"}, {"y"}, "reshape");
  m.output("y");
  m.output("target");
  auto graph = m.import();
  ASSERT_EQ(graph->numNodes(), 1) << printGraph(*graph);
  EXPECT_EQ(graph->nodes()[0]->kind(), OpKind::Reshape);
  EXPECT_EQ(graph->outputs()[0]->type().str(), "f32[2,12]");
  // A folded value keeps its name, also as a graph output.
  EXPECT_EQ(graph->outputs()[1]->name(), "target");
  EXPECT_EQ(graph->outputs()[1]->constant().toInts(), (std::vector<int64_t>{2, -1}));
  // Constants only the folded nodes read are gone.
  EXPECT_EQ(graph->findValue("zero"), nullptr);

  sinter::onnx::ImportOptions noFolding;
  noFolding.foldLimitElements = 0;
  EXPECT_EQ(m.import(noFolding)->numNodes(), 5);
}

TEST(OnnxAdapters, NodesTheEvaluatorRejectsAreKept) {
  // Training-mode Dropout is random: the evaluator refuses it, so it stays a node.
  ModelBuilder m(13);
  m.initializerF32("x", {3}, {1, 2, 3});
  m.initializerF32("ratio", {}, {0.5f});
  m.initializer("training", TensorProto::BOOL, {})->add_int32_data(1);
  m.node("Dropout", {"x", "ratio", "training"}, {"y"}, "drop");
  m.output("y");
  auto graph = m.import();
  ASSERT_EQ(graph->numNodes(), 1);
  EXPECT_EQ(graph->nodes()[0]->kind(), OpKind::Dropout);
  EXPECT_EQ(graph->outputs()[0]->type().str(), "f32[3]");
}
