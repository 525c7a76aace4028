// The backend's state behind Triton's handles, and its one error mechanism.
//
// A Triton model owns one loaded artifact (sinter_model: immutable, shared by its instances); each
// model instance owns one sinter session, on the device Triton gave it. Triton never calls
// execute twice at once on one instance, so a session is used by one thread at a time, as the
// runtime requires.
#pragma once

#include "model_config.h"
#include "triton_api.h"

#include "sinter/batching.hpp"
#include "sinter/runtime.h"
#include "sinter/support/error.h"

#include <string>
#include <vector>

namespace sinter::triton {

// The batching rule is shared with the example server (sinter/batching.hpp).
using sinter::rt::BatchPlan;
using sinter::rt::BatchShapes;
using sinter::rt::planBatches;
using sinter::rt::Run;
using sinter::rt::Slice;

/// A failure with the Triton error code it is reported with.
struct Failure {
  TRITONSERVER_Error_Code code;
  std::string message;
};

template <typename... Args> [[noreturn]] void fail(TRITONSERVER_Error_Code code, Args &&...args) {
  throw Failure{code, detail::concat(std::forward<Args>(args)...)};
}

/// Turns an error the server returned into a Failure (keeping its code); `what` names the call.
void check(TRITONSERVER_Error *error, const char *what);

/// Runs `body`; returns null on success, else a new server error whose message starts with
/// `context`. No exception leaves it.
template <typename Body> TRITONSERVER_Error *guarded(const std::string &context, Body &&body);

/// The Triton error code for a runtime status.
TRITONSERVER_Error_Code codeOf(sinter_status status);

void logMessage(TRITONSERVER_LogLevel level, const std::string &message);

struct ModelState {
  std::string name;
  std::string artifactPath;
  sinter_model *model = nullptr;
  BackendConfig config;
  std::vector<TensorSpec> inputs, outputs;
  /// The batch of the signature's tensors (plan 0's: the smallest bucket); 1 when max_batch_size
  /// is 0.
  int64_t artifactBatch = 1;
  /// The batch sizes the artifact runs (sinter/batching.hpp): its batch symbol's buckets, or B.
  BatchShapes batchShapes;

  /// Bytes of one batch row of a tensor (the whole tensor when the model does not batch).
  size_t rowBytes(const TensorSpec &spec) const {
    return spec.byteSize() / static_cast<size_t>(artifactBatch);
  }
  bool batching() const { return config.maxBatchSize > 0; }

  ModelState() = default;
  ModelState(const ModelState &) = delete;
  ModelState &operator=(const ModelState &) = delete;
  ~ModelState() { sinter_model_free(model); }
};

struct InstanceState {
  ModelState *model = nullptr;
  std::string name;
  sinter_session *session = nullptr;
  bool cuda = false; ///< a CUDA session: runs take host or GPU buffers (sinter_session_run_memory)
  /// Staging for runs that cannot read or write Triton's buffers in place, one per tensor.
  std::vector<std::vector<unsigned char>> inputStaging, outputStaging;

  InstanceState() = default;
  InstanceState(const InstanceState &) = delete;
  InstanceState &operator=(const InstanceState &) = delete;
  ~InstanceState() { sinter_session_destroy(session); }
};

/// Answers every request of one execute call (execute.cpp), then releases it.
void executeRequests(TRITONBACKEND_ModelInstance *instance, InstanceState &state,
                     TRITONBACKEND_Request **requests, uint32_t count);

template <typename Body> TRITONSERVER_Error *guarded(const std::string &context, Body &&body) {
  try {
    body();
    return nullptr;
  } catch (const Failure &failure) {
    return TRITONSERVER_ErrorNew(failure.code, (context + failure.message).c_str());
  } catch (const UserError &error) {
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG, (context + error.what()).c_str());
  } catch (const std::bad_alloc &) {
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_UNAVAILABLE,
                                 (context + "out of host memory").c_str());
  } catch (const std::exception &error) {
    return TRITONSERVER_ErrorNew(
        TRITONSERVER_ERROR_INTERNAL,
        (context + "internal error in the sinter backend: " + error.what()).c_str());
  } catch (...) {
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL,
                                 (context + "internal error in the sinter backend").c_str());
  }
}

} // namespace sinter::triton
