// What the sinter backend reads from a Triton model configuration, checked against the artifact's
// signature: the tensors (name, dtype, dims), max_batch_size, the artifact's file name and the
// CPU thread count. Auto-complete fills a configuration that leaves the tensors out.
//
// The batching contract (docs/serving.md): with max_batch_size 0 a request's shapes are the
// artifact's shapes exactly. With max_batch_size > 0 the configuration's dims leave out the leading
// batch dim; every input and output of the artifact must then have the same leading dim, the
// artifact's batch B, and a request's batch dim must be a multiple of B (sinter/batching.hpp).
#pragma once

#include "json_value.h"
#include "triton_api.h"

#include "sinter/runtime.h"

#include <cstdint>
#include <string>
#include <vector>

namespace sinter::triton {

/// One input or output as the artifact declares it.
struct TensorSpec {
  std::string name;
  sinter_dtype dtype;
  TRITONSERVER_DataType tritonType;
  std::vector<int64_t> dims; ///< the artifact's full shape, batch dim included
  size_t elementBytes;
  size_t byteSize() const; ///< bytes of one artifact-shaped tensor
};

/// The signature of a loaded artifact; fails (UserError) for a dtype Triton cannot carry.
std::vector<TensorSpec> artifactInputs(const sinter_model *model);
std::vector<TensorSpec> artifactOutputs(const sinter_model *model);

/// "TYPE_FP32" for TRITONSERVER_TYPE_FP32 (the configuration's spelling), and back.
const char *configTypeName(TRITONSERVER_DataType type);
/// "FP32" (the inference protocol's spelling, used in messages).
const char *protocolTypeName(TRITONSERVER_DataType type);

/// "[1,3,224,224]".
std::string dimsText(const int64_t *dims, size_t count);
inline std::string dimsText(const std::vector<int64_t> &dims) {
  return dimsText(dims.data(), dims.size());
}

/// The parts of the configuration the backend uses.
struct BackendConfig {
  int64_t maxBatchSize = 0;
  std::string artifactFile = "model.so"; ///< parameters.artifact, else default_model_filename
  int32_t cpuThreads = 0;                ///< parameters.threads: CPU workers per instance
};

/// Reads max_batch_size and the parameters; fails for a value of the wrong form or an artifact
/// name that would leave the version folder.
BackendConfig readBackendConfig(const JsonValue &config);

/// Fills the configuration's "input" and "output" from the signature where they are absent or
/// empty (dims without the batch dim when max_batch_size > 0). Returns whether it changed.
bool autoComplete(JsonValue &config, const BackendConfig &backend,
                  const std::vector<TensorSpec> &inputs, const std::vector<TensorSpec> &outputs);

/// Checks the configuration's tensors against the signature (same names, types and dims, the
/// batch rule above) and returns the artifact's batch B (1 when max_batch_size is 0). The
/// message names the model, the tensor, and what differs.
/// With `bucketed` (the batch is a shape bucket symbol), the artifact's batch may exceed
/// max_batch_size: smaller batches run in their own buckets, or padded.
int64_t checkConfigAgainstArtifact(const JsonValue &config, const BackendConfig &backend,
                                   const std::vector<TensorSpec> &inputs,
                                   const std::vector<TensorSpec> &outputs,
                                   const std::string &artifactPath, bool bucketed = false);

} // namespace sinter::triton
