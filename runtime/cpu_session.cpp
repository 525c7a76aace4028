// The CPU session: an arena (anonymous memory, so it starts zeroed and costs nothing until
// touched), the weights used in place from the mapped model.so, a thread pool, and the plan with
// every argument already resolved to an address. A run copies the inputs into the arena, runs the
// steps in order (a launch calls the kernel on disjoint chunks of [0, parallelExtent) across the
// pool; a copy is a memcpy) and copies the outputs out.
#include "session.h"
#include "status.h"
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
      : artifact_(std::move(artifact)), arena_(artifact_->manifest().arenaBytes), pool_(threads) {
    const package::Manifest &manifest = artifact_->manifest();
    auto address = [&](const package::BufferRef &ref) -> uint8_t * {
      uint8_t *base = ref.region == package::Region::Arena
                          ? arena_.base()
                          : const_cast<uint8_t *>(artifact_->weights);
      return base + ref.offset;
    };
    for (const package::Step &step : manifest.steps) {
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
      steps_.push_back(std::move(prepared));
    }
    artifact_->devices.sessionStarted(0, arena_.bytes());
  }
  ~CpuSession() override { artifact_->devices.sessionEnded(0, arena_.bytes()); }

  void run(const sinter_tensor *inputs, sinter_tensor *outputs, void *stream) override {
    if (stream)
      fail(SINTER_ERROR_INVALID_ARGUMENT, "a CPU session runs on no stream: pass null");
    runHost(inputs, outputs);
  }

  void runHost(const sinter_tensor *inputs, sinter_tensor *outputs) override {
    const package::Manifest &manifest = artifact_->manifest();
    for (size_t i = 0; i < manifest.inputs.size(); ++i)
      if (size_t bytes = signatureBytes(manifest.inputs[i]))
        std::memcpy(arena_.base() + manifest.inputs[i].arenaOffset, inputs[i].data, bytes);
    runSteps();
    for (size_t i = 0; i < manifest.outputs.size(); ++i)
      if (size_t bytes = signatureBytes(manifest.outputs[i]))
        std::memcpy(outputs[i].data, arena_.base() + manifest.outputs[i].arenaOffset, bytes);
  }

  const LoadedArtifact &artifact() const override { return *artifact_; }

  void stageBenchmarkInputs(const sinter_tensor *hostInputs) override {
    stagedInputs_ = hostInputs;
  }

  double timePlanRun() override {
    restoreStagedInputs();
    auto start = std::chrono::steady_clock::now();
    runSteps();
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
        .count();
  }

  void timeSteps(double *stepMs) override {
    restoreStagedInputs();
    for (size_t i = 0; i < steps_.size(); ++i) {
      auto start = std::chrono::steady_clock::now();
      runStep(steps_[i]);
      stepMs[i] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                      .count();
    }
  }

private:
  void restoreStagedInputs() {
    const package::Manifest &manifest = artifact_->manifest();
    for (size_t i = 0; i < manifest.inputs.size(); ++i)
      if (size_t bytes = signatureBytes(manifest.inputs[i]))
        std::memcpy(arena_.base() + manifest.inputs[i].arenaOffset, stagedInputs_[i].data, bytes);
  }

  /// The plan, on the arena as it stands.
  void runSteps() {
    for (PreparedStep &step : steps_)
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
  std::vector<PreparedStep> steps_;
  const sinter_tensor *stagedInputs_ = nullptr; ///< during sinter_session_benchmark only
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
