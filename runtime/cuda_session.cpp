// The CUDA session. At creation: take the model's share of the device (its context, kernels and
// one copy of the weights, made by the device's first session: cuda_device.h), load its own copy
// of each module with state (stream-K counters: cuda_device.h), allocate the arena, resolve every
// launch argument to a device address, make a private stream and events.
//
// A run, on the caller's stream S and the session's stream P:
//   S: wait for the previous run's end; copy the inputs into the arena; record `inputsReady`
//   P: wait for `inputsReady`; the plan (replayed as a CUDA graph from the second run on);
//      record `planDone`
//   S: wait for `planDone`; copy the outputs out; record `runDone`
// The plan runs on P because capturing a graph needs a stream of our own (the caller's may be the
// legacy default stream, which cannot be captured); the events order it against the caller's
// work without blocking the host. The first run executes the plan directly, so a faulty kernel
// reports its error outside capture; the second captures and replays.
#include "cuda_device.h"
#include "padding.h"
#include "session.h"
#include "status.h"

#include <cstring>

namespace sinter::rt {
namespace {

using namespace cuda;

struct PreparedStep {
  // Launch
  CUfunction function = nullptr;
  const package::Launch *launch = nullptr;
  std::vector<CUdeviceptr> args;
  std::vector<void *> params; ///< pointers to the elements of args
  std::string kernelName;
  // Copy
  CUdeviceptr source = 0;
  CUdeviceptr destination = 0;
  size_t bytes = 0;
};

class CudaSession final : public sinter_session {
public:
  CudaSession(std::shared_ptr<const LoadedArtifact> artifact, const Driver &driver)
      : artifact_(std::move(artifact)), d_(driver) {}
  ~CudaSession() override;

  void initialize(const sinter_session_options &options);
  void run(const RunShape &shape, const sinter_tensor *inputs, sinter_tensor *outputs,
           void *stream) override;
  void runHost(const RunShape &shape, const sinter_tensor *inputs, sinter_tensor *outputs) override;
  void runMemory(const RunShape &shape, const sinter_tensor *inputs, const int32_t *inputMemory,
                 sinter_tensor *outputs, const int32_t *outputMemory) override;
  void copy(void *destination, bool destinationOnDevice, const void *source, bool sourceOnDevice,
            size_t bytes) override;
  const LoadedArtifact &artifact() const override { return *artifact_; }
  void stageBenchmarkInputs(const RunShape &shape, const sinter_tensor *hostInputs) override;
  double timePlanRun() override;
  void timeSteps(double *stepMs) override;

private:
  /// One plan of the artifact as this session runs it: its steps with device addresses, and its
  /// CUDA graph once captured (each plan keeps its own).
  struct PreparedPlan {
    std::vector<PreparedStep> steps;
    CUgraphExec graph = nullptr;
    int runs = 0;
  };

  void prepareSteps();
  void enqueuePlan(PreparedPlan &plan, CUstream stream);
  void enqueueStep(PreparedStep &step, CUstream stream);
  /// Copies the inputs into plan `shape.plan`'s slots on `stream`, each from the host where
  /// `onHost` (null: none) says so, else from device memory; a smaller input in a larger bucket gets
  /// zeros where it has no elements.
  void copyInputs(const RunShape &shape, const sinter_tensor *inputs, const bool *onHost,
                  CUstream stream);
  /// Copies the outputs out of the plan's slots (trimmed for a padded run), to the host where
  /// `onHost` says so.
  void copyOutputs(const RunShape &shape, sinter_tensor *outputs, const bool *onHost,
                   CUstream stream);
  /// Puts the staged benchmark inputs back into the arena (queued on stream_).
  void restoreStagedInputs();
  void launchPlan(PreparedPlan &plan, CUstream stream);
  void captureGraph(PreparedPlan &plan);

  std::shared_ptr<const LoadedArtifact> artifact_;
  const Driver &d_;
  int ordinal_ = 0;
  std::shared_ptr<const CudaDeviceCode> code_; ///< the model's context, kernels and weights there
  CUcontext context_ = nullptr;                ///< code_'s
  /// By kernel index: code_'s functions, but the session's own for kernels of modules with state.
  std::vector<CUfunction> functions_;
  std::vector<CUmodule> ownModules_; ///< the session's copies of code_'s modules with state
  CUdeviceptr arena_ = 0;
  uint64_t arenaBytes_ = 0;
  std::vector<PreparedPlan> plans_; ///< by plan index
  CUstream stream_ = nullptr;
  CUevent inputsReady_ = nullptr, planDone_ = nullptr, runDone_ = nullptr;
  bool runDoneRecorded_ = false;
  bool useGraphs_ = true;
  // sinter_session_benchmark: the staged inputs (one device buffer) and two timing events.
  RunShape stagedShape_;
  CUdeviceptr stagedInputs_ = 0;
  size_t stagedBytes_ = 0;
  std::vector<size_t> stagedOffsets_; ///< by input index
  std::vector<sinter_tensor> stagedTensors_; ///< the staged inputs, pointing at their device copies
  CUevent timingStart_ = nullptr, timingStop_ = nullptr;
  std::vector<CUevent> stepEvents_; ///< sinter_session_profile: one before each step and one after

};

CudaSession::~CudaSession() {
  if (!context_)
    return;
  // Best effort: a destructor cannot report, and a failed call here leaks at worst.
  CUcontext popped;
  d_.cuCtxPushCurrent(context_);
  if (stream_)
    d_.cuStreamSynchronize(stream_);
  for (PreparedPlan &plan : plans_)
    if (plan.graph)
      d_.cuGraphExecDestroy(plan.graph);
  for (CUevent event : {inputsReady_, planDone_, runDone_, timingStart_, timingStop_})
    if (event)
      d_.cuEventDestroy(event);
  for (CUevent event : stepEvents_)
    d_.cuEventDestroy(event);
  if (stream_)
    d_.cuStreamDestroy(stream_);
  for (CUmodule module : ownModules_)
    d_.cuModuleUnload(module);
  if (arena_)
    d_.cuMemFree(arena_);
  if (stagedInputs_)
    d_.cuMemFree(stagedInputs_);
  d_.cuCtxPopCurrent(&popped);
  if (arena_)
    artifact_->devices.sessionEnded(ordinal_, arenaBytes_);
  // code_ goes with the members: the device's last session frees the weights and kernels.
}

void CudaSession::prepareSteps() {
  const package::Manifest &manifest = artifact_->manifest();
  auto address = [&](const package::BufferRef &ref) {
    return (ref.region == package::Region::Arena ? arena_ : code_->weights()) + ref.offset;
  };
  plans_.resize(artifact_->plans.size());
  for (size_t p = 0; p < plans_.size(); ++p) {
  const std::vector<package::Step> &steps = artifact_->plans[p].steps;
  plans_[p].steps.resize(steps.size());
  for (size_t i = 0; i < steps.size(); ++i) {
    PreparedStep &prepared = plans_[p].steps[i];
    if (const auto *launch = std::get_if<package::Launch>(&steps[i])) {
      prepared.launch = launch;
      prepared.function = functions_[launch->kernel];
      prepared.kernelName = manifest.kernels[launch->kernel].name;
      for (const package::BufferRef &arg : launch->args)
        prepared.args.push_back(address(arg));
      for (CUdeviceptr &arg : prepared.args)
        prepared.params.push_back(&arg);
    } else {
      const auto &copy = std::get<package::Copy>(steps[i]);
      prepared.source = address(copy.source);
      prepared.destination = address(copy.destination);
      prepared.bytes = copy.bytes;
    }
  }
  }
}

void CudaSession::initialize(const sinter_session_options &options) {
  useGraphs_ = options.use_graphs != 0;
  code_ = CudaDeviceCode::share(*artifact_, d_, options.device);
  ordinal_ = options.device;
  context_ = code_->context();
  ContextScope scope(d_, context_);
  arenaBytes_ = std::max<uint64_t>(artifact_->largestArenaBytes(), package::kArenaAlignment);
  check(d_.cuMemAlloc(&arena_, arenaBytes_), "cuMemAlloc (arena)");
  artifact_->devices.sessionStarted(ordinal_, arenaBytes_);
  for (size_t kernel = 0; kernel < code_->kernelCount(); ++kernel)
    functions_.push_back(code_->function(kernel));
  for (size_t module = 0; module < code_->moduleCount(); ++module)
    if (code_->moduleHasState(module))
      ownModules_.push_back(code_->loadModuleCopy(module, functions_));
  prepareSteps();
  check(d_.cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  for (CUevent *event : {&inputsReady_, &planDone_, &runDone_})
    check(d_.cuEventCreate(event, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
}

void CudaSession::enqueuePlan(PreparedPlan &plan, CUstream stream) {
  for (PreparedStep &step : plan.steps)
    enqueueStep(step, stream);
}

void CudaSession::enqueueStep(PreparedStep &step, CUstream stream) {
  if (step.function) {
    const package::Launch &launch = *step.launch;
    CUresult result = d_.cuLaunchKernel(
        step.function, launch.grid[0], launch.grid[1], launch.grid[2], launch.block[0],
        launch.block[1], launch.block[2], launch.sharedBytes, stream, step.params.data(), nullptr);
    if (result != CUDA_SUCCESS)
      fail(SINTER_ERROR_DEVICE, "kernel '", step.kernelName, "': ",
           describeError("cuLaunchKernel", result));
  } else if (step.bytes && step.destination != step.source) {
    check(d_.cuMemcpyDtoDAsync(step.destination, step.source, step.bytes, stream),
          "cuMemcpyDtoDAsync (plan copy)");
  }
}

void CudaSession::captureGraph(PreparedPlan &plan) {
  check(d_.cuStreamBeginCapture(stream_, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
        "cuStreamBeginCapture");
  CUgraph graph = nullptr;
  try {
    enqueuePlan(plan, stream_);
  } catch (...) {
    d_.cuStreamEndCapture(stream_, &graph); // leave capture mode before reporting
    if (graph)
      d_.cuGraphDestroy(graph);
    throw;
  }
  check(d_.cuStreamEndCapture(stream_, &graph), "cuStreamEndCapture");
  CUresult result = d_.cuGraphInstantiateWithFlags(&plan.graph, graph, 0);
  d_.cuGraphDestroy(graph);
  check(result, "cuGraphInstantiateWithFlags");
}

void CudaSession::launchPlan(PreparedPlan &plan, CUstream stream) {
  bool replay = useGraphs_ && plan.runs > 0 && !plan.steps.empty();
  if (replay && !plan.graph)
    captureGraph(plan);
  if (replay)
    check(d_.cuGraphLaunch(plan.graph, stream), "cuGraphLaunch");
  else
    enqueuePlan(plan, stream);
  ++plan.runs;
}

void CudaSession::copyInputs(const RunShape &shape, const sinter_tensor *inputs,
                             const bool *onHost, CUstream stream) {
  const package::Plan &plan = artifact_->plans[shape.plan];
  bool fromHost = false;
  auto copy = [&](CUdeviceptr destination, const uint8_t *source, size_t bytes) {
    if (fromHost)
      check(d_.cuMemcpyHtoDAsync(destination, source, bytes, stream), "cuMemcpyHtoDAsync (input)");
    else
      check(d_.cuMemcpyDtoDAsync(destination, reinterpret_cast<CUdeviceptr>(source), bytes, stream),
            "cuMemcpyDtoDAsync (input)");
  };
  for (size_t i = 0; i < plan.inputs.size(); ++i) {
    fromHost = onHost && onHost[i];
    CUdeviceptr slot = arena_ + plan.inputs[i].arenaOffset;
    const auto *data = static_cast<const uint8_t *>(inputs[i].data);
    if (shape.padded && shape.inputDims[i] != plan.inputs[i].dims) {
      check(d_.cuMemsetD8Async(slot, 0, signatureBytes(plan.inputs[i]), stream),
            "cuMemsetD8Async (padded input)");
      for (const CopyRun &run : paddedCopyRuns(shape.inputDims[i], plan.inputs[i].dims,
                                               dtypeSize(plan.inputs[i].dtype)))
        copy(slot + run.planOffset, data + run.callerOffset, run.bytes);
    } else if (size_t bytes = signatureBytes(plan.inputs[i])) {
      copy(slot, data, bytes);
    }
  }
}

void CudaSession::copyOutputs(const RunShape &shape, sinter_tensor *outputs, const bool *onHost,
                              CUstream stream) {
  const package::Plan &plan = artifact_->plans[shape.plan];
  bool toHost = false;
  auto copy = [&](uint8_t *destination, CUdeviceptr source, size_t bytes) {
    if (toHost)
      check(d_.cuMemcpyDtoHAsync(destination, source, bytes, stream), "cuMemcpyDtoHAsync (output)");
    else
      check(d_.cuMemcpyDtoDAsync(reinterpret_cast<CUdeviceptr>(destination), source, bytes, stream),
            "cuMemcpyDtoDAsync (output)");
  };
  for (size_t i = 0; i < plan.outputs.size(); ++i) {
    toHost = onHost && onHost[i];
    CUdeviceptr slot = arena_ + plan.outputs[i].arenaOffset;
    auto *data = static_cast<uint8_t *>(outputs[i].data);
    if (shape.padded && shape.outputDims[i] != plan.outputs[i].dims) {
      for (const CopyRun &run : paddedCopyRuns(shape.outputDims[i], plan.outputs[i].dims,
                                               dtypeSize(plan.outputs[i].dtype)))
        copy(data + run.callerOffset, slot + run.planOffset, run.bytes);
    } else if (size_t bytes = signatureBytes(plan.outputs[i])) {
      copy(data, slot, bytes);
    }
  }
}

void CudaSession::run(const RunShape &shape, const sinter_tensor *inputs, sinter_tensor *outputs,
                      void *stream) {
  ContextScope scope(d_, context_);
  auto caller = static_cast<CUstream>(stream);
  if (runDoneRecorded_) // the previous run may have used another stream
    check(d_.cuStreamWaitEvent(caller, runDone_, 0), "cuStreamWaitEvent");
  copyInputs(shape, inputs, /*onHost=*/nullptr, caller);
  check(d_.cuEventRecord(inputsReady_, caller), "cuEventRecord");
  check(d_.cuStreamWaitEvent(stream_, inputsReady_, 0), "cuStreamWaitEvent");
  launchPlan(plans_[shape.plan], stream_);
  check(d_.cuEventRecord(planDone_, stream_), "cuEventRecord");
  check(d_.cuStreamWaitEvent(caller, planDone_, 0), "cuStreamWaitEvent");
  copyOutputs(shape, outputs, /*onHost=*/nullptr, caller);
  check(d_.cuEventRecord(runDone_, caller), "cuEventRecord");
  runDoneRecorded_ = true;
}

void CudaSession::runHost(const RunShape &shape, const sinter_tensor *inputs,
                          sinter_tensor *outputs) {
  const package::Plan &plan = artifact_->plans[shape.plan];
  std::vector<int32_t> host(std::max(plan.inputs.size(), plan.outputs.size()), SINTER_MEMORY_HOST);
  runMemory(shape, inputs, host.data(), outputs, host.data());
}

void CudaSession::runMemory(const RunShape &shape, const sinter_tensor *inputs,
                            const int32_t *inputMemory, sinter_tensor *outputs,
                            const int32_t *outputMemory) {
  const package::Plan &plan = artifact_->plans[shape.plan];
  std::unique_ptr<bool[]> inputsOnHost(new bool[plan.inputs.size() + 1]);
  std::unique_ptr<bool[]> outputsOnHost(new bool[plan.outputs.size() + 1]);
  for (size_t i = 0; i < plan.inputs.size(); ++i)
    inputsOnHost[i] = inputMemory[i] == SINTER_MEMORY_HOST;
  for (size_t i = 0; i < plan.outputs.size(); ++i)
    outputsOnHost[i] = outputMemory[i] == SINTER_MEMORY_HOST;
  ContextScope scope(d_, context_);
  if (runDoneRecorded_)
    check(d_.cuStreamWaitEvent(stream_, runDone_, 0), "cuStreamWaitEvent");
  copyInputs(shape, inputs, inputsOnHost.get(), stream_);
  launchPlan(plans_[shape.plan], stream_);
  copyOutputs(shape, outputs, outputsOnHost.get(), stream_);
  check(d_.cuEventRecord(runDone_, stream_), "cuEventRecord");
  runDoneRecorded_ = true;
  check(d_.cuStreamSynchronize(stream_), "cuStreamSynchronize");
}

void CudaSession::stageBenchmarkInputs(const RunShape &shape, const sinter_tensor *hostInputs) {
  const package::Plan &plan = artifact_->plans[shape.plan];
  ContextScope scope(d_, context_);
  stagedShape_ = shape;
  stagedTensors_.assign(hostInputs, hostInputs + plan.inputs.size());
  stagedOffsets_.assign(plan.inputs.size(), 0);
  size_t total = 0;
  for (size_t i = 0; i < plan.inputs.size(); ++i) {
    stagedOffsets_[i] = total;
    total += (hostInputs[i].byte_size + package::kArenaAlignment - 1) / package::kArenaAlignment *
             package::kArenaAlignment;
  }
  if (total > stagedBytes_) {
    if (stagedInputs_)
      check(d_.cuMemFree(stagedInputs_), "cuMemFree (benchmark inputs)");
    stagedInputs_ = 0;
    stagedBytes_ = 0;
    check(d_.cuMemAlloc(&stagedInputs_, total), "cuMemAlloc (benchmark inputs)");
    stagedBytes_ = total;
  }
  if (runDoneRecorded_)
    check(d_.cuStreamWaitEvent(stream_, runDone_, 0), "cuStreamWaitEvent");
  for (size_t i = 0; i < plan.inputs.size(); ++i) {
    if (hostInputs[i].byte_size)
      check(d_.cuMemcpyHtoDAsync(stagedInputs_ + stagedOffsets_[i], hostInputs[i].data,
                                 hostInputs[i].byte_size, stream_),
            "cuMemcpyHtoDAsync (benchmark input)");
    // Later restores read the device copy, in the caller's layout.
    stagedTensors_[i].data = reinterpret_cast<void *>(stagedInputs_ + stagedOffsets_[i]);
  }
  for (CUevent *event : {&timingStart_, &timingStop_})
    if (!*event)
      check(d_.cuEventCreate(event, 0), "cuEventCreate (timing)");
  check(d_.cuStreamSynchronize(stream_), "cuStreamSynchronize");
}

void CudaSession::restoreStagedInputs() {
  copyInputs(stagedShape_, stagedTensors_.data(), /*onHost=*/nullptr, stream_);
}

void CudaSession::copy(void *destination, bool destinationOnDevice, const void *source,
                       bool sourceOnDevice, size_t bytes) {
  if (bytes == 0)
    return;
  ContextScope scope(d_, context_);
  if (runDoneRecorded_) // after this session's runs, which may write the memory
    check(d_.cuStreamWaitEvent(stream_, runDone_, 0), "cuStreamWaitEvent");
  auto device = [](const void *pointer) { return reinterpret_cast<CUdeviceptr>(pointer); };
  if (destinationOnDevice && sourceOnDevice)
    check(d_.cuMemcpyDtoDAsync(device(destination), device(source), bytes, stream_),
          "cuMemcpyDtoDAsync (copy)");
  else if (destinationOnDevice)
    check(d_.cuMemcpyHtoDAsync(device(destination), source, bytes, stream_),
          "cuMemcpyHtoDAsync (copy)");
  else if (sourceOnDevice)
    check(d_.cuMemcpyDtoHAsync(destination, device(source), bytes, stream_),
          "cuMemcpyDtoHAsync (copy)");
  else
    std::memcpy(destination, source, bytes);
  check(d_.cuStreamSynchronize(stream_), "cuStreamSynchronize");
}

void CudaSession::timeSteps(double *stepMs) {
  ContextScope scope(d_, context_);
  std::vector<PreparedStep> &steps = plans_[stagedShape_.plan].steps;
  while (stepEvents_.size() < steps.size() + 1) {
    CUevent event = nullptr;
    check(d_.cuEventCreate(&event, 0), "cuEventCreate (profile)");
    stepEvents_.push_back(event);
  }
  restoreStagedInputs();
  check(d_.cuEventRecord(stepEvents_[0], stream_), "cuEventRecord");
  for (size_t i = 0; i < steps.size(); ++i) {
    enqueueStep(steps[i], stream_);
    check(d_.cuEventRecord(stepEvents_[i + 1], stream_), "cuEventRecord");
  }
  check(d_.cuEventSynchronize(stepEvents_[steps.size()]), "cuEventSynchronize");
  for (size_t i = 0; i < steps.size(); ++i) {
    float milliseconds = 0;
    check(d_.cuEventElapsedTime(&milliseconds, stepEvents_[i], stepEvents_[i + 1]),
          "cuEventElapsedTime");
    stepMs[i] = milliseconds;
  }
}

double CudaSession::timePlanRun() {
  ContextScope scope(d_, context_);
  PreparedPlan &plan = plans_[stagedShape_.plan];
  // Capture (once) outside the timed span, before any work of this run is queued.
  if (useGraphs_ && plan.runs > 0 && !plan.graph && !plan.steps.empty())
    captureGraph(plan);
  restoreStagedInputs();
  check(d_.cuEventRecord(timingStart_, stream_), "cuEventRecord");
  launchPlan(plan, stream_);
  check(d_.cuEventRecord(timingStop_, stream_), "cuEventRecord");
  check(d_.cuEventSynchronize(timingStop_), "cuEventSynchronize");
  float milliseconds = 0;
  check(d_.cuEventElapsedTime(&milliseconds, timingStart_, timingStop_), "cuEventElapsedTime");
  return milliseconds;
}

} // namespace

std::unique_ptr<sinter_session> createCudaSession(std::shared_ptr<const LoadedArtifact> artifact,
                                                  const sinter_session_options &options) {
  const Driver &driver = cuda::driver(); // NO_DEVICE without libcuda.so.1
  auto session = std::make_unique<CudaSession>(std::move(artifact), driver);
  session->initialize(options);
  return session;
}

} // namespace sinter::rt
