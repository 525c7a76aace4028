// summarizeModel: what `sinter inspect` shows without importing, so it works on models with
// unsupported ops or types. Malformed files still fail with a UserError naming the file.
#include "onnx_internal.h"

#include "sinter/support/error.h"

#include <cmath>

namespace sinter::onnx {

using namespace detail;

namespace {

std::string describeShape(const ::onnx::TypeProto_Tensor &tensor, const std::string &what) {
  if (!tensor.has_shape())
    return "[*]";
  Shape shape;
  for (const auto &dim : tensor.shape().dim()) {
    if (dim.has_dim_value()) {
      if (dim.dim_value() < 0)
        userError(what, " has a negative dimension ", dim.dim_value());
      shape.push_back(Dim(dim.dim_value()));
    } else if (dim.has_dim_param() && !dim.dim_param().empty()) {
      shape.push_back(Dim::symbol(dim.dim_param()));
    } else {
      shape.push_back(Dim::unknown());
    }
  }
  return shapeStr(shape);
}

// "f32[batch,3,224,224]" for tensors sinter supports, ONNX's spelling otherwise.
std::string describePort(const ::onnx::ValueInfoProto &info, const std::string &what) {
  if (!info.has_type())
    return "?";
  const ::onnx::TypeProto &type = info.type();
  if (type.value_case() != ::onnx::TypeProto::kTensorType)
    return describeTypeProto(type);
  std::string shape = describeShape(type.tensor_type(), what);
  if (std::optional<DType> dtype = dtypeFromOnnx(type.tensor_type().elem_type()))
    return std::string(dtypeName(*dtype)) + shape;
  return describeTypeProto(type) + shape;
}

} // namespace

ModelSummary summarizeModel(const std::string &path) {
  try {
    ::onnx::ModelProto model;
    parseMessageFile(path, model, "ONNX model");
    if (!model.has_graph())
      userError("not an ONNX model: it has no graph");
    const ::onnx::GraphProto &graph = model.graph();

    ModelSummary summary;
    summary.irVersion = model.ir_version();
    summary.opset = aiOnnxOpset(model).value_or(0);
    summary.producer = model.producer_name();
    if (!model.producer_version().empty())
      summary.producer += (summary.producer.empty() ? "" : " ") + model.producer_version();

    std::set<std::string> initializers;
    for (const auto &initializer : graph.initializer()) {
      initializers.insert(initializer.name());
      std::string what = "initializer '" + initializer.name() + "'";
      int64_t count = checkedElementCount(initializer.dims(), what);
      summary.parameterCount += count;
      if (initializer.data_type() == ::onnx::TensorProto::STRING) {
        for (const std::string &text : initializer.string_data())
          summary.parameterBytes += int64_t(text.size());
      } else {
        summary.parameterBytes +=
            int64_t(std::ceil(double(count) * onnxTypeSize(initializer.data_type())));
      }
    }
    for (const auto &input : graph.input())
      if (!initializers.count(input.name()))
        summary.inputs.push_back(
            {input.name(), describePort(input, "graph input '" + input.name() + "'")});
    for (const auto &output : graph.output())
      summary.outputs.push_back(
          {output.name(), describePort(output, "graph output '" + output.name() + "'")});

    for (const auto &node : graph.node()) {
      std::string domain = canonicalDomain(node.domain());
      std::string qualified = domain == "ai.onnx" ? node.op_type() : domain + ":" + node.op_type();
      ++summary.opHistogram[qualified];
      if (domain == "ai.onnx" && isSupportedOp(node.op_type()))
        continue;
      std::optional<int64_t> version = domainOpset(model, node.domain());
      std::string key = domain + ":" + node.op_type() + " (opset " +
                        (version ? std::to_string(*version) : std::string("?")) + ")";
      ++summary.unsupportedOps[key];
    }
    return summary;
  } catch (const UserError &error) {
    std::string message = error.what();
    if (message.rfind(path + ":", 0) == 0)
      throw;
    throw UserError(path + ": " + message);
  }
}

} // namespace sinter::onnx
