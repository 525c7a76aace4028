// The CUDA session. At creation: retain the device's primary context, load each CUDA module of
// the manifest (the cubin for this GPU's architecture, else JIT-compiled PTX), find each kernel in
// its module, allocate the arena, upload the weights, resolve every launch argument to a device
// address, make a private stream and events.
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
#include "cuda_driver.h"
#include "session.h"
#include "status.h"

#include <cstring>

namespace sinter::rt {
namespace {

using namespace cuda;

/// Dynamic shared memory a kernel may use without opting in.
constexpr uint32_t kDefaultSharedBytes = 48 * 1024;

struct Arch {
  int major = 0;
  int minor = 0;
  bool specific = false; ///< "sm_90a": runs on exactly that architecture
};

/// Parses "sm_90", "sm_90a", "compute_120" (validated at load).
Arch parseArch(const std::string &text) {
  size_t digits = text.find('_') + 1;
  std::string number = text.substr(digits);
  Arch arch;
  if (!number.empty() && (number.back() == 'a' || number.back() == 'f')) {
    arch.specific = number.back() == 'a';
    number.pop_back();
  }
  int value = std::stoi(number);
  arch.major = value / 10;
  arch.minor = value % 10;
  return arch;
}

/// Makes the session's context current for the scope of one call.
class ContextScope {
public:
  ContextScope(const Driver &driver, CUcontext context) : driver_(driver) {
    check(driver_.cuCtxPushCurrent(context), "cuCtxPushCurrent");
  }
  ~ContextScope() {
    CUcontext popped;
    driver_.cuCtxPopCurrent(&popped);
  }
  ContextScope(const ContextScope &) = delete;
  ContextScope &operator=(const ContextScope &) = delete;

private:
  const Driver &driver_;
};

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
  void openDevice(int ordinal);
  void loadKernels();
  const package::CudaBinary &chooseBinary(size_t moduleIndex) const;
  void prepareSteps();
  void enqueuePlan(CUstream stream);
  void enqueueStep(PreparedStep &step, CUstream stream);
  /// Puts the staged benchmark inputs back into the arena (queued on stream_).
  void restoreStagedInputs();
  void launchPlan(CUstream stream);
  void captureGraph();

  std::shared_ptr<const LoadedArtifact> artifact_;
  const Driver &d_;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  Arch deviceArch_;
  std::string deviceName_;
  std::vector<CUmodule> modules_;
  std::vector<CUfunction> functions_; ///< by kernel index
  CUdeviceptr arena_ = 0;
  CUdeviceptr weights_ = 0;
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
  if (weights_)
    d_.cuMemFree(weights_);
  if (stagedInputs_)
    d_.cuMemFree(stagedInputs_);
  for (CUmodule module : modules_)
    d_.cuModuleUnload(module);
  d_.cuCtxPopCurrent(&popped);
  d_.cuDevicePrimaryCtxRelease(device_);
}

void CudaSession::openDevice(int ordinal) {
  int count = 0;
  check(d_.cuDeviceGetCount(&count), "cuDeviceGetCount");
  if (ordinal < 0 || ordinal >= count)
    fail(SINTER_ERROR_NO_DEVICE, "CUDA device ", ordinal, " was requested but ", count,
         count == 1 ? " is" : " are", " visible");
  check(d_.cuDeviceGet(&device_, ordinal), "cuDeviceGet");
  check(d_.cuDeviceGetAttribute(&deviceArch_.major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                                device_),
        "cuDeviceGetAttribute");
  check(d_.cuDeviceGetAttribute(&deviceArch_.minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                                device_),
        "cuDeviceGetAttribute");
  char name[256] = {};
  check(d_.cuDeviceGetName(name, sizeof(name) - 1, device_), "cuDeviceGetName");
  deviceName_ = name;
  check(d_.cuDevicePrimaryCtxRetain(&context_, device_), "cuDevicePrimaryCtxRetain");
}

const package::CudaBinary &CudaSession::chooseBinary(size_t moduleIndex) const {
  const package::Manifest &manifest = artifact_->manifest();
  const std::vector<package::CudaBinary> &binaries = manifest.cudaModules[moduleIndex].binaries;
  const package::CudaBinary *best = nullptr;
  Arch bestArch;
  // A cubin runs on its major architecture at an equal or higher minor; "a" cubins on exactly
  // their architecture. Prefer the highest minor, and the specific one on a tie.
  for (const package::CudaBinary &binary : binaries) {
    if (binary.isPtx)
      continue;
    Arch arch = parseArch(binary.arch);
    if (arch.major != deviceArch_.major || arch.minor > deviceArch_.minor ||
        (arch.specific && arch.minor != deviceArch_.minor))
      continue;
    if (!best || arch.minor > bestArch.minor ||
        (arch.minor == bestArch.minor && arch.specific && !bestArch.specific)) {
      best = &binary;
      bestArch = arch;
    }
  }
  if (best)
    return *best;
  // Else the newest PTX this GPU can JIT: any version up to its own.
  int deviceVersion = deviceArch_.major * 10 + deviceArch_.minor;
  int bestVersion = -1;
  for (const package::CudaBinary &binary : binaries) {
    if (!binary.isPtx)
      continue;
    Arch arch = parseArch(binary.arch);
    int version = arch.major * 10 + arch.minor;
    if (version > deviceVersion || (arch.specific && version != deviceVersion))
      continue;
    if (version > bestVersion) {
      best = &binary;
      bestVersion = version;
    }
  }
  if (best)
    return *best;
  std::string available;
  for (const package::CudaBinary &binary : binaries)
    available += (available.empty() ? "" : ", ") + binary.arch;
  std::string kernels;
  for (const package::Kernel &kernel : manifest.kernels)
    if (kernel.cudaModule == moduleIndex)
      kernels += (kernels.empty() ? "" : ", ") + kernel.name;
  fail(SINTER_ERROR_UNSUPPORTED, "CUDA module ", moduleIndex, " (kernels ", kernels, ") has code for ", available,
       " but none runs on ", deviceName_, " (sm_", deviceArch_.major, deviceArch_.minor,
       "); compile for this GPU's architecture or include PTX");
}

void CudaSession::loadKernels() {
  const package::Manifest &manifest = artifact_->manifest();
  int sharedLimit = 0;
  check(d_.cuDeviceGetAttribute(&sharedLimit, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                                device_),
        "cuDeviceGetAttribute");
  std::vector<uint32_t> sharedNeeded(manifest.kernels.size(), 0);
  for (const package::Step &step : manifest.steps)
    if (const auto *launch = std::get_if<package::Launch>(&step))
      sharedNeeded[launch->kernel] = std::max(sharedNeeded[launch->kernel], launch->sharedBytes);

  std::vector<std::string> moduleArch;
  for (size_t index = 0; index < manifest.cudaModules.size(); ++index) {
    const package::CudaBinary &binary = chooseBinary(index);
    std::string image(binary.bytes.begin(), binary.bytes.end()); // PTX must end with a NUL
    char log[4096] = {};
    int options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *values[] = {log, reinterpret_cast<void *>(uintptr_t(sizeof(log) - 1))};
    CUmodule module = nullptr;
    CUresult result = d_.cuModuleLoadDataEx(&module, image.c_str(), 2, options, values);
    if (result != CUDA_SUCCESS)
      fail(SINTER_ERROR_DEVICE, "loading CUDA module ", index, " (", binary.arch, ") failed: ",
           describeError("cuModuleLoadDataEx", result), log[0] ? "\n" : "", log);
    modules_.push_back(module);
    moduleArch.push_back(binary.arch);
  }

  for (size_t index = 0; index < manifest.kernels.size(); ++index) {
    const package::Kernel &kernel = manifest.kernels[index];
    CUmodule module = modules_[kernel.cudaModule];
    const std::string &arch = moduleArch[kernel.cudaModule];
    CUfunction function = nullptr;
    CUresult result = d_.cuModuleGetFunction(&function, module, kernel.name.c_str());
    if (result != CUDA_SUCCESS)
      fail(SINTER_ERROR_INVALID_ARTIFACT, "the ", arch, " code of kernel '", kernel.name,
           "' has no entry point of that name: ", describeError("cuModuleGetFunction", result));
    if (sharedNeeded[index] > kDefaultSharedBytes) {
      if (sharedNeeded[index] > static_cast<uint32_t>(sharedLimit))
        fail(SINTER_ERROR_UNSUPPORTED, "kernel '", kernel.name, "' needs ", sharedNeeded[index],
             " bytes of shared memory; ", deviceName_, " allows ", sharedLimit);
      check(d_.cuFuncSetAttribute(function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                  static_cast<int>(sharedNeeded[index])),
            "cuFuncSetAttribute");
    }
    functions_.push_back(function);
  }
}

void CudaSession::prepareSteps() {
  const package::Manifest &manifest = artifact_->manifest();
  auto address = [&](const package::BufferRef &ref) {
    return (ref.region == package::Region::Arena ? arena_ : weights_) + ref.offset;
  };
  steps_.resize(manifest.steps.size());
  for (size_t i = 0; i < manifest.steps.size(); ++i) {
    PreparedStep &prepared = steps_[i];
    if (const auto *launch = std::get_if<package::Launch>(&manifest.steps[i])) {
      prepared.launch = launch;
      prepared.function = functions_[launch->kernel];
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
  openDevice(options.device);
  ContextScope scope(d_, context_);
  loadKernels();
  check(d_.cuMemAlloc(&arena_, std::max<uint64_t>(manifest.arenaBytes, package::kArenaAlignment)),
        "cuMemAlloc (arena)");
  if (artifact_->weightsBytes() > 0) {
    check(d_.cuMemAlloc(&weights_, artifact_->weightsBytes()), "cuMemAlloc (weights)");
    check(d_.cuMemcpyHtoD(weights_, artifact_->weights, artifact_->weightsBytes()),
          "cuMemcpyHtoD (weights)");
  }
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
