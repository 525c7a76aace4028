#include "artifact_runner.h"

#include "sinter/support/error.h"

#include <spdlog/spdlog.h>

#include <chrono>

namespace sinter::cli {

rt::Model loadArtifact(const std::string &path) {
  try {
    return rt::Model(path);
  } catch (const rt::Error &error) {
    userError(error.what());
  }
}

std::vector<onnx::ModelSummary::Port> artifactPorts(const rt::Model &model, bool inputs) {
  std::vector<onnx::ModelSummary::Port> ports;
  int32_t count = inputs ? sinter_model_input_count(model.get()) : sinter_model_output_count(model.get());
  for (int32_t i = 0; i < count; ++i) {
    sinter_tensor_info info{};
    rt::check(inputs ? sinter_model_input_info(model.get(), i, &info)
                     : sinter_model_output_info(model.get(), i, &info));
    // A bucketed dim is its symbol ("f32[batch,16]"): the file's size picks the plan at run time.
    Shape shape;
    for (int32_t axis = 0; axis < info.rank; ++axis) {
      const char *symbol = sinter_model_dim_symbol(model.get(), inputs ? 0 : 1, i, axis);
      shape.push_back(symbol && *symbol ? Dim::symbol(symbol) : Dim(info.dims[axis]));
    }
    auto dtype = dtypeFromOnnx(int(info.dtype));
    ports.push_back({info.name, std::string(dtype ? dtypeName(*dtype) : "?") + shapeStr(shape)});
  }
  return ports;
}

std::vector<Tensor> runArtifactOnce(const rt::Model &model, const std::vector<const Tensor *> &inputs,
                                    int threads) {
  std::vector<sinter_tensor_info> inputInfos = model.inputs(), outputInfos = model.outputs();
  SINTER_ASSERT(inputs.size() == inputInfos.size(), "runArtifactOnce got ", inputs.size(),
                " inputs for an artifact of ", inputInfos.size());
  std::vector<sinter_tensor> inputTensors, outputTensors;
  for (size_t i = 0; i < inputs.size(); ++i) {
    // The input's own dims (a bucketed artifact picks its plan by them; the runtime checks them).
    sinter_tensor_info info = inputInfos[i];
    info.rank = inputs[i]->rank();
    for (int32_t axis = 0; axis < info.rank && axis < SINTER_MAX_RANK; ++axis)
      info.dims[axis] = inputs[i]->dims()[axis];
    // The runtime only reads inputs; the C ABI's tensor type is not const.
    inputTensors.push_back(rt::makeTensor(info, const_cast<std::byte *>(inputs[i]->data())));
  }
  for (size_t o = 0; o < outputInfos.size(); ++o)
    if (sinter_model_output_shape(model.get(), inputTensors.data(), int32_t(inputTensors.size()),
                                  int32_t(o), &outputInfos[o]) != SINTER_OK)
      userError(sinter_last_error());
  std::vector<Tensor> results;
  for (const sinter_tensor_info &info : outputInfos) {
    auto dtype = dtypeFromOnnx(int(info.dtype));
    SINTER_ASSERT(dtype, "artifact output '", info.name, "' has an unknown dtype");
    results.emplace_back(*dtype, std::vector<int64_t>(info.dims, info.dims + info.rank));
  }
  for (size_t i = 0; i < outputInfos.size(); ++i)
    outputTensors.push_back(rt::makeTensor(outputInfos[i], results[i].data()));
  try {
    sinter_session_options options;
    sinter_session_options_init(&options);
    options.threads = threads;
    rt::Session session(model, &options);
    auto start = std::chrono::steady_clock::now();
    rt::check(sinter_session_run_host(session.get(), inputTensors.data(), int32_t(inputTensors.size()),
                                      outputTensors.data(), int32_t(outputTensors.size())));
    spdlog::debug("run took {:.2f} ms (first run: includes warm-up)",
                  std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  } catch (const rt::Error &error) {
    if (error.status() == SINTER_ERROR_INTERNAL)
      throw InternalError(error.what());
    userError(error.what());
  }
  return results;
}

} // namespace sinter::cli
