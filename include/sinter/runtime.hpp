// A small header-only C++ wrapper over the C ABI of runtime.h: RAII handles that free themselves,
// and a sinter::rt::Error exception (status and message) for every failed call.
//
//   sinter::rt::Model model("model.so");
//   sinter::rt::Session session(model);
//   session.runHost(inputs, outputs);
//
//   sinter::rt::Pool pool(model, /*maxSessions=*/8); // then, from any thread:
//   pool.runHost(inputs, outputs);
//
// The same thread-safety contract as the C ABI: a Model may be shared by threads (const use), a
// Session is used by one thread at a time, a Pool's runs may be called from any thread at once.
#pragma once

#include "sinter/runtime.h"

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace sinter::rt {

/// A failed runtime call: the status and the runtime's message.
class Error : public std::runtime_error {
public:
  Error(sinter_status status, const std::string &message)
      : std::runtime_error(message), status_(status) {}
  sinter_status status() const { return status_; }

private:
  sinter_status status_;
};

/// Throws Error with the calling thread's last error when `status` is not SINTER_OK.
inline void check(sinter_status status) {
  if (status != SINTER_OK)
    throw Error(status, sinter_last_error());
}

/// Bytes per element of a runtime dtype (0 for an unknown value).
inline size_t dtypeSize(sinter_dtype dtype) {
  switch (dtype) {
  case SINTER_UINT8: case SINTER_INT8: case SINTER_BOOL: return 1;
  // The low-precision types take one byte per element (not packed).
  case SINTER_FLOAT8E4M3FN: case SINTER_FLOAT8E4M3FNUZ: case SINTER_FLOAT8E5M2:
  case SINTER_FLOAT8E5M2FNUZ: case SINTER_UINT4: case SINTER_INT4: case SINTER_FLOAT4E2M1:
  case SINTER_FLOAT8E8M0: case SINTER_UINT2: case SINTER_INT2: return 1;
  case SINTER_UINT16: case SINTER_INT16: case SINTER_FLOAT16: case SINTER_BFLOAT16: return 2;
  case SINTER_FLOAT32: case SINTER_INT32: case SINTER_UINT32: return 4;
  case SINTER_INT64: case SINTER_UINT64: case SINTER_FLOAT64: return 8;
  }
  return 0;
}

/// Elements of a tensor with this signature.
inline size_t elementCount(const sinter_tensor_info &info) {
  size_t count = 1;
  for (int32_t axis = 0; axis < info.rank; ++axis)
    count *= static_cast<size_t>(info.dims[axis]);
  return count;
}

/// A sinter_tensor describing `data` with the signature's dtype and dims.
inline sinter_tensor makeTensor(const sinter_tensor_info &info, void *data) {
  sinter_tensor tensor{};
  tensor.data = data;
  tensor.byte_size = elementCount(info) * dtypeSize(info.dtype);
  tensor.dtype = info.dtype;
  tensor.rank = info.rank;
  for (int32_t axis = 0; axis < info.rank && axis < SINTER_MAX_RANK; ++axis)
    tensor.dims[axis] = info.dims[axis];
  return tensor;
}

/// A loaded artifact (owns the sinter_model).
class Model {
public:
  explicit Model(const std::string &path) { check(sinter_model_load(path.c_str(), &model_)); }
  ~Model() { sinter_model_free(model_); }
  Model(Model &&other) noexcept : model_(std::exchange(other.model_, nullptr)) {}
  Model &operator=(Model &&other) noexcept {
    std::swap(model_, other.model_);
    return *this;
  }
  Model(const Model &) = delete;
  Model &operator=(const Model &) = delete;

  sinter_model *get() const { return model_; }
  /// The plan's step names, in order (sinter_model_step_name).
  std::vector<std::string> stepNames() const {
    std::vector<std::string> names;
    for (int32_t i = 0, n = sinter_model_step_count(model_); i < n; ++i) {
      const char *name = sinter_model_step_name(model_, i);
      names.push_back(name ? name : "?");
    }
    return names;
  }
  sinter_target target() const { return sinter_model_target(model_); }
  /// The x86-64 level whose kernels a CPU model runs (sinter_model_cpu_level); "" for CUDA.
  std::string cpuLevel() const {
    const char *level = sinter_model_cpu_level(model_);
    return level ? level : "";
  }
  /// sinter_model_device_usage: sessions, weight uploads and memory on one device (0: the host).
  sinter_device_usage deviceUsage(int32_t device = 0) const {
    sinter_device_usage usage{};
    check(sinter_model_device_usage(model_, device, &usage));
    return usage;
  }

  std::vector<sinter_tensor_info> inputs() const {
    return describe(sinter_model_input_count(model_), sinter_model_input_info);
  }
  std::vector<sinter_tensor_info> outputs() const {
    return describe(sinter_model_output_count(model_), sinter_model_output_info);
  }

  /// The shape-bucket symbols (empty for an artifact of one shape): name, buckets, paddable.
  std::vector<sinter_symbol_info> symbols() const {
    int32_t count = sinter_model_symbol_count(model_);
    if (count < 0)
      throw Error(SINTER_ERROR_INVALID_ARGUMENT, sinter_last_error());
    std::vector<sinter_symbol_info> infos(static_cast<size_t>(count));
    for (int32_t i = 0; i < count; ++i)
      check(sinter_model_symbol_info(model_, i, &infos[static_cast<size_t>(i)]));
    return infos;
  }
  /// The outputs' shapes for inputs of these shapes (sinter_model_output_shape): the plan 0 dims
  /// of outputs(), or those of the bucket the inputs pick, less padding.
  std::vector<sinter_tensor_info> outputsFor(const std::vector<sinter_tensor> &inputs) const {
    std::vector<sinter_tensor_info> infos = outputs();
    for (size_t o = 0; o < infos.size(); ++o)
      check(sinter_model_output_shape(model_, inputs.data(), static_cast<int32_t>(inputs.size()),
                                      static_cast<int32_t>(o), &infos[o]));
    return infos;
  }

private:
  template <typename Query>
  std::vector<sinter_tensor_info> describe(int32_t count, Query query) const {
    if (count < 0)
      throw Error(SINTER_ERROR_INVALID_ARGUMENT, sinter_last_error());
    std::vector<sinter_tensor_info> infos(static_cast<size_t>(count));
    for (int32_t i = 0; i < count; ++i)
      check(query(model_, i, &infos[i]));
    return infos;
  }

  sinter_model *model_ = nullptr;
};

/// A session on a model (owns the sinter_session). The Model may be destroyed first.
class Session {
public:
  explicit Session(const Model &model, const sinter_session_options *options = nullptr) {
    check(sinter_session_create(model.get(), options, &session_));
  }
  ~Session() { sinter_session_destroy(session_); }
  Session(Session &&other) noexcept : session_(std::exchange(other.session_, nullptr)) {}
  Session &operator=(Session &&other) noexcept {
    std::swap(session_, other.session_);
    return *this;
  }
  Session(const Session &) = delete;
  Session &operator=(const Session &) = delete;

  sinter_session *get() const { return session_; }

  /// Buffers the target addresses directly (device memory for CUDA), queued on `stream`.
  void run(const std::vector<sinter_tensor> &inputs, std::vector<sinter_tensor> &outputs,
           void *stream = nullptr) {
    check(sinter_session_run(session_, inputs.data(), static_cast<int32_t>(inputs.size()),
                             outputs.data(), static_cast<int32_t>(outputs.size()), stream));
  }
  /// Host buffers for any target; returns when the outputs are written.
  void runHost(const std::vector<sinter_tensor> &inputs, std::vector<sinter_tensor> &outputs) {
    check(sinter_session_run_host(session_, inputs.data(), static_cast<int32_t>(inputs.size()),
                                  outputs.data(), static_cast<int32_t>(outputs.size())));
  }
  /// sinter_session_benchmark: the milliseconds of each of `iterations` timed runs of the plan
  /// on these host inputs, after `warmup` untimed runs.
  std::vector<double> benchmark(const std::vector<sinter_tensor> &hostInputs, int32_t warmup,
                                int32_t iterations) {
    std::vector<double> latencies(iterations > 0 ? static_cast<size_t>(iterations) : 0);
    check(sinter_session_benchmark(session_, hostInputs.data(),
                                   static_cast<int32_t>(hostInputs.size()), warmup, iterations,
                                   latencies.data()));
    return latencies;
  }
  /// sinter_session_profile: the median milliseconds of each step of the plan, in plan order.
  std::vector<double> profile(const sinter_model *model, const std::vector<sinter_tensor> &hostInputs,
                              int32_t warmup, int32_t iterations) {
    int32_t steps = sinter_model_step_count(model);
    std::vector<double> milliseconds(steps > 0 ? static_cast<size_t>(steps) : 0);
    check(sinter_session_profile(session_, hostInputs.data(), static_cast<int32_t>(hostInputs.size()),
                                 warmup, iterations, milliseconds.data(), steps));
    return milliseconds;
  }

private:
  sinter_session *session_ = nullptr;
};

/// A pool of sessions on a model (owns the sinter_pool): run and runHost may be called from any
/// number of threads at once; each call runs on a free session. The Model may be destroyed first.
class Pool {
public:
  /// At most maxSessions sessions, made as calls need them; options null for the defaults
  /// (sinter_pool_options_init: CPU sessions of one thread each, calls wait when all are busy).
  Pool(const Model &model, int32_t maxSessions, const sinter_pool_options *options = nullptr) {
    check(sinter_pool_create(model.get(), options, maxSessions, &pool_));
  }
  /// Frees the pool: only once every call on it has returned (sinter_pool_free).
  ~Pool() { sinter_pool_free(pool_); }
  Pool(Pool &&other) noexcept : pool_(std::exchange(other.pool_, nullptr)) {}
  Pool &operator=(Pool &&other) noexcept {
    std::swap(pool_, other.pool_);
    return *this;
  }
  Pool(const Pool &) = delete;
  Pool &operator=(const Pool &) = delete;

  sinter_pool *get() const { return pool_; }

  /// sinter_pool_run: buffers the target addresses (device memory for CUDA), queued on `stream`.
  void run(const std::vector<sinter_tensor> &inputs, std::vector<sinter_tensor> &outputs,
           void *stream = nullptr) const {
    check(sinter_pool_run(pool_, inputs.data(), static_cast<int32_t>(inputs.size()),
                          outputs.data(), static_cast<int32_t>(outputs.size()), stream));
  }
  /// sinter_pool_run_host: host buffers for any target; returns when the outputs are written.
  void runHost(const std::vector<sinter_tensor> &inputs, std::vector<sinter_tensor> &outputs) const {
    check(sinter_pool_run_host(pool_, inputs.data(), static_cast<int32_t>(inputs.size()),
                               outputs.data(), static_cast<int32_t>(outputs.size())));
  }
  /// Sessions made so far.
  int32_t sessionCount() const { return sinter_pool_session_count(pool_); }

private:
  sinter_pool *pool_ = nullptr;
};

} // namespace sinter::rt
