// libtriton_sinter.so: Triton Inference Server's entry points for sinter artifacts
// (docs/serving.md). Lifecycle here; answering requests in execute.cpp.

#include "artifact_file.h"
#include "state.h"

#include <memory>

using namespace sinter;
using namespace sinter::triton;

namespace sinter::triton {

void check(TRITONSERVER_Error *error, const char *what) {
  if (!error)
    return;
  Failure failure{TRITONSERVER_ErrorCode(error),
                  std::string(what) + ": " + TRITONSERVER_ErrorMessage(error)};
  TRITONSERVER_ErrorDelete(error);
  throw failure;
}

TRITONSERVER_Error_Code codeOf(sinter_status status) {
  switch (status) {
  case SINTER_ERROR_INVALID_ARGUMENT:
  case SINTER_ERROR_INVALID_ARTIFACT: return TRITONSERVER_ERROR_INVALID_ARG;
  case SINTER_ERROR_UNSUPPORTED: return TRITONSERVER_ERROR_UNSUPPORTED;
  case SINTER_ERROR_NO_DEVICE:
  case SINTER_ERROR_OUT_OF_MEMORY: return TRITONSERVER_ERROR_UNAVAILABLE;
  case SINTER_ERROR_IO: return TRITONSERVER_ERROR_NOT_FOUND;
  default: return TRITONSERVER_ERROR_INTERNAL;
  }
}

void logMessage(TRITONSERVER_LogLevel level, const std::string &message) {
  if (TRITONSERVER_Error *error =
          TRITONSERVER_LogMessage(level, __FILE__, __LINE__, message.c_str()))
    TRITONSERVER_ErrorDelete(error);
}

} // namespace sinter::triton

namespace {

JsonValue modelConfig(TRITONBACKEND_Model *model) {
  TRITONSERVER_Message *message = nullptr;
  check(TRITONBACKEND_ModelConfig(model, 1, &message), "reading the model configuration");
  const char *base = nullptr;
  size_t size = 0;
  TRITONSERVER_Error *error = TRITONSERVER_MessageSerializeToJson(message, &base, &size);
  JsonValue config;
  if (!error)
    config = JsonValue::parse(std::string_view(base, size));
  TRITONSERVER_MessageDelete(message);
  check(error, "serialising the model configuration");
  if (!config.isObject())
    fail(TRITONSERVER_ERROR_INVALID_ARG, "the model configuration is not a JSON object");
  return config;
}

void setModelConfig(TRITONBACKEND_Model *model, const JsonValue &config) {
  std::string text = config.dump();
  TRITONSERVER_Message *message = nullptr;
  check(TRITONSERVER_MessageNewFromSerializedJson(&message, text.data(), text.size()),
        "making the completed configuration");
  TRITONSERVER_Error *error = TRITONBACKEND_ModelSetConfig(model, 1, message);
  TRITONSERVER_MessageDelete(message);
  check(error, "setting the completed configuration");
}

std::string modelName(TRITONBACKEND_Model *model) {
  const char *name = nullptr;
  if (TRITONSERVER_Error *error = TRITONBACKEND_ModelName(model, &name)) {
    TRITONSERVER_ErrorDelete(error);
    return "?";
  }
  return name ? name : "?";
}

void loadModel(TRITONBACKEND_Model *model, ModelState &state) {
  uint64_t version = 0;
  check(TRITONBACKEND_ModelVersion(model, &version), "reading the model version");
  TRITONBACKEND_ArtifactType artifactType;
  const char *location = nullptr;
  check(TRITONBACKEND_ModelRepository(model, &artifactType, &location),
        "reading the model location");
  if (artifactType != TRITONBACKEND_ARTIFACT_FILESYSTEM || !location)
    fail(TRITONSERVER_ERROR_UNSUPPORTED, "the model is not in a file-system repository");

  JsonValue config = modelConfig(model);
  state.config = readBackendConfig(config);
  state.artifactPath =
      std::string(location) + "/" + std::to_string(version) + "/" + state.config.artifactFile;
  try {
    checkArtifactLayout(state.artifactPath);
  } catch (const UserError &error) {
    fail(TRITONSERVER_ERROR_INVALID_ARG, "cannot load the sinter artifact ", state.artifactPath,
         ": ", error.what());
  }
  if (sinter_status status = sinter_model_load(state.artifactPath.c_str(), &state.model))
    fail(codeOf(status), "cannot load the sinter artifact ", state.artifactPath, ": ",
         sinter_last_error());
  state.inputs = artifactInputs(state.model);
  state.outputs = artifactOutputs(state.model);

  state.batchShapes = sinter::rt::bucketedBatchShapes(state.model);
  bool bucketed = state.batchShapes.bucketed;

  bool autoCompleteWanted = false;
  check(TRITONBACKEND_ModelAutoCompleteConfig(model, &autoCompleteWanted),
        "asking about auto-complete");
  bool setBatch = false;
  if (autoCompleteWanted && state.config.maxBatchSize == 0 && bucketed) {
    // A bucketed batch: the dynamic batcher may form batches up to the largest bucket.
    state.config.maxBatchSize = state.batchShapes.buckets.back();
    config.set("max_batch_size", JsonValue::number(state.config.maxBatchSize));
    setBatch = true;
  }
  if (autoCompleteWanted &&
      (autoComplete(config, state.config, state.inputs, state.outputs) || setBatch)) {
    setModelConfig(model, config);
    config = modelConfig(model); // the server may have filled in more
    logMessage(TRITONSERVER_LOG_INFO,
               "sinter backend, model '" + state.name +
                   "': filled in the configuration's inputs and outputs from " +
                   state.artifactPath);
  }
  state.artifactBatch = checkConfigAgainstArtifact(config, state.config, state.inputs,
                                                   state.outputs, state.artifactPath,
                                                   state.batchShapes.bucketed);
  if (!state.batchShapes.bucketed)
    state.batchShapes.buckets = {state.artifactBatch};
}

} // namespace

extern "C" {

TRITONSERVER_Error *TRITONBACKEND_Initialize(TRITONBACKEND_Backend *backend) {
  return guarded("sinter backend: ", [&] {
    uint32_t major = 0, minor = 0;
    check(TRITONBACKEND_ApiVersion(&major, &minor), "reading the backend API version");
    if (major != kApiMajor || minor < kApiMinor)
      fail(TRITONSERVER_ERROR_UNSUPPORTED, "the server's backend API is version ", major, ".",
           minor, "; this backend was written for ", kApiMajor, ".", kApiMinor,
           " (same major, minor at least ", kApiMinor, ")");
    if (sinter_runtime_abi_version() != SINTER_ABI_VERSION)
      fail(TRITONSERVER_ERROR_UNSUPPORTED, "libsinter_rt has ABI version ",
           sinter_runtime_abi_version(), "; this backend was built for ", SINTER_ABI_VERSION);
    logMessage(TRITONSERVER_LOG_INFO,
               detail::concat("sinter backend: backend API ", major, ".", minor,
                              ", sinter runtime ABI ", SINTER_ABI_VERSION));
  });
}

TRITONSERVER_Error *TRITONBACKEND_ModelInitialize(TRITONBACKEND_Model *model) {
  std::string name = modelName(model);
  return guarded("sinter backend, model '" + name + "': ", [&] {
    auto state = std::make_unique<ModelState>();
    state->name = name;
    loadModel(model, *state);
    check(TRITONBACKEND_ModelSetState(model, state.get()), "storing the model state");
    state.release();
  });
}

TRITONSERVER_Error *TRITONBACKEND_ModelFinalize(TRITONBACKEND_Model *model) {
  void *state = nullptr;
  if (TRITONSERVER_Error *error = TRITONBACKEND_ModelState(model, &state))
    return error;
  delete static_cast<ModelState *>(state);
  return nullptr;
}

TRITONSERVER_Error *TRITONBACKEND_ModelInstanceInitialize(TRITONBACKEND_ModelInstance *instance) {
  const char *instanceName = nullptr;
  if (TRITONSERVER_Error *error = TRITONBACKEND_ModelInstanceName(instance, &instanceName))
    return error;
  std::string name = instanceName ? instanceName : "?";
  return guarded("sinter backend, instance '" + name + "': ", [&] {
    TRITONBACKEND_Model *model = nullptr;
    check(TRITONBACKEND_ModelInstanceModel(instance, &model), "finding the instance's model");
    void *modelState = nullptr;
    check(TRITONBACKEND_ModelState(model, &modelState), "reading the model state");
    TRITONSERVER_InstanceGroupKind kind;
    check(TRITONBACKEND_ModelInstanceKind(instance, &kind), "reading the instance kind");
    int32_t device = 0;
    check(TRITONBACKEND_ModelInstanceDeviceId(instance, &device), "reading the instance device");

    auto state = std::make_unique<InstanceState>();
    state->model = static_cast<ModelState *>(modelState);
    state->name = name;
    sinter_target target = sinter_model_target(state->model->model);
    const std::string &path = state->model->artifactPath;
    sinter_session_options options;
    sinter_session_options_init(&options);
    if (target == SINTER_TARGET_CUDA) {
      if (kind != TRITONSERVER_INSTANCEGROUPKIND_GPU)
        fail(TRITONSERVER_ERROR_INVALID_ARG, "the artifact ", path,
             " was compiled for CUDA; give the model an instance_group of kind: KIND_GPU");
      options.device = device;
      state->cuda = true;
    } else {
      if (kind != TRITONSERVER_INSTANCEGROUPKIND_CPU)
        fail(TRITONSERVER_ERROR_INVALID_ARG, "the artifact ", path,
             " was compiled for the CPU target; give the model an instance_group of kind: "
             "KIND_CPU, or "
             "compile it with --target cuda for KIND_GPU");
      options.threads = state->model->config.cpuThreads;
    }
    if (sinter_status status =
            sinter_session_create(state->model->model, &options, &state->session))
      fail(codeOf(status), "cannot create a sinter session", state->cuda ? " on CUDA device " : "",
           state->cuda ? std::to_string(device) : "", ": ", sinter_last_error());
    state->inputStaging.resize(state->model->inputs.size());
    state->outputStaging.resize(state->model->outputs.size());
    check(TRITONBACKEND_ModelInstanceSetState(instance, state.get()), "storing the instance state");
    state.release();
  });
}

TRITONSERVER_Error *TRITONBACKEND_ModelInstanceFinalize(TRITONBACKEND_ModelInstance *instance) {
  void *state = nullptr;
  if (TRITONSERVER_Error *error = TRITONBACKEND_ModelInstanceState(instance, &state))
    return error;
  delete static_cast<InstanceState *>(state);
  return nullptr;
}

TRITONSERVER_Error *TRITONBACKEND_ModelInstanceExecute(TRITONBACKEND_ModelInstance *instance,
                                                       TRITONBACKEND_Request **requests,
                                                       const uint32_t request_count) {
  void *state = nullptr;
  if (TRITONSERVER_Error *error = TRITONBACKEND_ModelInstanceState(instance, &state))
    return error; // the requests stay the server's
  executeRequests(instance, *static_cast<InstanceState *>(state), requests, request_count);
  return nullptr;
}

} // extern "C"
