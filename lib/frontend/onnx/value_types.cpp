// ONNX types as the IR sees them: TensorProto.DataType numbers and TypeProto -> DType and Shape,
// and ONNX's own spelling of the types sinter lacks, for messages and `sinter inspect`.
#include "onnx_internal.h"

#include "sinter/support/error.h"

namespace sinter::onnx::detail {

namespace {
struct OnnxType {
  const char *name;
  double size; ///< bytes per element; 0 where not fixed
};
// Indexed by TensorProto.DataType.
constexpr OnnxType kOnnxTypes[] = {
    {"undefined", 0},      {"float", 4},        {"uint8", 1},          {"int8", 1},
    {"uint16", 2},         {"int16", 2},        {"int32", 4},          {"int64", 8},
    {"string", 0},         {"bool", 1},         {"float16", 2},        {"double", 8},
    {"uint32", 4},         {"uint64", 8},       {"complex64", 8},      {"complex128", 16},
    {"bfloat16", 2},       {"float8e4m3fn", 1}, {"float8e4m3fnuz", 1}, {"float8e5m2", 1},
    {"float8e5m2fnuz", 1}, {"uint4", 0.5},      {"int4", 0.5},         {"float4e2m1", 0.5},
    {"float8e8m0", 1},     {"uint2", 0.25},     {"int2", 0.25},        {"float6e2m3", 0.75},
    {"float6e3m2", 0.75},
};
constexpr int kNumOnnxTypes = int(sizeof(kOnnxTypes) / sizeof(kOnnxTypes[0]));
} // namespace

std::string onnxTypeName(int dataType) {
  if (dataType >= 0 && dataType < kNumOnnxTypes)
    return kOnnxTypes[dataType].name;
  return "unknown type " + std::to_string(dataType);
}

double onnxTypeSize(int dataType) {
  return dataType >= 0 && dataType < kNumOnnxTypes ? kOnnxTypes[dataType].size : 0;
}

DType dtypeFromOnnxOrError(int dataType, const std::string &what) {
  if (std::optional<DType> dtype = dtypeFromOnnx(dataType))
    return *dtype;
  userError(what, " has element type ", onnxTypeName(dataType), ", which sinter does not support");
}

std::string describeTypeProto(const ::onnx::TypeProto &type) {
  switch (type.value_case()) {
  case ::onnx::TypeProto::kTensorType:
    return "tensor(" + onnxTypeName(type.tensor_type().elem_type()) + ")";
  case ::onnx::TypeProto::kSparseTensorType:
    return "sparse_tensor(" + onnxTypeName(type.sparse_tensor_type().elem_type()) + ")";
  case ::onnx::TypeProto::kSequenceType:
    return "seq(" + describeTypeProto(type.sequence_type().elem_type()) + ")";
  case ::onnx::TypeProto::kMapType:
    return "map(" + onnxTypeName(type.map_type().key_type()) + "," +
           describeTypeProto(type.map_type().value_type()) + ")";
  case ::onnx::TypeProto::kOptionalType:
    return "optional(" + describeTypeProto(type.optional_type().elem_type()) + ")";
  case ::onnx::TypeProto::VALUE_NOT_SET:
    break;
  }
  return "undefined";
}

DeclaredType declaredType(const ::onnx::ValueInfoProto &info, const std::string &what) {
  if (!info.has_type() || info.type().value_case() == ::onnx::TypeProto::VALUE_NOT_SET)
    userError(what, " has no type");
  const ::onnx::TypeProto &type = info.type();
  if (type.value_case() != ::onnx::TypeProto::kTensorType)
    userError(what, " has type ", describeTypeProto(type),
              "; sinter supports only tensors (no sequences, maps, optionals or sparse tensors)");
  const auto &tensor = type.tensor_type();
  if (!tensor.has_elem_type() || tensor.elem_type() == 0)
    userError(what, " has no element type");
  DeclaredType result{dtypeFromOnnxOrError(tensor.elem_type(), what), std::nullopt};
  if (!tensor.has_shape())
    return result;
  Shape shape;
  for (int i = 0; i < tensor.shape().dim_size(); ++i) {
    const auto &dim = tensor.shape().dim(i);
    if (dim.has_dim_value()) {
      if (dim.dim_value() < 0)
        userError(what, " has a negative dimension ", dim.dim_value(), " at index ", i);
      shape.push_back(Dim(dim.dim_value()));
    } else if (dim.has_dim_param() && !dim.dim_param().empty()) {
      shape.push_back(Dim::symbol(dim.dim_param()));
    } else {
      shape.push_back(Dim::unknown());
    }
  }
  result.shape = std::move(shape);
  return result;
}

} // namespace sinter::onnx::detail
