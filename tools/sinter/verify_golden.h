// Golden folders (`sinter verify --write-golden DIR`, `--golden DIR`): inputs and the truth's
// outputs of each input set, stored so later runs compare against them without the truth at hand.
//
//   DIR/manifest.json                        what the outputs are the truth of (below)
//   DIR/test_data_set_N/input_K.pb           the K-th input (ONNX TensorProto, as ONNX test data)
//   DIR/test_data_set_N/output_K.pb          the K-th output of the truth
//
// manifest.json: {"format": "sinter-golden", "format_version": 1, "sinter_version",
// "model": {"file", "sha256"}, "truth", "target", "cpu_level", "storage_precision",
// "compile_flags": [[flag, value], ...], "bound_inputs": [{"name", "sha256"}],
// "inputs": [{"name", "type"}], "outputs": [{"name", "type", "rtol", "atol"}], "cases": [names]}.
// The folder is a valid ONNX test-data folder too (`--test-data DIR` reads it).
#pragma once

#include "verify_compare.h"
#include "verify_inputs.h"

#include "sinter/frontend/onnx.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace sinter::cli {

struct GoldenRecord {
  std::string modelFile, modelSha256, sinterVersion;
  std::string truth, target, cpuLevel, storagePrecision;
  std::vector<std::pair<std::string, std::string>> compileFlags;
  std::vector<std::pair<std::string, std::string>> boundInputs; ///< name, sha256 of its file
  std::vector<onnx::ModelSummary::Port> inputs, outputs;
  std::map<std::string, Tolerance> tolerances; ///< by output name
  std::vector<VerifyCase> cases;               ///< with their outputs
};

/// Writes the folder: to a temporary sibling first, then renamed into place, so a failure leaves
/// no half-written golden. An existing `folder` is a UserError unless `force`, and even then only
/// a folder that holds a golden manifest.json is replaced.
void writeGolden(const std::string &folder, const GoldenRecord &record, bool force);

/// Reads a golden folder; a missing or malformed manifest, or a missing tensor file, is a
/// UserError naming the file.
GoldenRecord readGolden(const std::string &folder);

} // namespace sinter::cli
