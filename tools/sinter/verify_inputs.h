// `sinter verify`'s inputs: deterministic random tensors (--random N --seed S) and ONNX test data
// sets (a folder of test_data_set_N/input_K.pb).
//
// Random values come from splitmix64 streams and integer arithmetic only (no std::
// distributions, whose output differs between standard libraries), so a seed gives the same
// bytes on every machine and compiler: floats |v| in [0.1, 1] with a random sign (never zero),
// booleans half true, integers in [0, bound) where `bound` is the size of the axis the input
// indexes when it reaches a Gather or GatherElements as the indices (through casts and views),
// else [0, 2) (masks, token types).
#pragma once

#include "sinter/ir/graph.h"
#include "sinter/ir/tensor.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace sinter::cli {

/// One input set and, when the source has them, its expected outputs.
struct VerifyCase {
  std::string name;            ///< "random_0", "test_data_set_3", "inputs"
  std::vector<Tensor> inputs;  ///< in the order of the ports the caller gave
  std::vector<Tensor> outputs; ///< expected outputs (test data, golden), in output order; may be empty
};

/// The exclusive upper bound of values an integer graph input may take without indexing out of
/// range, found from its uses; nullopt when no use constrains it.
std::optional<int64_t> indexBound(const Value &input);

/// A random tensor of this dtype and these dims, from the stream (seed, caseIndex, inputIndex).
/// `integerHigh` bounds integer values (exclusive, at least 1). Types without a random form
/// (the 4-bit and float8 storage types) are UserErrors naming `what`.
Tensor randomTensor(DType dtype, const std::vector<int64_t> &dims, uint64_t seed, uint64_t caseIndex,
                    uint64_t inputIndex, int64_t integerHigh, const std::string &what);

/// The data sets under `folder`: its test_data_set_* subfolders in numeric order, or the folder
/// itself when it holds input_0.pb. Each gets input_K.pb for K < inputCount (all required) and
/// output_K.pb for K < outputCount when present (all of them or none). Missing or malformed files
/// are UserErrors naming them.
std::vector<VerifyCase> readTestDataSets(const std::string &folder, size_t inputCount, size_t outputCount);

} // namespace sinter::cli
