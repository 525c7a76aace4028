// The session interface shared by the CPU and CUDA sessions, and the argument checks every run
// makes before touching anything.
#pragma once

#include "model.h"
#include "sinter/runtime.h"

#include <atomic>
#include <memory>

namespace sinter::rt {

/// What a run uses: the plan its inputs' shapes pick and, for a run padded into a larger bucket,
/// the caller's dims of every input and output (smaller than the plan's where a bucketed dim is).
struct RunShape {
  size_t plan = 0;
  bool padded = false;
  std::vector<std::vector<int64_t>> inputDims, outputDims; ///< only when padded
};

/// Picks the plan for the inputs' shapes (an exact bucket, else the next one up where the dim may
/// be padded: docs/runtime.md, "Shape buckets") and checks counts, pointers, dtype, rank, dims and
/// byte size of every input and output against it; throws RuntimeError(INVALID_ARGUMENT) naming
/// the tensor and the problem.
RunShape validateRunArguments(const LoadedArtifact &artifact, const sinter_tensor *inputs,
                              int32_t inputCount, const sinter_tensor *outputs,
                              int32_t outputCount);
/// validateRunArguments for the inputs alone (sinter_session_benchmark takes no outputs).
RunShape validateInputArguments(const LoadedArtifact &artifact, const sinter_tensor *inputs,
                                int32_t inputCount);
/// The dims output `index` has for inputs of these shapes (sinter_model_output_shape).
std::vector<int64_t> outputDimsFor(const LoadedArtifact &artifact, const sinter_tensor *inputs,
                                   int32_t inputCount, int32_t index);

/// Bytes of a signature tensor (validated at load, so it does not overflow).
size_t signatureBytes(const package::TensorSignature &tensor);

/// Makes a session for the artifact's target (options filled: defaults already applied).
std::unique_ptr<struct ::sinter_session>
createSession(std::shared_ptr<const LoadedArtifact> artifact, const sinter_session_options &options);
/// Makes a CPU session (cpu_session.cpp).
std::unique_ptr<struct ::sinter_session>
createCpuSession(std::shared_ptr<const LoadedArtifact> artifact,
                 const sinter_session_options &options);
/// Makes a CUDA session (cuda_session.cpp).
std::unique_ptr<struct ::sinter_session>
createCudaSession(std::shared_ptr<const LoadedArtifact> artifact,
                  const sinter_session_options &options);

} // namespace sinter::rt

/// The object behind a sinter_session * handle (handles.h): one class per target.
struct sinter_session {
  /// Set while a call runs on the session (handles.h, SessionUse): a second call is BUSY.
  std::atomic<bool> inUse{false};

  virtual ~sinter_session() = default;
  /// Runs with caller buffers that the target can address (device memory for CUDA). Arguments
  /// are already validated.
  virtual void run(const sinter::rt::RunShape &shape, const sinter_tensor *inputs,
                   sinter_tensor *outputs, void *stream) = 0;
  /// Runs with host buffers and returns when the outputs are written. Arguments are validated.
  virtual void runHost(const sinter::rt::RunShape &shape, const sinter_tensor *inputs,
                       sinter_tensor *outputs) = 0;
  /// Runs with each buffer in host or device memory (inputMemory[i], outputMemory[i]: a
  /// sinter_memory; validated) and returns when the outputs are written.
  virtual void runMemory(const sinter::rt::RunShape &shape, const sinter_tensor *inputs,
                         const int32_t *inputMemory, sinter_tensor *outputs,
                         const int32_t *outputMemory) = 0;
  /// Copies bytes between host and this session's device memory, synchronously.
  virtual void copy(void *destination, bool destinationOnDevice, const void *source,
                    bool sourceOnDevice, size_t bytes) = 0;
  virtual const sinter::rt::LoadedArtifact &artifact() const = 0;

  // sinter_session_benchmark's hooks (benchmark.cpp drives them; runs never call them).
  /// Keeps these host inputs (validated) where each timed run can restore them into the arena
  /// without a host copy: the plan may reuse an input's arena slot once the input is dead, so a
  /// replay needs its inputs put back. CPU: keeps the pointers, valid until the benchmark call
  /// returns; CUDA: copies them once into a device buffer of the session.
  virtual void stageBenchmarkInputs(const sinter::rt::RunShape &shape,
                                    const sinter_tensor *hostInputs) = 0;
  /// Restores the staged inputs into the arena, then runs the plan once and returns the
  /// milliseconds of the plan alone (not the restore), after it finished: steady_clock around
  /// it on the CPU; CUDA events on the session's stream around the plan (the graph replay from
  /// the second plan run on; capture happens before the first event).
  virtual double timePlanRun() = 0;
  /// sinter_session_profile's hook: restores the staged inputs, then runs the plan one step at a
  /// time and writes each step's milliseconds to stepMs[0 .. steps): CUDA events between
  /// consecutive steps on the session's stream (never the graph); a steady clock on the CPU.
  virtual void timeSteps(double *stepMs) = 0;
};
