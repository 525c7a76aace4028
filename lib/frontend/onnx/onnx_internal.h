// Private to the ONNX frontend: the pieces the importer's files share.
//
//   model_file.cpp   reading files and parsing protobuf messages with size limits
//   tensor_proto.cpp TensorProto <-> Tensor in every storage form, external data
//   value_types.cpp  ONNX types (TypeProto, data type numbers) -> IR types and display names
//   attributes.cpp   AttributeProto -> Attribute by the op's schema in ops.def
//   builder.cpp      creating IR nodes: shape inference and constant folding as they are made
//   adapters.cpp     opset adapters: older op forms -> the IR's opset-28 forms
//   importer.cpp     the graph walk
//   summary.cpp      summarizeModel
#pragma once

#include "sinter/frontend/onnx.h"
#include "sinter/ir/graph.h"

#include "onnx/onnx.pb.h"

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace sinter::onnx::detail {

// ---- model_file.cpp ------------------------------------------------------------------------

/// Parses the protobuf message in the file at `path`, reading it in blocks. Throws UserError
/// naming the path when it is missing, not a regular file, empty, larger than protobuf's 2 GiB
/// limit, unreadable, or does not parse as `what` ("ONNX model", "TensorProto").
void parseMessageFile(const std::string &path, google::protobuf::MessageLite &message,
                      const std::string &what);

/// Parses a protobuf message with a 2 GiB total-bytes limit. Throws UserError naming
/// `displayName` and `what` ("ONNX model", "TensorProto") when the bytes do not parse.
void parseMessage(const std::string &bytes, google::protobuf::MessageLite &message,
                  const std::string &displayName, const std::string &what);

/// The ai.onnx opset a model imports, or nullopt when it imports none.
std::optional<int64_t> aiOnnxOpset(const ::onnx::ModelProto &model);
/// The opset a model imports for `domain` ("" and "ai.onnx" are the same), or nullopt.
std::optional<int64_t> domainOpset(const ::onnx::ModelProto &model, const std::string &domain);
/// "ai.onnx" for the default domain, otherwise the domain itself.
std::string canonicalDomain(const std::string &domain);

inline constexpr int64_t kMinOpset = 7;
inline constexpr int64_t kMaxOpset = 28;

// ---- tensor_proto.cpp ----------------------------------------------------------------------

/// Where a TensorProto comes from, for messages and for resolving external data.
struct TensorSource {
  std::string displayName;   ///< the model file, for messages
  std::string baseDirectory; ///< folder external data is resolved in; "" forbids external data
};

/// Converts a TensorProto to a Tensor. `what` names it in messages ("initializer 'w'").
Tensor tensorFromProto(const ::onnx::TensorProto &proto, const TensorSource &source,
                       const std::string &what);
/// Stores a tensor as raw little-endian data.
void tensorToProto(const Tensor &tensor, ::onnx::TensorProto &proto);
/// Checks a TensorProto's dims (non-negative, product fits) and returns the element count.
int64_t checkedElementCount(const google::protobuf::RepeatedField<int64_t> &dims,
                            const std::string &what);

// ---- value_types.cpp -----------------------------------------------------------------------

/// ONNX's lower-case name of a TensorProto.DataType number ("float", "string", "float8e4m3fn").
std::string onnxTypeName(int dataType);
/// Bytes per element of an ONNX data type (0 where not fixed: strings); fractions round up.
double onnxTypeSize(int dataType);
/// The IR dtype of an ONNX data type, or a UserError naming `what` when sinter lacks it.
DType dtypeFromOnnxOrError(int dataType, const std::string &what);
/// ONNX's spelling of a TypeProto: "tensor(float)", "seq(tensor(int64))", "map(string,...)".
std::string describeTypeProto(const ::onnx::TypeProto &type);

/// A graph input's type as the model declares it; `shape` is nullopt when the rank is unknown.
struct DeclaredType {
  DType dtype;
  std::optional<Shape> shape;
};
/// Reads a value's declared type. Dims: dim_value -> static, dim_param -> symbol, neither ->
/// unknown. Throws UserError naming `what` for non-tensor types, element types sinter lacks and
/// negative dims.
DeclaredType declaredType(const ::onnx::ValueInfoProto &info, const std::string &what);

// ---- attributes.cpp ------------------------------------------------------------------------

/// An ONNX node's attributes, read by name; each read marks the attribute as used. What remains
/// is converted by the IR op's schema (convertRemaining), so an adapter takes what it rewrites.
class AttributeReader {
public:
  AttributeReader(const ::onnx::NodeProto &node, const TensorSource &source,
                  const std::string &where);

  bool has(const std::string &name) const;
  std::optional<int64_t> takeInt(const std::string &name);
  std::optional<float> takeFloat(const std::string &name);
  std::optional<std::string> takeString(const std::string &name);
  std::optional<std::vector<int64_t>> takeInts(const std::string &name);
  std::optional<std::vector<float>> takeFloats(const std::string &name);
  std::optional<Tensor> takeTensor(const std::string &name);
  /// Marks an attribute as used without reading it.
  void drop(const std::string &name);

  /// Converts every unread attribute by `kind`'s schema. An attribute the schema lacks is a
  /// UserError, except the few that ONNX allows and that never change the result.
  std::map<std::string, Attribute> convertRemaining(OpKind kind);

private:
  const ::onnx::AttributeProto *find(const std::string &name) const;
  Attribute convert(const ::onnx::AttributeProto &attribute, AttrKind kind) const;
  std::map<std::string, const ::onnx::AttributeProto *> attributes_;
  std::set<std::string> used_;
  const TensorSource &source_;
  std::string where_;
};

// ---- builder.cpp ---------------------------------------------------------------------------

/// Makes IR nodes for the importer and its adapters. Each node is inferred as it is made, and
/// folded into constants when its inputs are constants and its outputs are small.
class Builder {
public:
  /// `reservedNames`: every value name of the ONNX model; `consumedNames`: those read by a node
  /// or listed as a graph output.
  Builder(Graph &graph, const ImportOptions &options, std::set<std::string> reservedNames,
          std::set<std::string> consumedNames)
      : graph_(graph), options_(options), reserved_(std::move(reservedNames)),
        consumed_(std::move(consumedNames)) {}

  Graph &graph() { return graph_; }
  /// True when a node or a graph output reads the ONNX value of this name.
  bool isConsumed(const std::string &name) const { return consumed_.count(name) != 0; }

  /// A value name not in the graph and not used anywhere in the ONNX model.
  std::string freshName(const std::string &base);
  /// Adds a constant under a fresh name derived from `base`.
  Value *constant(const std::string &base, Tensor tensor);
  Value *constantInts(const std::string &base, const std::vector<int64_t> &values);
  Value *constantScalar(const std::string &base, DType dtype, double value);

  /// Creates a node named `nodeName` whose outputs are named `outputNames` (fresh where a name is
  /// empty), infers its output types, and folds it when it can. Returns the outputs: the node's,
  /// or constants bearing the same names when it was folded.
  std::vector<Value *> emit(OpKind kind, const std::vector<Value *> &inputs,
                            const std::map<std::string, Attribute> &attributes,
                            const std::vector<std::string> &outputNames,
                            const std::string &nodeName);
  /// emit() for one output with a fresh name.
  Value *emitOne(OpKind kind, const std::vector<Value *> &inputs,
                 const std::map<std::string, Attribute> &attributes, const std::string &base,
                 const std::string &nodeName);

private:
  bool foldable(const Node &node) const;
  std::optional<Tensor> staticShapeValue(const Node &node) const;
  std::vector<Value *> fold(Node *node);
  /// Replaces each output of `node` by a constant of the same name, and erases the node.
  std::vector<Value *> replaceByConstants(Node *node, std::vector<Tensor> results);
  Graph &graph_;
  const ImportOptions &options_;
  std::set<std::string> reserved_;
  std::set<std::string> consumed_;
};

// ---- adapters.cpp --------------------------------------------------------------------------

/// One ONNX node on its way into the IR.
struct OnnxNode {
  const ::onnx::NodeProto &proto;
  int64_t opset;                        ///< the model's ai.onnx opset
  std::string where;                    ///< "node 'conv1' (Conv, opset 13)", for messages
  std::vector<Value *> inputs;          ///< null where absent
  std::vector<std::string> outputNames; ///< "" where an optional output is unused
  AttributeReader attributes;
};

/// True when sinter imports this ai.onnx op type (an op of ops.def, Constant, or one an adapter
/// rewrites, such as Upsample).
bool isSupportedOp(std::string_view opType);

/// Imports one ai.onnx node (not Constant) and returns the values of its outputs, one per
/// outputNames entry. Older opset forms are rewritten to the IR's forms on the way.
std::vector<Value *> importNode(Builder &builder, OnnxNode &node);

} // namespace sinter::onnx::detail
