// ONNX import: ai.onnx domain, opsets 7 to 28. Opset adapters rewrite older op forms into the
// IR's (opset-28) semantics; initializers in every storage form and external data (inside the
// model's folder only) become constants; Constant nodes become constants; shape computations on
// constants are folded as they are imported so later shapes resolve.
#pragma once

#include "sinter/ir/graph.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace sinter::onnx {

/// A graph input given a value at compile time (--bind-input NAME=FILE): it is imported as a
/// constant, so shapes that depend on it resolve and it leaves the model's signature.
struct BoundInput {
  Tensor value;
  std::string origin; ///< how it was given, for messages: "--bind-input k=k.npy"
};

struct ImportOptions {
  /// --shape NAME=1x3x224x224: fixes a graph input's whole shape.
  std::map<std::string, std::vector<int64_t>> inputShapes;
  /// --dim SYMBOL=N: binds a symbolic dim (dim_param) everywhere it appears.
  std::map<std::string, int64_t> dimBindings;
  /// --bind-input NAME=FILE: graph inputs that become constants with these values. Each value
  /// must have the input's declared dtype and rank and match its static dims; its size binds the
  /// symbols of the input's declared shape everywhere they appear (as --dim would).
  std::map<std::string, BoundInput> boundInputs;
  /// Fold nodes whose inputs are all constant when the result has at most this many elements.
  int64_t foldLimitElements = 1 << 16;
};

/// What `sinter inspect` shows of a model without requiring every op to be supported.
struct ModelSummary {
  int64_t irVersion = 0;
  int64_t opset = 0; ///< ai.onnx opset
  std::string producer;
  struct Port {
    std::string name;
    std::string type; ///< "f32[batch,3,224,224]", or the ONNX type name when sinter lacks it
  };
  std::vector<Port> inputs, outputs;
  std::map<std::string, int64_t> opHistogram; ///< op type (domain-qualified when not ai.onnx) -> count
  int64_t parameterCount = 0;
  int64_t parameterBytes = 0;
  /// Op types sinter cannot import, "domain:Op (opset N)" -> count.
  std::map<std::string, int64_t> unsupportedOps;
};

/// Imports a model file. Throws UserError for malformed or unsupported models; an unsupported
/// model's message lists every unsupported op type with its count, domain and opset.
std::unique_ptr<Graph> importModel(const std::string &path, const ImportOptions &options = {});
/// Imports from serialized bytes; `baseDirectory` resolves external data ("" forbids it).
std::unique_ptr<Graph> importModelBytes(const std::string &bytes, const std::string &baseDirectory,
                                        const ImportOptions &options = {},
                                        const std::string &displayName = "<memory>");

ModelSummary summarizeModel(const std::string &path);

/// Reads an ONNX TensorProto file (.pb), as the ONNX test data stores inputs and outputs.
Tensor readTensorProtoFile(const std::string &path);
void writeTensorProtoFile(const std::string &path, const Tensor &tensor);

} // namespace sinter::onnx
