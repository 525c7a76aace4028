// The CPU session: an arena (anonymous memory, so it starts zeroed and costs nothing until
// touched), the weights used in place from the mapped model.so, a thread pool, and the plan with
// every argument already resolved to an address. A run copies the inputs into the arena, runs the
// steps in order (a launch calls the kernel on disjoint chunks of [0, parallelExtent) across the
// pool; a copy is a memcpy) and copies the outputs out.
#include "session.h"
#include "status.h"
#include "padding.h"
#include "thread_pool.h"

#include <chrono>
#include <cstring>
#include <sys/mman.h>

namespace sinter::rt {
namespace {

/// The most worker threads a session may ask for.
constexpr int kMaxThreads = 1024;

class Arena {
public:
  explicit Arena(uint64_t bytes) : bytes_(std::max<uint64_t>(bytes, 1)) {
    void *memory = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (memory == MAP_FAILED)
      fail(SINTER_ERROR_OUT_OF_MEMORY, "cannot allocate the ", bytes, "-byte arena");
    base_ = static_cast<uint8_t *>(memory); // page-aligned, so kArenaAlignment-aligned
  }
  ~Arena() { munmap(base_, bytes_); }
  Arena(const Arena &) = delete;
  Arena &operator=(const Arena &) = delete;
  uint8_t *base() const { return base_; }
  uint64_t bytes() const { return bytes_; }

private:
  uint64_t bytes_;
  uint8_t *base_;
};

struct PreparedStep {
  // Launch
  CpuKernelFunction kernel = nullptr;
  std::vector<void *> args;
  int64_t extent = 0;
  bool onCallingThread = false; ///< too little work to pay for waking the pool
  // Copy
  const uint8_t *source = nullptr;
  uint8_t *destination = nullptr;
  size_t bytes = 0;
};

/// Kernels with less work than this (FLOPs plus bytes read and written, from the manifest) run
/// on the calling thread: waking the pool's workers and waiting for them costs more, above all
/// on a loaded machine where a worker may not be scheduled at once.
constexpr double kInlineWork = 32768;

void runKernelChunk(void *context, int64_t begin, int64_t end) {
  const PreparedStep &step = *static_cast<const PreparedStep *>(context);
  step.kernel(step.args.data(), begin, end);
}

class CpuSession final : public sinter_session {
public:
  CpuSession(std::shared_ptr<const LoadedArtifact> artifact, int threads)
      : artifact_(std::move(artifact)), arena_(artifact_->largestArenaBytes()), pool_(threads) {
    const package::Manifest &manifest = artifact_->manifest();
    for (const package::Plan &plan : artifact_->plans)
      plans_.push_back(prepare(manifest, plan));
    artifact_->devices.sessionStarted(0, arena_.bytes());
  }
  ~CpuSession() override { artifact_->devices.sessionEnded(0, arena_.bytes()); }

  /// The plan with every argument resolved to an address.
  std::vector<PreparedStep> prepare(const package::Manifest &manifest, const package::Plan &plan) {
    std::vector<PreparedStep> steps;
    auto address = [&](const package::BufferRef &ref) -> uint8_t * {
      uint8_t *base = ref.region == package::Region::Arena
                          ? arena_.base()
                          : const_cast<uint8_t *>(artifact_->weights);
      return base + ref.offset;
    };
    for (const package::Step &step : plan.steps) {
      PreparedStep prepared;
      if (const auto *launch = std::get_if<package::Launch>(&step)) {
        prepared.kernel = artifact_->cpuKernels[launch->kernel];
        prepared.extent = launch->parallelExtent;
        const package::Kernel &kernel = manifest.kernels[launch->kernel];
        prepared.onCallingThread = kernel.flops + kernel.bytesMoved < kInlineWork;
        for (const package::BufferRef &arg : launch->args)
          prepared.args.push_back(address(arg));
      } else {
        const auto &copy = std::get<package::Copy>(step);
        prepared.source = address(copy.source);
        prepared.destination = address(copy.destination);
        prepared.bytes = copy.bytes;
      }
      steps.push_back(std::move(prepared));
    }
    return steps;
  }

  void run(const RunShape &shape, const sinter_tensor *inputs, sinter_tensor *outputs,
           void *stream) override {
    if (stream)
      fail(SINTER_ERROR_INVALID_ARGUMENT, "a CPU session runs on no stream: pass null");
    runHost(shape, inputs, outputs);
  }

  void runHost(const RunShape &shape, const sinter_tensor *inputs, sinter_tensor *outputs) override {
    const package::Plan &plan = artifact_->plans[shape.plan];
    copyInputs(shape, inputs);
    runSteps(plans_[shape.plan]);
    for (size_t i = 0; i < plan.outputs.size(); ++i) {
      const uint8_t *slot = arena_.base() + plan.outputs[i].arenaOffset;
      auto *data = static_cast<uint8_t *>(outputs[i].data);
      if (shape.padded && shape.outputDims[i] != plan.outputs[i].dims) {
        for (const CopyRun &copy : paddedCopyRuns(shape.outputDims[i], plan.outputs[i].dims,
                                                  dtypeSize(plan.outputs[i].dtype)))
          std::memcpy(data + copy.callerOffset, slot + copy.planOffset, copy.bytes);
      } else if (size_t bytes = signatureBytes(plan.outputs[i])) {
        std::memcpy(data, slot, bytes);
      }
    }
  }

  void runMemory(const RunShape &shape, const sinter_tensor *inputs, const int32_t *,
                 sinter_tensor *outputs, const int32_t *) override {
    runHost(shape, inputs, outputs); // the API refused device memory for a CPU session
  }

  void copy(void *destination, bool, const void *source, bool, size_t bytes) override {
    if (bytes)
      std::memcpy(destination, source, bytes);
  }

  const LoadedArtifact &artifact() const override { return *artifact_; }

  void stageBenchmarkInputs(const RunShape &shape, const sinter_tensor *hostInputs) override {
    stagedInputs_ = hostInputs;
    stagedShape_ = shape;
  }

  double timePlanRun() override {
    restoreStagedInputs();
    auto start = std::chrono::steady_clock::now();
    runSteps(plans_[stagedShape_.plan]);
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
        .count();
  }

  void timeSteps(double *stepMs) override {
    restoreStagedInputs();
    std::vector<PreparedStep> &steps = plans_[stagedShape_.plan];
    for (size_t i = 0; i < steps.size(); ++i) {
      auto start = std::chrono::steady_clock::now();
      runStep(steps[i]);
      stepMs[i] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                      .count();
    }
  }

private:
  void restoreStagedInputs() { copyInputs(stagedShape_, stagedInputs_); }

  /// The inputs into the plan's slots; a smaller input in a larger bucket gets zeros where it has
  /// no elements.
  void copyInputs(const RunShape &shape, const sinter_tensor *inputs) {
    const package::Plan &plan = artifact_->plans[shape.plan];
    for (size_t i = 0; i < plan.inputs.size(); ++i) {
      uint8_t *slot = arena_.base() + plan.inputs[i].arenaOffset;
      const auto *data = static_cast<const uint8_t *>(inputs[i].data);
      if (shape.padded && shape.inputDims[i] != plan.inputs[i].dims) {
        std::memset(slot, 0, signatureBytes(plan.inputs[i]));
        for (const CopyRun &copy : paddedCopyRuns(shape.inputDims[i], plan.inputs[i].dims,
                                                  dtypeSize(plan.inputs[i].dtype)))
          std::memcpy(slot + copy.planOffset, data + copy.callerOffset, copy.bytes);
      } else if (size_t bytes = signatureBytes(plan.inputs[i])) {
        std::memcpy(slot, data, bytes);
      }
    }
  }

  /// A plan, on the arena as it stands.
  void runSteps(std::vector<PreparedStep> &steps) {
    for (PreparedStep &step : steps)
      runStep(step);
  }

  void runStep(PreparedStep &step) {
    if (step.kernel && step.onCallingThread)
      step.kernel(step.args.data(), 0, step.extent);
    else if (step.kernel)
      pool_.parallelFor(step.extent, runKernelChunk, &step);
    else if (step.bytes && step.destination != step.source)
      std::memcpy(step.destination, step.source, step.bytes);
  }

  std::shared_ptr<const LoadedArtifact> artifact_;
  Arena arena_;
  ThreadPool pool_;
  std::vector<std::vector<PreparedStep>> plans_; ///< by plan index
  const sinter_tensor *stagedInputs_ = nullptr; ///< during sinter_session_benchmark only
  RunShape stagedShape_;
};

} // namespace

std::unique_ptr<sinter_session> createCpuSession(std::shared_ptr<const LoadedArtifact> artifact,
                                                 const sinter_session_options &options) {
  if (options.threads < 0 || options.threads > kMaxThreads)
    fail(SINTER_ERROR_INVALID_ARGUMENT, "threads is ", options.threads, "; use 0 (one per core) to ",
         kMaxThreads);
  int threads = options.threads == 0 ? ThreadPool::availableCores() : options.threads;
  return std::make_unique<CpuSession>(std::move(artifact), threads);
}

} // namespace sinter::rt
