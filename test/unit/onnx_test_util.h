// Helpers for the ONNX importer's tests: ModelProtos built in C++ with the generated classes, and
// a temporary folder per test for model files and external data.
#pragma once

#include "sinter/frontend/onnx.h"
#include "sinter/support/error.h"

#include "onnx/onnx.pb.h"
#include "temp_dir.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>
#include <variant>
#include <vector>

namespace sinter::onnx_test {

namespace fs = std::filesystem;
using OnnxDim = std::variant<int64_t, std::string>; ///< a dim_value or a dim_param

using sinter::testing::TempDir;

/// Builds a ModelProto: one ai.onnx opset import, a graph, inputs, initializers and nodes.
class ModelBuilder {
public:
  explicit ModelBuilder(int64_t opset = 17) {
    model.set_ir_version(8);
    model.set_producer_name("sinter-test");
    auto *import = model.add_opset_import();
    import->set_domain("");
    import->set_version(opset);
    graph = model.mutable_graph();
    graph->set_name("test");
  }

  ::onnx::ValueInfoProto *input(const std::string &name, int elemType,
                                const std::vector<OnnxDim> &dims) {
    auto *info = graph->add_input();
    info->set_name(name);
    auto *tensor = info->mutable_type()->mutable_tensor_type();
    tensor->set_elem_type(elemType);
    auto *shape = tensor->mutable_shape();
    for (const OnnxDim &dim : dims) {
      auto *entry = shape->add_dim();
      if (auto *value = std::get_if<int64_t>(&dim)) {
        if (*value != kUnknownDim)
          entry->set_dim_value(*value);
      } else {
        entry->set_dim_param(std::get<std::string>(dim));
      }
    }
    return info;
  }
  ::onnx::ValueInfoProto *inputF32(const std::string &name, const std::vector<OnnxDim> &dims) {
    return input(name, ::onnx::TensorProto::FLOAT, dims);
  }
  void output(const std::string &name) { graph->add_output()->set_name(name); }

  ::onnx::NodeProto *node(const std::string &op, const std::vector<std::string> &inputs,
                          const std::vector<std::string> &outputs, const std::string &name = "",
                          const std::string &domain = "") {
    auto *node = graph->add_node();
    node->set_op_type(op);
    node->set_name(name);
    if (!domain.empty())
      node->set_domain(domain);
    for (const auto &input : inputs)
      node->add_input(input);
    for (const auto &output : outputs)
      node->add_output(output);
    return node;
  }

  ::onnx::TensorProto *initializer(const std::string &name, int dataType,
                                   const std::vector<int64_t> &dims) {
    auto *tensor = graph->add_initializer();
    tensor->set_name(name);
    tensor->set_data_type(dataType);
    for (int64_t dim : dims)
      tensor->add_dims(dim);
    return tensor;
  }
  ::onnx::TensorProto *initializerF32(const std::string &name, const std::vector<int64_t> &dims,
                                      const std::vector<float> &values) {
    auto *tensor = initializer(name, ::onnx::TensorProto::FLOAT, dims);
    for (float value : values)
      tensor->add_float_data(value);
    return tensor;
  }
  ::onnx::TensorProto *initializerI64(const std::string &name, const std::vector<int64_t> &dims,
                                      const std::vector<int64_t> &values) {
    auto *tensor = initializer(name, ::onnx::TensorProto::INT64, dims);
    for (int64_t value : values)
      tensor->add_int64_data(value);
    return tensor;
  }

  std::string bytes() const { return model.SerializeAsString(); }
  /// Imports from memory (no external data).
  std::unique_ptr<Graph> import(const onnx::ImportOptions &options = {}) const {
    return onnx::importModelBytes(bytes(), "", options, "model.onnx");
  }

  static constexpr int64_t kUnknownDim = -999; ///< in input(): a dim with neither value nor param

  ::onnx::ModelProto model;
  ::onnx::GraphProto *graph;
};

inline void attrInt(::onnx::NodeProto *node, const std::string &name, int64_t value) {
  auto *a = node->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INT);
  a->set_i(value);
}
inline void attrFloat(::onnx::NodeProto *node, const std::string &name, float value) {
  auto *a = node->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::FLOAT);
  a->set_f(value);
}
inline void attrString(::onnx::NodeProto *node, const std::string &name, const std::string &value) {
  auto *a = node->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::STRING);
  a->set_s(value);
}
inline void attrInts(::onnx::NodeProto *node, const std::string &name,
                     const std::vector<int64_t> &values) {
  auto *a = node->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INTS);
  for (int64_t value : values)
    a->add_ints(value);
}
inline void attrFloats(::onnx::NodeProto *node, const std::string &name,
                       const std::vector<float> &values) {
  auto *a = node->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::FLOATS);
  for (float value : values)
    a->add_floats(value);
}
inline ::onnx::TensorProto *attrTensor(::onnx::NodeProto *node, const std::string &name) {
  auto *a = node->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::TENSOR);
  return a->mutable_t();
}

/// Passes when `text` contains `part`.
inline ::testing::AssertionResult contains(const std::string &text, const std::string &part) {
  if (text.find(part) != std::string::npos)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "\"" << text << "\"\n  does not contain \"" << part << "\"";
}
#define EXPECT_CONTAINS(text, part) EXPECT_TRUE(::sinter::onnx_test::contains((text), (part)))

/// The UserError message of `body`, or a failure when it does not throw one.
template <typename Body> std::string userErrorOf(Body body) {
  try {
    body();
  } catch (const UserError &error) {
    return error.what();
  }
  ADD_FAILURE() << "expected a UserError";
  return "";
}

} // namespace sinter::onnx_test
