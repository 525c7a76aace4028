// prove-independent-dim (lib/passes/independent_dims.h): text IR in, the verdict and where the
// dim lands in each output out. Each accepted graph is also checked numerically with the reference
// evaluator: rows of the input along the dim are changed one at a time, and every output may
// change only in the same row, so an accepting rule that were wrong would fail here.
#include "sinter/passes/independent_dims.h"

#include "pass_test_util.h"

using namespace sinter;

namespace {

/// "%name = constant f32[dims] [values]" with values that differ (0.25 steps, wrapping).
std::string constant(const std::string &name, const std::vector<int64_t> &dims) {
  int64_t count = 1;
  std::string shape;
  for (int64_t dim : dims) {
    count *= dim;
    shape += (shape.empty() ? "" : ",") + std::to_string(dim);
  }
  std::string values;
  for (int64_t i = 0; i < count; ++i)
    values += (i ? ", " : "") + std::to_string(double(i % 7) * 0.25 - 0.5);
  return "  %" + name + " = constant f32[" + shape + "] [" + values + "]\n";
}

DimIndependence prove(const std::string &text, const std::vector<DimOrigin> &origins,
                      std::unique_ptr<Graph> *parsed = nullptr) {
  std::unique_ptr<Graph> graph = parseGraph(text);
  verifyGraph(*graph, "the test's input");
  DimIndependence result = proveIndependentDim(*graph, origins);
  if (parsed)
    *parsed = std::move(graph);
  return result;
}

/// Offset of element `index` of a tensor with `dims` along `axis`: its coordinate on that axis.
int64_t coordinate(const std::vector<int64_t> &dims, int64_t index, int axis) {
  for (int i = int(dims.size()) - 1; i > axis; --i)
    index /= dims[i];
  return index % dims[axis];
}

/// Changes row `row` along the dim in every input that carries it and checks that each output
/// changed in that row only (the property the runtime's padding relies on).
void expectRowsIndependent(const Graph &graph, const std::vector<DimOrigin> &origins,
                           const DimIndependence &proof, int64_t row) {
  std::vector<Tensor> inputs = sinter::testing::randomInputs(graph, 11);
  std::vector<Tensor> before = reference::evaluate(graph, inputs);
  std::vector<Tensor> changed = inputs;
  std::mt19937 generator(5);
  for (const DimOrigin &origin : origins)
    for (size_t i = 0; i < graph.inputs().size(); ++i)
      if (graph.inputs()[i]->name() == origin.input)
        for (int64_t e = 0; e < changed[i].elementCount(); ++e)
          if (coordinate(changed[i].dims(), e, origin.axis) == row)
            changed[i].setDouble(e, isFloat(changed[i].dtype())
                                        ? double(generator() % 100) / 10.0 + 3.0
                                        : double(generator() % 3 + 1));
  std::vector<Tensor> after = reference::evaluate(graph, changed);
  for (size_t o = 0; o < before.size(); ++o) {
    int axis = proof.outputAxes[o];
    for (int64_t e = 0; e < before[o].elementCount(); ++e)
      if (axis < 0 || coordinate(before[o].dims(), e, axis) != row)
        ASSERT_EQ(before[o].getDouble(e), after[o].getDouble(e))
            << "output " << o << " element " << e << " changed outside row " << row;
  }
}

void expectIndependent(const std::string &text, const std::vector<DimOrigin> &origins,
                       const std::vector<int> &outputAxes) {
  std::unique_ptr<Graph> graph;
  DimIndependence proof = prove(text, origins, &graph);
  ASSERT_TRUE(proof.independent) << proof.reason;
  EXPECT_EQ(proof.outputAxes, outputAxes);
  expectRowsIndependent(*graph, origins, proof, 1);
}

void expectRejected(const std::string &text, const std::vector<DimOrigin> &origins,
                    const std::string &reasonPart) {
  DimIndependence proof = prove(text, origins);
  EXPECT_FALSE(proof.independent);
  EXPECT_NE(proof.reason.find(reasonPart), std::string::npos) << proof.reason;
}

} // namespace

TEST(ProveIndependentDim, ElementwiseWithBroadcastKeepsTheBatchAxis) {
  expectIndependent("graph @main(%x: f32[4,3]) -> (%y) {\n" + constant("b", {3}) + R"(  %a = Add(%x, %b) : f32[4,3]
  %y = Relu(%a) : f32[4,3]
  return
})",
                    {{"x", 0}}, {0});
}

TEST(ProveIndependentDim, BatchNormalizationInInferenceOverTheBatchAxis) {
  std::string text = "graph @main(%x: f32[3,2,2,2]) -> (%y) {\n" + constant("s", {2}) +
                     constant("t", {2}) + constant("m", {2}) + R"(  %v = constant f32[2] [1.0, 2.0]
  %y = BatchNormalization(%x, %s, %t, %m, %v) : f32[3,2,2,2]
  return
})";
  expectIndependent(text, {{"x", 0}}, {0});
  expectRejected(text, {{"x", 1}}, "normalises per channel along axis 1");
}

TEST(ProveIndependentDim, LayerNormAndSoftmaxOverAnotherAxis) {
  std::string text = "graph @main(%x: f32[3,4,5]) -> (%y) {\n" + constant("s", {5}) + R"(  %n = LayerNormalization(%x, %s, %s) {axis = -1} : f32[3,4,5]
  %y = Softmax(%n) {axis = 1} : f32[3,4,5]
  return
})";
  expectIndependent(text, {{"x", 0}}, {0});
  expectRejected(text, {{"x", 2}}, "normalises along axis 2");
  expectRejected(text, {{"x", 1}}, "Softmax");
}

TEST(ProveIndependentDim, SoftmaxOverTheDimIsRejected) {
  expectRejected(R"(graph @main(%x: f32[4,3]) -> (%y) {
  %y = Softmax(%x) {axis = 0} : f32[4,3]
  return
})",
                 {{"x", 0}}, "Softmax producing 'y' normalises along axis 0, which carries the dim");
}

TEST(ProveIndependentDim, MatMulRowsAndBatchesAreIndependentItsReductionIsNot) {
  std::string text = "graph @main(%x: f32[2,3,4]) -> (%y) {\n" + constant("w", {4, 5}) + R"(  %y = MatMul(%x, %w) : f32[2,3,5]
  return
})";
  expectIndependent(text, {{"x", 0}}, {0}); // a batch dim
  expectIndependent(text, {{"x", 1}}, {1}); // the rows
  expectRejected(text, {{"x", 2}}, "sums along the dim");
}

TEST(ProveIndependentDim, GemmRowsAndConvBatch) {
  expectIndependent("graph @main(%x: f32[3,4]) -> (%y) {\n" + constant("w", {5, 4}) +
                        constant("c", {5}) + R"(  %y = Gemm(%x, %w, %c) {transB = 1} : f32[3,5]
  return
})",
                    {{"x", 0}}, {0});
  std::string conv = "graph @main(%x: f32[3,2,4,4]) -> (%y) {\n" + constant("w", {2, 2, 3, 3}) +
                     R"(  %c = Conv(%x, %w) {pads = [1, 1, 1, 1]} : f32[3,2,4,4]
  %p = GlobalAveragePool(%c) : f32[3,2,1,1]
  %y = Flatten(%p) {axis = 1} : f32[3,2]
  return
})";
  expectIndependent(conv, {{"x", 0}}, {0});
  expectRejected(conv, {{"x", 2}}, "works across channels and positions along axis 2");
}

TEST(ProveIndependentDim, AttentionOverAnotherAxisWithHeadsThroughReshapesAndTransposes) {
  // Self-attention over the sequence (axis 1) of a batch (axis 0): scores [b, heads, s, s].
  std::string text = "graph @main(%x: f32[3,4,8]) -> (%y) {\n" + constant("wq", {8, 8}) +
                     constant("wk", {8, 8}) + R"(  %split = constant i64[4] [3, 4, 2, 4]
  %q = MatMul(%x, %wq) : f32[3,4,8]
  %k = MatMul(%x, %wk) : f32[3,4,8]
  %qh = Reshape(%q, %split) : f32[3,4,2,4]
  %kh = Reshape(%k, %split) : f32[3,4,2,4]
  %qt = Transpose(%qh) {perm = [0, 2, 1, 3]} : f32[3,2,4,4]
  %kt = Transpose(%kh) {perm = [0, 2, 3, 1]} : f32[3,2,4,4]
  %s = MatMul(%qt, %kt) : f32[3,2,4,4]
  %p = Softmax(%s) {axis = -1} : f32[3,2,4,4]
  %o = MatMul(%p, %qt) : f32[3,2,4,4]
  %ot = Transpose(%o) {perm = [0, 2, 1, 3]} : f32[3,4,2,4]
  %merge = constant i64[3] [3, 4, 8]
  %y = Reshape(%ot, %merge) : f32[3,4,8]
  return
})";
  expectIndependent(text, {{"x", 0}}, {0});
  // The sequence is mixed by the scores' product (its rows meet the keys' columns).
  expectRejected(text, {{"x", 1}}, "MatMul");
}

TEST(ProveIndependentDim, OnnxAttentionAlongItsBatchAxis) {
  std::string text = R"(graph @main(%q: f32[2,2,3,4], %k: f32[2,2,3,4], %v: f32[2,2,3,4]) -> (%y) {
  %y = Attention(%q, %k, %v) : f32[2,2,3,4]
  return
})";
  expectIndependent(text, {{"q", 0}, {"k", 0}, {"v", 0}}, {0});
  expectRejected(text, {{"q", 2}, {"k", 2}, {"v", 2}}, "attends along axis 2");
}

TEST(ProveIndependentDim, ReductionsOverTheDimAreRejectedOverOthersKept) {
  std::string text = R"(graph @main(%x: f32[4,3]) -> (%y) {
  %axes = constant i64[1] [0]
  %y = ReduceSum(%x, %axes) {keepdims = 0} : f32[3]
  return
})";
  expectRejected(text, {{"x", 0}}, "reduces along axis 0");
  expectIndependent(text, {{"x", 1}}, {0}); // the dim moves down one axis
  expectRejected(R"(graph @main(%x: f32[4,3]) -> (%y) {
  %y = ReduceMean(%x) {keepdims = 1} : f32[1,1]
  return
})",
                 {{"x", 0}}, "reduces along axis 0");
}

TEST(ProveIndependentDim, ReshapeAndFlattenThatMergeTheDimAreRejected) {
  expectRejected(R"(graph @main(%x: f32[4,3]) -> (%y) {
  %shape = constant i64[1] [12]
  %y = Reshape(%x, %shape) : f32[12]
  return
})",
                 {{"x", 0}}, "merges the dim (axis 0 of [4,3]) with other dims into [12]");
  expectRejected(R"(graph @main(%x: f32[4,3,2]) -> (%y) {
  %y = Flatten(%x) {axis = 2} : f32[12,2]
  return
})",
                 {{"x", 0}}, "merges the dim");
  expectIndependent(R"(graph @main(%x: f32[4,3,2]) -> (%y) {
  %y = Flatten(%x) {axis = 1} : f32[4,6]
  return
})",
                    {{"x", 0}}, {0});
}

TEST(ProveIndependentDim, TransposeThatMovesTheDimIntoAMixedPositionIsRejected) {
  // Transposed to the last axis, the dim meets the Softmax's axis.
  expectRejected(R"(graph @main(%x: f32[4,3]) -> (%y) {
  %t = Transpose(%x) {perm = [1, 0]} : f32[3,4]
  %y = Softmax(%t) {axis = -1} : f32[3,4]
  return
})",
                 {{"x", 0}}, "Softmax");
  // Transposed into the contraction's reduction.
  expectRejected("graph @main(%x: f32[4,3]) -> (%y) {\n" + constant("w", {4, 2}) + R"(  %t = Transpose(%x) {perm = [1, 0]} : f32[3,4]
  %y = MatMul(%t, %w) : f32[3,2]
  return
})",
                 {{"x", 0}}, "sums along the dim");
}

TEST(ProveIndependentDim, DataMovementThatCutsTheDimIsRejected) {
  expectRejected(R"(graph @main(%x: f32[4,3]) -> (%y) {
  %starts = constant i64[1] [1]
  %ends = constant i64[1] [4]
  %axes = constant i64[1] [0]
  %y = Slice(%x, %starts, %ends, %axes) : f32[3,3]
  return
})",
                 {{"x", 0}}, "slices axis 0");
  expectRejected(R"(graph @main(%x: f32[4,3]) -> (%y) {
  %y = Concat(%x, %x) {axis = 0} : f32[8,3]
  return
})",
                 {{"x", 0}}, "concatenates along axis 0");
  expectRejected(R"(graph @main(%x: f32[4,3]) -> (%y) {
  %i = constant i64[2] [0, 2]
  %y = Gather(%x, %i) {axis = 0} : f32[2,3]
  return
})",
                 {{"x", 0}}, "picks slices along axis 0");
  expectRejected(R"(graph @main(%x: f32[4,3]) -> (%y) {
  %y = Shape(%x) : i64[2]
  return
})",
                 {{"x", 0}}, "reads the size of the dim");
}

TEST(ProveIndependentDim, EmbeddingLookupMovesTheDimFromTheIndices) {
  // ids [batch, seq] gather rows of a table: the output carries the batch at axis 0; Concat and
  // Slice along other axes keep it.
  expectIndependent("graph @main(%ids: i64[3,2], %x: f32[3,2,4]) -> (%y) {\n" +
                        constant("table", {5, 4}) + R"(  %e = Gather(%table, %ids) {axis = 0} : f32[3,2,4]
  %c = Concat(%e, %x) {axis = 2} : f32[3,2,8]
  %starts = constant i64[1] [2]
  %ends = constant i64[1] [6]
  %axes = constant i64[1] [2]
  %y = Slice(%c, %starts, %ends, %axes) : f32[3,2,4]
  return
})",
                    {{"ids", 0}, {"x", 0}}, {0});
}

TEST(ProveIndependentDim, AnOpWithoutARuleFailsTheProof) {
  expectRejected(R"(graph @main(%x: f32[3,3]) -> (%y) {
  %y = Det(%x) : f32[]
  return
})",
                 {{"x", 0}}, "has no rule");
}

TEST(ProveIndependentDim, AnOutputThatDoesNotDependOnTheDimHasNoAxis) {
  expectIndependent("graph @main(%x: f32[4,3]) -> (%y, %c) {\n" + constant("c", {2}) +
                        R"(  %y = Neg(%x) : f32[4,3]
  return
})",
                    {{"x", 0}}, {0, -1});
}
