// The C entry points of runtime.h. Each checks its handles and pointers, then runs under
// guardCall so no exception crosses the ABI. Handles are slots of a table with generations
// (handles.h), so a null, freed, stale or foreign handle is reported without reading the memory
// it names, and a session serves one call at a time (SINTER_ERROR_BUSY otherwise).

// The runtime is compiled with hidden visibility; the C ABI alone is exported. Declaring it here
// first, under default visibility, gives the definitions below that visibility.
#pragma GCC visibility push(default)
#include "sinter/runtime.h"
#pragma GCC visibility pop

#include "handles.h"
#include "model.h"
#include "pool.h"
#include "session.h"
#include "status.h"

using namespace sinter;
using namespace sinter::rt;

namespace {

sinter_status tensorInfo(const sinter_model *model, int32_t index, sinter_tensor_info *info,
                         bool input) {
  return guardCall([&] {
    std::shared_ptr<const LoadedArtifact> artifact = findModel(model);
    const package::Manifest &manifest = artifact->manifest();
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
    *model = issueModelHandle(loadArtifact(path));
  });
}

void sinter_model_free(sinter_model *model) {
  guardCall([&] { releaseModelHandle(model); });
}

sinter_target sinter_model_target(const sinter_model *model) {
  sinter_target target = static_cast<sinter_target>(0);
  guardCall([&] {
    target = static_cast<sinter_target>(findModel(model)->manifest().target);
  });
  return target;
}

int32_t sinter_model_input_count(const sinter_model *model) {
  int32_t count = -1;
  guardCall([&] { count = static_cast<int32_t>(findModel(model)->manifest().inputs.size()); });
  return count;
}

int32_t sinter_model_output_count(const sinter_model *model) {
  int32_t count = -1;
  guardCall([&] { count = static_cast<int32_t>(findModel(model)->manifest().outputs.size()); });
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
  guardCall([&] { count = static_cast<int32_t>(findModel(model)->manifest().steps.size()); });
  return count;
}

const char *sinter_model_cpu_level(const sinter_model *model) {
  const char *level = nullptr;
  guardCall([&] {
    std::shared_ptr<const LoadedArtifact> artifact = findModel(model);
    if (artifact->manifest().target == package::Target::Cpu)
      level = artifact->cpuLevel.c_str();
  });
  return level;
}

const char *sinter_model_step_name(const sinter_model *model, int32_t index) {
  const char *name = nullptr;
  guardCall([&] {
    std::shared_ptr<const LoadedArtifact> artifact = findModel(model);
    const package::Manifest &manifest = artifact->manifest();
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
    std::shared_ptr<const LoadedArtifact> artifact = findModel(model);
    if (!session)
      fail(SINTER_ERROR_INVALID_ARGUMENT, "the session output pointer is null");
    sinter_session_options chosen;
    sinter_session_options_init(&chosen);
    if (options)
      chosen = *options;
    *session = issueSessionHandle(createSession(artifact, chosen));
  });
}

void sinter_session_destroy(sinter_session *session) {
  guardCall([&] { releaseSessionHandle(session); });
}

sinter_status sinter_session_run(sinter_session *session, const sinter_tensor *inputs,
                                 int32_t input_count, sinter_tensor *outputs, int32_t output_count,
                                 void *stream) {
  return guardCall([&] {
    SessionUse checked(session);
    RunShape shape =
        validateRunArguments(checked->artifact(), inputs, input_count, outputs, output_count);
    checked->run(shape, inputs, outputs, stream);
  });
}

sinter_status sinter_session_run_host(sinter_session *session, const sinter_tensor *inputs,
                                      int32_t input_count, sinter_tensor *outputs,
                                      int32_t output_count) {
  return guardCall([&] {
    SessionUse checked(session);
    RunShape shape =
        validateRunArguments(checked->artifact(), inputs, input_count, outputs, output_count);
    checked->runHost(shape, inputs, outputs);
  });
}

// Revision 2: shape buckets.

int32_t sinter_model_symbol_count(const sinter_model *model) {
  int32_t count = -1;
  guardCall([&] { count = static_cast<int32_t>(findModel(model)->manifest().symbols.size()); });
  return count;
}

sinter_status sinter_model_symbol_info(const sinter_model *model, int32_t index,
                                       sinter_symbol_info *info) {
  return guardCall([&] {
    std::shared_ptr<const LoadedArtifact> artifact = findModel(model);
    const std::vector<package::ShapeSymbol> &symbols = artifact->manifest().symbols;
    if (!info)
      fail(SINTER_ERROR_INVALID_ARGUMENT, "info is null");
    if (index < 0 || size_t(index) >= symbols.size())
      fail(SINTER_ERROR_INVALID_ARGUMENT, "symbol index ", index, " is out of range (the model has ",
           symbols.size(), ")");
    const package::ShapeSymbol &symbol = symbols[size_t(index)];
    info->name = symbol.name.c_str();
    info->bucket_count = int32_t(symbol.buckets.size());
    info->buckets = symbol.buckets.data();
    info->paddable = symbol.paddable ? 1 : 0;
    info->padding_refusal = symbol.paddingRefusal.c_str();
  });
}

const char *sinter_model_dim_symbol(const sinter_model *model, int32_t is_output, int32_t index,
                                    int32_t axis) {
  const char *name = nullptr;
  guardCall([&] {
    std::shared_ptr<const LoadedArtifact> artifact = findModel(model);
    const package::Manifest &manifest = artifact->manifest();
    const auto &list = is_output ? manifest.outputs : manifest.inputs;
    if (index < 0 || size_t(index) >= list.size())
      fail(SINTER_ERROR_INVALID_ARGUMENT, is_output ? "output" : "input", " index ", index,
           " is out of range (the model has ", list.size(), ")");
    const package::TensorSignature &tensor = list[size_t(index)];
    if (axis < 0 || size_t(axis) >= tensor.dims.size())
      fail(SINTER_ERROR_INVALID_ARGUMENT, "axis ", axis, " is out of range for rank ",
           tensor.dims.size());
    name = "";
    for (const package::ShapeSymbol &symbol : manifest.symbols)
      if (size_t(axis) < tensor.dimSymbols.size() && tensor.dimSymbols[size_t(axis)] == symbol.name)
        name = symbol.name.c_str();
  });
  return name;
}

sinter_status sinter_model_output_shape(const sinter_model *model, const sinter_tensor *inputs,
                                        int32_t input_count, int32_t output,
                                        sinter_tensor_info *info) {
  return guardCall([&] {
    std::shared_ptr<const LoadedArtifact> artifact = findModel(model);
    if (!info)
      fail(SINTER_ERROR_INVALID_ARGUMENT, "info is null");
    std::vector<int64_t> dims = outputDimsFor(*artifact, inputs, input_count, output);
    describeTensor(artifact->manifest().outputs[size_t(output)], info);
    for (size_t i = 0; i < dims.size(); ++i)
      info->dims[i] = dims[i];
  });
}

namespace {

/// Checks a memory-kind array (null: all host) for `count` buffers of a session.
void checkMemoryKinds(const int32_t *memory, int32_t count, bool cuda, const char *kind) {
  for (int32_t i = 0; memory && i < count; ++i) {
    if (memory[i] != SINTER_MEMORY_HOST && memory[i] != SINTER_MEMORY_DEVICE)
      fail(SINTER_ERROR_INVALID_ARGUMENT, kind, " ", i, "'s memory is ", memory[i],
           ", neither SINTER_MEMORY_HOST (0) nor SINTER_MEMORY_DEVICE (1)");
    if (memory[i] == SINTER_MEMORY_DEVICE && !cuda)
      fail(SINTER_ERROR_INVALID_ARGUMENT, kind, " ", i,
           " is in device memory, but a CPU session reads host memory only");
  }
}

} // namespace

sinter_status sinter_session_run_memory(sinter_session *session, const sinter_tensor *inputs,
                                        const int32_t *input_memory, int32_t input_count,
                                        sinter_tensor *outputs, const int32_t *output_memory,
                                        int32_t output_count) {
  return guardCall([&] {
    SessionUse checked(session);
    bool cuda = checked->artifact().manifest().target == package::Target::Cuda;
    RunShape shape =
        validateRunArguments(checked->artifact(), inputs, input_count, outputs, output_count);
    checkMemoryKinds(input_memory, input_count, cuda, "input");
    checkMemoryKinds(output_memory, output_count, cuda, "output");
    std::vector<int32_t> host(size_t(std::max(input_count, output_count)), SINTER_MEMORY_HOST);
    checked->runMemory(shape, inputs, input_memory ? input_memory : host.data(), outputs,
                       output_memory ? output_memory : host.data());
  });
}

sinter_status sinter_session_copy(sinter_session *session, void *destination,
                                  int32_t destination_memory, const void *source,
                                  int32_t source_memory, size_t bytes) {
  return guardCall([&] {
    SessionUse checked(session);
    bool cuda = checked->artifact().manifest().target == package::Target::Cuda;
    checkMemoryKinds(&destination_memory, 1, cuda, "the destination");
    checkMemoryKinds(&source_memory, 1, cuda, "the source");
    if (bytes > 0 && (!destination || !source))
      fail(SINTER_ERROR_INVALID_ARGUMENT, "a copy of ", bytes, " bytes has a null ",
           destination ? "source" : "destination");
    checked->copy(destination, destination_memory == SINTER_MEMORY_DEVICE, source,
                  source_memory == SINTER_MEMORY_DEVICE, bytes);
  });
}

// Revision 1: pools of sessions and device usage (the pool itself is pool.cpp).

sinter_status sinter_model_device_usage(const sinter_model *model, int32_t device,
                                        sinter_device_usage *usage) {
  return guardCall([&] {
    std::shared_ptr<const LoadedArtifact> artifact = findModel(model);
    if (!usage)
      fail(SINTER_ERROR_INVALID_ARGUMENT, "usage is null");
    bool cuda = artifact->manifest().target == package::Target::Cuda;
    if (device < 0 || (!cuda && device != 0))
      fail(SINTER_ERROR_INVALID_ARGUMENT, "device ", device, " is not one of a ",
           cuda ? "CUDA artifact (use a CUDA ordinal, 0 or more)"
                : "CPU artifact (its sessions are on device 0, the host)");
    *usage = artifact->devices.usage(device);
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
    std::shared_ptr<const LoadedArtifact> artifact = findModel(model);
    if (!pool)
      fail(SINTER_ERROR_INVALID_ARGUMENT, "the pool output pointer is null");
    sinter_pool_options chosen;
    sinter_pool_options_init(&chosen);
    if (options)
      chosen = *options;
    *pool = issuePoolHandle(std::make_shared<SessionPool>(artifact, chosen, max_sessions));
  });
}

void sinter_pool_free(sinter_pool *pool) {
  guardCall([&] { releasePoolHandle(pool); });
}

sinter_status sinter_pool_run(sinter_pool *pool, const sinter_tensor *inputs, int32_t input_count,
                              sinter_tensor *outputs, int32_t output_count, void *stream) {
  return guardCall(
      [&] { findPool(pool)->run(inputs, input_count, outputs, output_count, stream); });
}

sinter_status sinter_pool_run_host(sinter_pool *pool, const sinter_tensor *inputs,
                                   int32_t input_count, sinter_tensor *outputs,
                                   int32_t output_count) {
  return guardCall(
      [&] { findPool(pool)->runHost(inputs, input_count, outputs, output_count); });
}

int32_t sinter_pool_session_count(const sinter_pool *pool) {
  int32_t count = -1;
  guardCall([&] { count = findPool(pool)->sessionCount(); });
  return count;
}

} // extern "C"
