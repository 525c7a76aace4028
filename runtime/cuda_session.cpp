// The CUDA session. At creation: take the model's share of the device (its context, kernels and
// one copy of the weights, made by the device's first session: cuda_device.h), allocate the
// arena, resolve every launch argument to a device address, make a private stream and events.
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
  void run(const sinter_tensor *inputs, sinter_tensor *outputs, void *stream) override;
  void runHost(const sinter_tensor *inputs, sinter_tensor *outputs) override;
  const LoadedArtifact &artifact() const override { return *artifact_; }
  void stageBenchmarkInputs(const sinter_tensor *hostInputs) override;
  double timePlanRun() override;
  void timeSteps(double *stepMs) override;

private:
  void prepareSteps();
  void enqueuePlan(CUstream stream);
  void enqueueStep(PreparedStep &step, CUstream stream);
  /// Puts the staged benchmark inputs back into the arena (queued on stream_).
  void restoreStagedInputs();
  void launchPlan(CUstream stream);
  void captureGraph();

  std::shared_ptr<const LoadedArtifact> artifact_;
  const Driver &d_;
  int ordinal_ = 0;
  std::shared_ptr<const CudaDeviceCode> code_; ///< the model's context, kernels and weights there
  CUcontext context_ = nullptr;                ///< code_'s
  CUdeviceptr arena_ = 0;
  uint64_t arenaBytes_ = 0;
  std::vector<PreparedStep> steps_;
  CUstream stream_ = nullptr;
  CUevent inputsReady_ = nullptr, planDone_ = nullptr, runDone_ = nullptr;
  bool runDoneRecorded_ = false;
  bool useGraphs_ = true;
  int planRuns_ = 0;
  CUgraphExec graph_ = nullptr;
  // sinter_session_benchmark: the staged inputs (one device buffer) and two timing events.
  CUdeviceptr stagedInputs_ = 0;
  size_t stagedBytes_ = 0;
  std::vector<size_t> stagedOffsets_; ///< by input index
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
  if (graph_)
    d_.cuGraphExecDestroy(graph_);
  for (CUevent event : {inputsReady_, planDone_, runDone_, timingStart_, timingStop_})
    if (event)
      d_.cuEventDestroy(event);
  for (CUevent event : stepEvents_)
    d_.cuEventDestroy(event);
  if (stream_)
    d_.cuStreamDestroy(stream_);
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
  steps_.resize(manifest.steps.size());
  for (size_t i = 0; i < manifest.steps.size(); ++i) {
    PreparedStep &prepared = steps_[i];
    if (const auto *launch = std::get_if<package::Launch>(&manifest.steps[i])) {
      prepared.launch = launch;
      prepared.function = code_->function(launch->kernel);
      prepared.kernelName = manifest.kernels[launch->kernel].name;
      for (const package::BufferRef &arg : launch->args)
        prepared.args.push_back(address(arg));
      for (CUdeviceptr &arg : prepared.args)
        prepared.params.push_back(&arg);
    } else {
      const auto &copy = std::get<package::Copy>(manifest.steps[i]);
      prepared.source = address(copy.source);
      prepared.destination = address(copy.destination);
      prepared.bytes = copy.bytes;
    }
  }
}

void CudaSession::initialize(const sinter_session_options &options) {
  const package::Manifest &manifest = artifact_->manifest();
  useGraphs_ = options.use_graphs != 0;
  code_ = CudaDeviceCode::share(*artifact_, d_, options.device);
  ordinal_ = options.device;
  context_ = code_->context();
  ContextScope scope(d_, context_);
  arenaBytes_ = std::max<uint64_t>(manifest.arenaBytes, package::kArenaAlignment);
  check(d_.cuMemAlloc(&arena_, arenaBytes_), "cuMemAlloc (arena)");
  artifact_->devices.sessionStarted(ordinal_, arenaBytes_);
  prepareSteps();
  check(d_.cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  for (CUevent *event : {&inputsReady_, &planDone_, &runDone_})
    check(d_.cuEventCreate(event, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
}

void CudaSession::enqueuePlan(CUstream stream) {
  for (PreparedStep &step : steps_)
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

void CudaSession::captureGraph() {
  check(d_.cuStreamBeginCapture(stream_, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
        "cuStreamBeginCapture");
  CUgraph graph = nullptr;
  try {
    enqueuePlan(stream_);
  } catch (...) {
    d_.cuStreamEndCapture(stream_, &graph); // leave capture mode before reporting
    if (graph)
      d_.cuGraphDestroy(graph);
    throw;
  }
  check(d_.cuStreamEndCapture(stream_, &graph), "cuStreamEndCapture");
  CUresult result = d_.cuGraphInstantiateWithFlags(&graph_, graph, 0);
  d_.cuGraphDestroy(graph);
  check(result, "cuGraphInstantiateWithFlags");
}

void CudaSession::launchPlan(CUstream stream) {
  bool replay = useGraphs_ && planRuns_ > 0 && !steps_.empty();
  if (replay && !graph_)
    captureGraph();
  if (replay)
    check(d_.cuGraphLaunch(graph_, stream), "cuGraphLaunch");
  else
    enqueuePlan(stream);
  ++planRuns_;
}

void CudaSession::run(const sinter_tensor *inputs, sinter_tensor *outputs, void *stream) {
  const package::Manifest &manifest = artifact_->manifest();
  ContextScope scope(d_, context_);
  auto caller = static_cast<CUstream>(stream);
  if (runDoneRecorded_) // the previous run may have used another stream
    check(d_.cuStreamWaitEvent(caller, runDone_, 0), "cuStreamWaitEvent");
  for (size_t i = 0; i < manifest.inputs.size(); ++i)
    if (size_t bytes = signatureBytes(manifest.inputs[i]))
      check(d_.cuMemcpyDtoDAsync(arena_ + manifest.inputs[i].arenaOffset,
                                 reinterpret_cast<CUdeviceptr>(inputs[i].data), bytes, caller),
            "cuMemcpyDtoDAsync (input)");
  check(d_.cuEventRecord(inputsReady_, caller), "cuEventRecord");
  check(d_.cuStreamWaitEvent(stream_, inputsReady_, 0), "cuStreamWaitEvent");
  launchPlan(stream_);
  check(d_.cuEventRecord(planDone_, stream_), "cuEventRecord");
  check(d_.cuStreamWaitEvent(caller, planDone_, 0), "cuStreamWaitEvent");
  for (size_t i = 0; i < manifest.outputs.size(); ++i)
    if (size_t bytes = signatureBytes(manifest.outputs[i]))
      check(d_.cuMemcpyDtoDAsync(reinterpret_cast<CUdeviceptr>(outputs[i].data),
                                 arena_ + manifest.outputs[i].arenaOffset, bytes, caller),
            "cuMemcpyDtoDAsync (output)");
  check(d_.cuEventRecord(runDone_, caller), "cuEventRecord");
  runDoneRecorded_ = true;
}

void CudaSession::runHost(const sinter_tensor *inputs, sinter_tensor *outputs) {
  const package::Manifest &manifest = artifact_->manifest();
  ContextScope scope(d_, context_);
  if (runDoneRecorded_)
    check(d_.cuStreamWaitEvent(stream_, runDone_, 0), "cuStreamWaitEvent");
  for (size_t i = 0; i < manifest.inputs.size(); ++i)
    if (size_t bytes = signatureBytes(manifest.inputs[i]))
      check(d_.cuMemcpyHtoDAsync(arena_ + manifest.inputs[i].arenaOffset, inputs[i].data, bytes,
                                 stream_),
            "cuMemcpyHtoDAsync (input)");
  launchPlan(stream_);
  for (size_t i = 0; i < manifest.outputs.size(); ++i)
    if (size_t bytes = signatureBytes(manifest.outputs[i]))
      check(d_.cuMemcpyDtoHAsync(outputs[i].data, arena_ + manifest.outputs[i].arenaOffset, bytes,
                                 stream_),
            "cuMemcpyDtoHAsync (output)");
  check(d_.cuEventRecord(runDone_, stream_), "cuEventRecord");
  runDoneRecorded_ = true;
  check(d_.cuStreamSynchronize(stream_), "cuStreamSynchronize");
}

void CudaSession::stageBenchmarkInputs(const sinter_tensor *hostInputs) {
  const package::Manifest &manifest = artifact_->manifest();
  ContextScope scope(d_, context_);
  stagedOffsets_.assign(manifest.inputs.size(), 0);
  size_t total = 0;
  for (size_t i = 0; i < manifest.inputs.size(); ++i) {
    stagedOffsets_[i] = total;
    total += (signatureBytes(manifest.inputs[i]) + package::kArenaAlignment - 1) /
             package::kArenaAlignment * package::kArenaAlignment;
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
  for (size_t i = 0; i < manifest.inputs.size(); ++i)
    if (size_t bytes = signatureBytes(manifest.inputs[i]))
      check(d_.cuMemcpyHtoDAsync(stagedInputs_ + stagedOffsets_[i], hostInputs[i].data, bytes,
                                 stream_),
            "cuMemcpyHtoDAsync (benchmark input)");
  for (CUevent *event : {&timingStart_, &timingStop_})
    if (!*event)
      check(d_.cuEventCreate(event, 0), "cuEventCreate (timing)");
  check(d_.cuStreamSynchronize(stream_), "cuStreamSynchronize");
}

void CudaSession::restoreStagedInputs() {
  const package::Manifest &manifest = artifact_->manifest();
  for (size_t i = 0; i < manifest.inputs.size(); ++i)
    if (size_t bytes = signatureBytes(manifest.inputs[i]))
      check(d_.cuMemcpyDtoDAsync(arena_ + manifest.inputs[i].arenaOffset,
                                 stagedInputs_ + stagedOffsets_[i], bytes, stream_),
            "cuMemcpyDtoDAsync (benchmark input)");
}

void CudaSession::timeSteps(double *stepMs) {
  ContextScope scope(d_, context_);
  while (stepEvents_.size() < steps_.size() + 1) {
    CUevent event = nullptr;
    check(d_.cuEventCreate(&event, 0), "cuEventCreate (profile)");
    stepEvents_.push_back(event);
  }
  restoreStagedInputs();
  check(d_.cuEventRecord(stepEvents_[0], stream_), "cuEventRecord");
  for (size_t i = 0; i < steps_.size(); ++i) {
    enqueueStep(steps_[i], stream_);
    check(d_.cuEventRecord(stepEvents_[i + 1], stream_), "cuEventRecord");
  }
  check(d_.cuEventSynchronize(stepEvents_[steps_.size()]), "cuEventSynchronize");
  for (size_t i = 0; i < steps_.size(); ++i) {
    float milliseconds = 0;
    check(d_.cuEventElapsedTime(&milliseconds, stepEvents_[i], stepEvents_[i + 1]),
          "cuEventElapsedTime");
    stepMs[i] = milliseconds;
  }
}

double CudaSession::timePlanRun() {
  ContextScope scope(d_, context_);
  // Capture (once) outside the timed span, before any work of this run is queued.
  if (useGraphs_ && planRuns_ > 0 && !graph_ && !steps_.empty())
    captureGraph();
  restoreStagedInputs();
  check(d_.cuEventRecord(timingStart_, stream_), "cuEventRecord");
  launchPlan(stream_);
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
