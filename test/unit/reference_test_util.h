// Helpers for reference-evaluator tests: make tensors from literal values, run one node through
// the whole evaluator (graph inputs, rule, output-type check), and compare results.
#pragma once

#include "sinter/ir/graph.h"
#include "sinter/reference/evaluator.h"
#include "sinter/support/error.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace sinter::testing {

/// A tensor of `dtype` and `dims` holding `values` (converted with Tensor::setDouble, which is
/// exact for every value a test writes).
inline Tensor makeTensor(DType dtype, std::vector<int64_t> dims, const std::vector<double> &values) {
  Tensor tensor(dtype, std::move(dims));
  EXPECT_EQ(tensor.elementCount(), int64_t(values.size())) << "test tensor literal has wrong size";
  for (size_t i = 0; i < values.size() && int64_t(i) < tensor.elementCount(); ++i)
    tensor.setDouble(int64_t(i), values[i]);
  return tensor;
}

/// A tensor of integers, set exactly (64-bit values do not pass through double).
inline Tensor makeInts(DType dtype, std::vector<int64_t> dims, const std::vector<int64_t> &values) {
  Tensor tensor(dtype, std::move(dims));
  EXPECT_EQ(tensor.elementCount(), int64_t(values.size())) << "test tensor literal has wrong size";
  for (size_t i = 0; i < values.size() && int64_t(i) < tensor.elementCount(); ++i)
    tensor.setInt(int64_t(i), values[i]);
  return tensor;
}

inline Tensor f32(std::vector<int64_t> dims, const std::vector<double> &values) {
  return makeTensor(DType::Float32, std::move(dims), values);
}
inline Tensor i64(std::vector<int64_t> dims, const std::vector<int64_t> &values) {
  return makeInts(DType::Int64, std::move(dims), values);
}

using Attributes = std::map<std::string, Attribute>;

/// Builds a graph of one node of `kind` whose inputs are graph inputs (an absent optional input
/// is std::nullopt), records `outputTypes` as the node's output types, and runs it with
/// reference::evaluate.
inline std::vector<Tensor> runNode(OpKind kind, const std::vector<std::optional<Tensor>> &inputs,
                                   const std::vector<TensorType> &outputTypes,
                                   const Attributes &attributes = {}) {
  Graph graph;
  std::vector<Value *> values;
  std::vector<Tensor> feeds;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i]) {
      values.push_back(nullptr);
      continue;
    }
    values.push_back(graph.addInput("in" + std::to_string(i), inputs[i]->type()));
    feeds.push_back(*inputs[i]);
  }
  Node *node = graph.addNode(kind, values, int(outputTypes.size()), "node");
  for (const auto &[name, value] : attributes)
    node->setAttr(name, value);
  for (size_t i = 0; i < outputTypes.size(); ++i) {
    node->output(int(i))->setType(outputTypes[i]);
    graph.addOutput(node->output(int(i)));
  }
  return reference::evaluate(graph, feeds);
}

/// runNode for a node with one output.
inline Tensor runOne(OpKind kind, const std::vector<std::optional<Tensor>> &inputs,
                     TensorType outputType, const Attributes &attributes = {}) {
  return runNode(kind, inputs, {std::move(outputType)}, attributes).at(0);
}

inline TensorType typeOf(DType dtype, std::vector<int64_t> dims) { return {dtype, shapeOf(dims)}; }

/// Expects `actual` to have `dtype`, `dims` and values within `tolerance` (absolute plus the same
/// relative) of `expected`; NaN matches NaN and infinities match exactly.
inline void expectTensor(const Tensor &actual, DType dtype, const std::vector<int64_t> &dims,
                         const std::vector<double> &expected, double tolerance = 0) {
  ASSERT_EQ(dtypeName(actual.dtype()), dtypeName(dtype));
  ASSERT_EQ(actual.dims(), dims);
  ASSERT_EQ(actual.elementCount(), int64_t(expected.size()));
  for (size_t i = 0; i < expected.size(); ++i) {
    double got = actual.getDouble(int64_t(i));
    double want = expected[i];
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << "element " << i << ": " << got << ", expected NaN";
    } else if (std::isinf(want) || tolerance == 0) {
      EXPECT_EQ(got, want) << "element " << i;
    } else {
      EXPECT_NEAR(got, want, tolerance * (1 + std::fabs(want))) << "element " << i;
    }
  }
}

/// Expects exact integer values (read with Tensor::getInt).
inline void expectInts(const Tensor &actual, DType dtype, const std::vector<int64_t> &dims,
                       const std::vector<int64_t> &expected) {
  ASSERT_EQ(dtypeName(actual.dtype()), dtypeName(dtype));
  ASSERT_EQ(actual.dims(), dims);
  ASSERT_EQ(actual.toInts(), expected);
}

/// Expects `statement` to throw UserError whose message contains `fragment`.
#define EXPECT_USER_ERROR(statement, fragment)                                                     \
  do {                                                                                             \
    try {                                                                                          \
      statement;                                                                                   \
      ADD_FAILURE() << "expected a UserError containing '" << (fragment) << "'";                   \
    } catch (const ::sinter::UserError &error) {                                                   \
      EXPECT_NE(std::string(error.what()).find(fragment), std::string::npos) << error.what();      \
    }                                                                                              \
  } while (false)

} // namespace sinter::testing
