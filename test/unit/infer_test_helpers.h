// Helpers for the shape-inference tests: build one node over graph inputs and constants, infer
// its output types, and compare against types written by hand from the ONNX spec.
#pragma once

#include "sinter/ir/graph.h"
#include "sinter/ir/infer.h"
#include "sinter/support/error.h"

#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace sinter {
/// Readable gtest failure messages: "f32[batch,3]".
inline void PrintTo(const TensorType &type, std::ostream *os) { *os << type.str(); }
} // namespace sinter

namespace sinter::testing {

inline Dim sym(const char *name) { return Dim::symbol(name); }
inline Dim unk() { return Dim::unknown(); }
inline TensorType f32(Shape shape) { return {DType::Float32, std::move(shape)}; }
inline TensorType i64(Shape shape) { return {DType::Int64, std::move(shape)}; }
inline TensorType ofType(DType dtype, Shape shape) { return {dtype, std::move(shape)}; }

using Attrs = std::vector<std::pair<std::string, Attribute>>;

/// One graph per test; inputs and constants are added as needed.
class InferBuilder {
public:
  Value *input(TensorType type) { return graph.addInput("x", std::move(type)); }
  Value *ints(const std::vector<int64_t> &values, DType dtype = DType::Int64) {
    return graph.addConstant("c", Tensor::fromInts(values, dtype));
  }
  Value *scalar(DType dtype, double value) {
    return graph.addConstant("s", Tensor::scalar(dtype, value));
  }
  Value *floats(const std::vector<float> &values) {
    Tensor tensor(DType::Float32, {int64_t(values.size())});
    for (size_t i = 0; i < values.size(); ++i)
      tensor.setDouble(int64_t(i), values[i]);
    return graph.addConstant("f", std::move(tensor));
  }
  Node *node(OpKind kind, const std::vector<Value *> &inputs, const Attrs &attrs = {},
             int outputs = 1, const std::string &name = "n") {
    Node *node = graph.addNode(kind, inputs, outputs, name);
    for (const auto &[key, value] : attrs)
      node->setAttr(key, value);
    return node;
  }
  /// Infers and sets the node's output types; returns them.
  std::vector<TensorType> inferAll(OpKind kind, const std::vector<Value *> &inputs,
                                   const Attrs &attrs = {}, int outputs = 1) {
    Node *n = node(kind, inputs, attrs, outputs);
    inferNode(*n);
    std::vector<TensorType> types;
    for (Value *output : n->outputs())
      types.push_back(output->type());
    return types;
  }
  TensorType infer(OpKind kind, const std::vector<Value *> &inputs, const Attrs &attrs = {}) {
    return inferAll(kind, inputs, attrs).at(0);
  }
  /// The UserError message inference gives, or "" when it succeeds.
  std::string error(OpKind kind, const std::vector<Value *> &inputs, const Attrs &attrs = {},
                    int outputs = 1) {
    Node *n = node(kind, inputs, attrs, outputs, "bad");
    try {
      inferOutputTypes(*n);
    } catch (const UserError &e) {
      return e.what();
    }
    return "";
  }

  Graph graph;
};

inline Attribute intsAttr(std::vector<int64_t> values) { return Attribute(std::move(values)); }
inline Attribute strAttr(const char *value) { return Attribute(std::string(value)); }
inline Attribute intAttr(int64_t value) { return Attribute(value); }

} // namespace sinter::testing

/// Expects inference to fail with a UserError that names the node ("bad") and the op.
#define EXPECT_INFER_ERROR(builder, kind, ...)                                                  \
  do {                                                                                         \
    std::string message = (builder).error(kind, __VA_ARGS__);                                  \
    EXPECT_NE(message.find("'bad'"), std::string::npos) << "no error, or unnamed: " << message; \
    EXPECT_NE(message.find(std::string(opName(kind))), std::string::npos) << message;          \
  } while (false)
