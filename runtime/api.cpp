// The C entry points of runtime.h. Each checks its handles and pointers, then runs under
// guardCall so no exception crosses the ABI. Handles carry a magic number, so a null, freed or
// foreign pointer of the wrong kind is reported instead of used (where it can be read at all).

// The runtime is compiled with hidden visibility; the C ABI alone is exported. Declaring it here
// first, under default visibility, gives the definitions below that visibility.
#pragma GCC visibility push(default)
#include "sinter/runtime.h"
#pragma GCC visibility pop

#include "model.h"
#include "pool.h"
#include "session.h"
#include "status.h"

using namespace sinter;
using namespace sinter::rt;

namespace {

const LoadedArtifact &checkedModel(const sinter_model *model) {
  if (!model)
    fail(SINTER_ERROR_INVALID_ARGUMENT, "the model handle is null");
  if (model->magic != sinter_model::kMagic || !model->artifact)
    fail(SINTER_ERROR_INVALID_ARGUMENT, "the model handle is not a live sinter_model");
  return *model->artifact;
}

sinter_session &checkedSession(sinter_session *session) {
  if (!session)
    fail(SINTER_ERROR_INVALID_ARGUMENT, "the session handle is null");
  if (session->magic != sinter_session::kMagic)
    fail(SINTER_ERROR_INVALID_ARGUMENT, "the session handle is not a live sinter_session");
  return *session;
}

sinter_status tensorInfo(const sinter_model *model, int32_t index, sinter_tensor_info *info,
                         bool input) {
  return guardCall([&] {
    const package::Manifest &manifest = checkedModel(model).manifest();
    const auto &list = input ? manifest.inputs : manifest.outputs;
    if (!info)
      fail(SINTER_ERROR_INVALID_ARGUMENT, "info is null");
    if (index < 0 || static_cast<size_t>(index) >= list.size())
      fail(SINTER_ERROR_INVALID_ARGUMENT, input ? "input" : "output", " index ", index,
           " is out of range (the model has ", list.size(), ")");
    describeTensor(list[index], info);
  });
}

} // namespace

extern "C" {

const char *sinter_last_error(void) { return lastError(); }

int sinter_runtime_abi_version(void) { return SINTER_ABI_VERSION; }

int sinter_runtime_abi_revision(void) { return SINTER_ABI_REVISION; }

sinter_status sinter_model_load(const char *path, sinter_model **model) {
  if (model) // never leave the caller's pointer undefined
    *model = nullptr;
  return guardCall([&] {
    if (!path || !*path)
      fail(SINTER_ERROR_INVALID_ARGUMENT, "the model path is null or empty");
    if (!model)
      fail(SINTER_ERROR_INVALID_ARGUMENT, "the model output pointer is null");
    auto handle = std::make_unique<sinter_model>();
    handle->artifact = loadArtifact(path);
    *model = handle.release();
  });
}

void sinter_model_free(sinter_model *model) {
  if (!model || model->magic != sinter_model::kMagic)
    return;
  model->magic = 0;
  delete model;
}

sinter_target sinter_model_target(const sinter_model *model) {
  sinter_target target = static_cast<sinter_target>(0);
  guardCall([&] {
    target = static_cast<sinter_target>(checkedModel(model).manifest().target);
  });
  return target;
}

int32_t sinter_model_input_count(const sinter_model *model) {
  int32_t count = -1;
  guardCall([&] { count = static_cast<int32_t>(checkedModel(model).manifest().inputs.size()); });
  return count;
}

int32_t sinter_model_output_count(const sinter_model *model) {
  int32_t count = -1;
  guardCall([&] { count = static_cast<int32_t>(checkedModel(model).manifest().outputs.size()); });
  return count;
}

sinter_status sinter_model_input_info(const sinter_model *model, int32_t index,
                                      sinter_tensor_info *info) {
  return tensorInfo(model, index, info, true);
}

sinter_status sinter_model_output_info(const sinter_model *model, int32_t index,
                                       sinter_tensor_info *info) {
  return tensorInfo(model, index, info, false);
}

int32_t sinter_model_step_count(const sinter_model *model) {
  int32_t count = -1;
  guardCall([&] { count = static_cast<int32_t>(checkedModel(model).manifest().steps.size()); });
  return count;
}

const char *sinter_model_step_name(const sinter_model *model, int32_t index) {
  const char *name = nullptr;
  guardCall([&] {
    const package::Manifest &manifest = checkedModel(model).manifest();
    if (index < 0 || size_t(index) >= manifest.steps.size())
      fail(SINTER_ERROR_INVALID_ARGUMENT, "step ", index, " is out of range: the plan has ",
           manifest.steps.size(), " steps");
    if (const auto *launch = std::get_if<package::Launch>(&manifest.steps[size_t(index)]))
      name = manifest.kernels[launch->kernel].name.c_str();
    else
      name = "copy";
  });
  return name;
}

void sinter_session_options_init(sinter_session_options *options) {
  if (!options)
    return;
  options->device = 0;
  options->threads = 0;
  options->use_graphs = 1;
}

sinter_status sinter_session_create(const sinter_model *model,
                                    const sinter_session_options *options,
                                    sinter_session **session) {
  if (session)
    *session = nullptr;
  return guardCall([&] {
    checkedModel(model);
    if (!session)
      fail(SINTER_ERROR_INVALID_ARGUMENT, "the session output pointer is null");
    sinter_session_options chosen;
    sinter_session_options_init(&chosen);
    if (options)
      chosen = *options;
    *session = createSession(model->artifact, chosen).release();
  });
}

void sinter_session_destroy(sinter_session *session) {
  if (!session || session->magic != sinter_session::kMagic)
    return;
  session->magic = 0;
  delete session;
}

sinter_status sinter_session_run(sinter_session *session, const sinter_tensor *inputs,
                                 int32_t input_count, sinter_tensor *outputs, int32_t output_count,
                                 void *stream) {
  return guardCall([&] {
    sinter_session &checked = checkedSession(session);
    validateRunArguments(checked.artifact().manifest(), inputs, input_count, outputs,
                         output_count);
    checked.run(inputs, outputs, stream);
  });
}

sinter_status sinter_session_run_host(sinter_session *session, const sinter_tensor *inputs,
                                      int32_t input_count, sinter_tensor *outputs,
                                      int32_t output_count) {
  return guardCall([&] {
    sinter_session &checked = checkedSession(session);
    validateRunArguments(checked.artifact().manifest(), inputs, input_count, outputs,
                         output_count);
    checked.runHost(inputs, outputs);
  });
}

// Revision 1: pools of sessions and device usage (the pool itself is pool.cpp).

namespace {

SessionPool &checkedPool(sinter_pool *pool) {
  if (!pool)
    fail(SINTER_ERROR_INVALID_ARGUMENT, "the pool handle is null");
  if (pool->magic != sinter_pool::kMagic || !pool->pool)
    fail(SINTER_ERROR_INVALID_ARGUMENT, "the pool handle is not a live sinter_pool");
  return *pool->pool;
}

} // namespace

sinter_status sinter_model_device_usage(const sinter_model *model, int32_t device,
                                        sinter_device_usage *usage) {
  return guardCall([&] {
    const LoadedArtifact &artifact = checkedModel(model);
    if (!usage)
      fail(SINTER_ERROR_INVALID_ARGUMENT, "usage is null");
    bool cuda = artifact.manifest().target == package::Target::Cuda;
    if (device < 0 || (!cuda && device != 0))
      fail(SINTER_ERROR_INVALID_ARGUMENT, "device ", device, " is not one of a ",
           cuda ? "CUDA artifact (use a CUDA ordinal, 0 or more)"
                : "CPU artifact (its sessions are on device 0, the host)");
    *usage = artifact.devices.usage(device);
  });
}

void sinter_pool_options_init(sinter_pool_options *options) {
  if (!options)
    return;
  sinter_session_options_init(&options->session);
  options->session.threads = 1;
  options->when_busy = SINTER_POOL_WAIT;
}

sinter_status sinter_pool_create(const sinter_model *model, const sinter_pool_options *options,
                                 int32_t max_sessions, sinter_pool **pool) {
  if (pool)
    *pool = nullptr;
  return guardCall([&] {
    checkedModel(model);
    if (!pool)
      fail(SINTER_ERROR_INVALID_ARGUMENT, "the pool output pointer is null");
    sinter_pool_options chosen;
    sinter_pool_options_init(&chosen);
    if (options)
      chosen = *options;
    auto handle = std::make_unique<sinter_pool>();
    handle->pool = std::make_unique<SessionPool>(model->artifact, chosen, max_sessions);
    *pool = handle.release();
  });
}

void sinter_pool_free(sinter_pool *pool) {
  if (!pool || pool->magic != sinter_pool::kMagic)
    return;
  pool->magic = 0;
  delete pool;
}

sinter_status sinter_pool_run(sinter_pool *pool, const sinter_tensor *inputs, int32_t input_count,
                              sinter_tensor *outputs, int32_t output_count, void *stream) {
  return guardCall(
      [&] { checkedPool(pool).run(inputs, input_count, outputs, output_count, stream); });
}

sinter_status sinter_pool_run_host(sinter_pool *pool, const sinter_tensor *inputs,
                                   int32_t input_count, sinter_tensor *outputs,
                                   int32_t output_count) {
  return guardCall(
      [&] { checkedPool(pool).runHost(inputs, input_count, outputs, output_count); });
}

int32_t sinter_pool_session_count(const sinter_pool *pool) {
  int32_t count = -1;
  guardCall([&] { count = checkedPool(const_cast<sinter_pool *>(pool)).sessionCount(); });
  return count;
}

} // extern "C"
