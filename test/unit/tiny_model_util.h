// For the reliability tests: a real CPU artifact (models/tiny_cnn.onnx compiled by the sinter
// CLI of this build, at the default x86-64-v2 level) and buffers for any artifact's signature,
// filled with a fixed pattern.
#pragma once

#include "sinter/runtime.h"
#include "sinter/runtime.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace sinter::testing {

/// Compiles models/tiny_cnn.onnx for the CPU to `output`; false (with a gtest failure) if the CLI
/// fails.
inline bool compileTinyCnn(const std::string &output) {
  std::string command = std::string("'") + SINTER_BINARY_DIR + "/bin/sinter' compile '" +
                        SINTER_SOURCE_DIR + "/models/tiny_cnn.onnx' -o '" + output +
                        "' --target cpu > /dev/null 2>&1";
  int status = std::system(command.c_str());
  EXPECT_EQ(status, 0) << command;
  return status == 0;
}

/// Host buffers matching a model's signature: inputs hold a fixed pattern (the same for every
/// instance), outputs are zeroed.
struct ModelBuffers {
  std::vector<std::vector<uint8_t>> inputData, outputData;
  std::vector<sinter_tensor> inputs, outputs;

  explicit ModelBuffers(const sinter_model *model) {
    for (int32_t i = 0; i < sinter_model_input_count(model); ++i)
      add(model, i, true);
    for (int32_t i = 0; i < sinter_model_output_count(model); ++i)
      add(model, i, false);
  }
  sinter_status run(sinter_session *session) {
    return sinter_session_run_host(session, inputs.data(), int32_t(inputs.size()),
                                   outputs.data(), int32_t(outputs.size()));
  }
  /// Every output's bytes, concatenated.
  std::vector<uint8_t> outputBytes() const {
    std::vector<uint8_t> bytes;
    for (const auto &data : outputData)
      bytes.insert(bytes.end(), data.begin(), data.end());
    return bytes;
  }

private:
  void add(const sinter_model *model, int32_t index, bool input) {
    sinter_tensor_info info;
    sinter_status status = input ? sinter_model_input_info(model, index, &info)
                                 : sinter_model_output_info(model, index, &info);
    EXPECT_EQ(status, SINTER_OK);
    size_t bytes = sinter::rt::elementCount(info) * sinter::rt::dtypeSize(info.dtype);
    auto &store = input ? inputData : outputData;
    store.emplace_back(bytes);
    std::vector<uint8_t> &data = store.back();
    if (input && info.dtype == SINTER_FLOAT32)
      for (size_t i = 0; i < bytes / 4; ++i) {
        float value = std::sin(0.37f * float(i)) * 0.8f;
        std::memcpy(data.data() + 4 * i, &value, 4);
      }
    else if (input)
      for (size_t i = 0; i < bytes; ++i)
        data[i] = uint8_t(i % 7);
    sinter_tensor tensor{};
    tensor.data = data.data();
    tensor.byte_size = bytes;
    tensor.dtype = info.dtype;
    tensor.rank = info.rank;
    for (int32_t axis = 0; axis < info.rank; ++axis)
      tensor.dims[axis] = info.dims[axis];
    (input ? inputs : outputs).push_back(tensor);
  }
};

} // namespace sinter::testing
