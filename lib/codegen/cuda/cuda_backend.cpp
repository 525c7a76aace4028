// The CUDA C backend: kernel IR printed as CUDA C; kernels whose code is the same but for their
// names are one kernel; the distinct ones are dealt into modules of about equal size (one per 8
// kernels, at most 16), each a translation unit compiled by NVRTC to PTX once (for the oldest
// architecture, and for sm_90a where a wgmma body needs it) and by ptxas to SASS once per
// architecture, on the job pool (-j) and through the kernel cache. Each module gets one cubin per
// requested architecture plus its PTX, so it runs on each listed GPU generation and
// JIT-compiles on newer ones.
#include "sinter/codegen/cuda/cuda_backend.h"
#include "cuda_attention.h"
#include "cuda_contraction.h"
#include "cuda_kernel_choice.h"
#include "cuda_source.h"
#include "sinter/codegen/cuda/toolchain.h"

#include "sinter/support/error.h"
#include "sinter/support/job_pool.h"
#include "sinter/support/kernel_cache.h"

#include <algorithm>
#include <cctype>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <regex>

namespace sinter::codegen {
namespace {

namespace fs = std::filesystem;

constexpr int kBlockSize = 256;
constexpr int64_t kMaxBlocks = int64_t(1) << 20;

/// "sm_90" -> 90. UserError for anything else.
int archNumber(const std::string &arch) {
  static const std::regex pattern("sm_([0-9]{2,3})a?");
  std::smatch match;
  if (!std::regex_match(arch, match, pattern))
    userError("unknown CUDA architecture '", arch, "'; expected names like sm_80, sm_90");
  int number = std::stoi(match[1]);
  if (number < 70)
    userError("CUDA architecture ", arch, " is too old; sinter targets sm_70 and newer");
  return number;
}

void writeText(const fs::path &path, const std::string &text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

class CudaCBackend final : public Backend {
public:
  explicit CudaCBackend(const TargetOptions &options) : options_(options) {
    if (options_.cuda.archs.empty())
      userError("--arch lists no CUDA architecture");
    for (const std::string &arch : options_.cuda.archs)
      archNumber(arch);
    std::sort(options_.cuda.archs.begin(), options_.cuda.archs.end(),
              [](const std::string &a, const std::string &b) { return archNumber(a) < archNumber(b); });
    options_.cuda.archs.erase(std::unique(options_.cuda.archs.begin(), options_.cuda.archs.end()),
                              options_.cuda.archs.end());
    for (const std::string &arch : options_.cuda.archs)
      archNumbers_.push_back(archNumber(arch));
  }

  std::string name() const override { return "CUDA C (NVRTC, ptxas)"; }

  /// The fused attention kernel multiplies 16-bit operands with mma.sync (sm_80 and newer);
  /// float32 attention keeps its products on the tf32 tensor-core kernels (docs/attention.md).
  BackendCapabilities capabilities() const override {
    BackendCapabilities capabilities;
    capabilities.fusedAttention16Bit = true;
    capabilities.describesFusedAttention = archNumber(options_.cuda.archs.front()) >= 80;
    return capabilities;
  }

  KernelNeeds needs(const LoweredGroup &group) const override {
    const cuda::KernelChoice &choice = choiceFor(group);
    KernelNeeds needs;
    if (choice.form == cuda::KernelForm::TensorCore)
      needs.workspaceBytes = cuda::mmaWorkspaceBytes(group.contraction->spec, choice.mmaTile, choice.operands,
                                                     choice.mmaOptions);
    return needs;
  }

  package::Kernel addKernel(const LoweredGroup &group, LaunchShape &launch) override {
    const Kernel &kernel = group.kernel;
    // Which kernel is cuda_kernel_choice.cpp's (made once, when needs() asked); each form has
    // its printer.
    const cuda::KernelChoice choice = choiceFor(group);
    std::string source;
    switch (choice.form) {
    case cuda::KernelForm::FusedAttention:
      source = cuda::printFusedAttention(*group.attention, choice.attentionOperands, launch);
      break;
    case cuda::KernelForm::TensorCore:
      source = cuda::printMmaContraction(*group.contraction, choice.mmaTile, choice.operands, launch,
                                         choice.mmaOptions);
      break;
    case cuda::KernelForm::Tiled:
      source = cuda::printTiledContraction(*group.contraction, choice.tile, launch);
      break;
    case cuda::KernelForm::Window:
      source = cuda::printWindowKernel(group, *choice.window, launch);
      break;
    case cuda::KernelForm::Generic: {
      source = cuda::printCudaKernel(kernel, kBlockSize);
      int64_t blocks = std::clamp<int64_t>((cuda::threadsNeeded(kernel) + kBlockSize - 1) / kBlockSize,
                                           1, kMaxBlocks);
      launch.grid[0] = uint32_t(blocks);
      launch.block[0] = kBlockSize;
      launch.parallelExtent = kernel.parallelExtent;
      break;
    }
    }
    return finishKernel(group, kernel, std::move(source), cuda::generatorName(choice));
  }

  /// Keeps the kernel's source for its module (and writes it with --emit-source).
  package::Kernel finishKernel(const LoweredGroup &group, const Kernel &kernel, std::string source,
                               const std::string &generator) {
    if (!options_.emitSourceDirectory.empty()) {
      fs::create_directories(options_.emitSourceDirectory);
      writeText(fs::path(options_.emitSourceDirectory) / (kernel.name + ".cu"), source);
      writeText(fs::path(options_.emitSourceDirectory) / (kernel.name + ".kir"), printKernel(kernel));
    }
    package::Kernel entry = describeKernel(group, kernel, generator);
    // One kernel per distinct body: a kernel whose code equals an earlier one's but for its
    // name and the comment naming its buffers (a model's repeated layers), with the same ops,
    // generator, flops and bytes, is that kernel: it takes the earlier one's entry point, and
    // the compile driver gives both launches one manifest entry.
    std::string key = distinctKernelKey(source, kernel.name, entry);
    auto [found, inserted] = distinctKernels_.emplace(std::move(key), sources_.size());
    if (!inserted) {
      entry.name = sourceNames_[found->second];
      return entry;
    }
    sources_.push_back(std::move(source));
    sourceNames_.push_back(entry.name);
    sourceGenerators_.push_back(entry.generator);
    return entry;
  }

  std::vector<std::string> finish(package::Manifest &manifest,
                                  const std::string &workDirectory) override {
    std::map<std::string, size_t> sourceOf; // entry point -> index into sources_
    for (size_t i = 0; i < sourceNames_.size(); ++i)
      sourceOf.emplace(sourceNames_[i], i);
    for (const package::Kernel &kernel : manifest.kernels)
      SINTER_ASSERT(sourceOf.count(kernel.name), "the CUDA C backend has no source for kernel '",
                    kernel.name, "'");
    // The distinct kernels are dealt into modules of about equal source size, each a translation
    // unit: NVRTC and ptxas are single-threaded, so one unit per architecture kept four cores
    // busy while ResNet-50 took 27-48 s on a 16-core host. The split depends on the sources
    // alone, so the artifact does not depend on the host or on -j.
    std::vector<std::vector<size_t>> modules = splitIntoModules();
    const std::vector<std::string> &archs = options_.cuda.archs;
    const size_t archCount = archs.size();
    std::vector<std::string> units(modules.size());
    // A module with a wgmma kernel (its generator says so) builds its sm_90 code for sm_90a.
    std::vector<bool> wgmma(modules.size(), false);
    for (size_t m = 0; m < modules.size(); ++m) {
      units[m] = cuda::cudaPrelude();
      for (size_t kernel : modules[m]) {
        units[m] += "\n" + sources_[kernel];
        wgmma[m] = wgmma[m] || sourceGenerators_[kernel].find(" wgmma") != std::string::npos;
      }
    }
    const bool hasSm90 = std::find(archNumbers_.begin(), archNumbers_.end(), 90) != archNumbers_.end();
    // An absolute name: NVRTC prefixes a relative one with the working directory in the PTX's
    // line info (.file), which made the artifact depend on where sinter ran.
    auto programName = [](size_t m) { return "/sinter/module_" + std::to_string(m) + ".cu"; };
    // NVRTC once per module, for the oldest architecture: the generated CUDA C asks for no
    // architecture but sm_90a's wgmma (behind __CUDA_ARCH_FEAT_SM90_ALL), and NVRTC's PTX for
    // compute_80, _86, _89 and _90 differs in its .target line alone, from which ptxas makes the
    // same SASS (docs/architectures.md). A module with a wgmma kernel gets a second run for
    // compute_90a, which its sm_90a cubin is assembled from.
    const std::string oldest = "compute_" + archs.front().substr(3);
    std::vector<std::string> ptx(modules.size()), ptx90a(modules.size());
    std::vector<std::pair<size_t, bool>> nvrtcJobs; // (module, for sm_90a)
    for (size_t m = 0; m < modules.size(); ++m) {
      nvrtcJobs.push_back({m, false});
      if (wgmma[m] && hasSm90)
        nvrtcJobs.push_back({m, true});
    }
    const KernelCache *cache = options_.build.cache.get();
    // Line info only with --emit-source, which writes the module sources it refers to: without
    // them a profiler has nothing to show it against, and it cost 5% of a cold compile's CPU.
    const bool lineInfo = !options_.emitSourceDirectory.empty();
    // Then ptxas once per module and architecture. Both tools share one pool, NVRTC's runs first:
    // a module's cubins start as soon as its PTX is there, not once every module's is (that
    // barrier idled a core for part of each cold compile). A ptxas job waits only for an NVRTC
    // job handed out before it, so it cannot wait forever; -j 1 runs them all in order.
    std::vector<std::vector<uint8_t>> cubins(modules.size() * archCount);
    // Each NVRTC run's state, by module and (second) whether it is the sm_90a one.
    enum class Ptx : char { Pending, Ready, Failed };
    std::vector<Ptx> ptxState(2 * modules.size(), Ptx::Pending);
    std::mutex readyLock;
    std::condition_variable readyChanged;
    auto settle = [&](size_t run, Ptx state) {
      std::lock_guard<std::mutex> guard(readyLock);
      ptxState[run] = state;
      readyChanged.notify_all();
    };
    runReportedJobs("NVRTC and ptxas", "runs", nvrtcJobs.size() + cubins.size(), [&](size_t job) {
      if (job < nvrtcJobs.size()) {
        auto [m, sm90a] = nvrtcJobs[job];
        try {
          (sm90a ? ptx90a[m] : ptx[m]) = cuda::compileToPtx(units[m], sm90a ? "compute_90a" : oldest, programName(m), cache, lineInfo);
        } catch (...) {
          settle(2 * m + sm90a, Ptx::Failed);
          throw;
        }
        settle(2 * m + sm90a, Ptx::Ready);
        return;
      }
      const size_t cubin = job - nvrtcJobs.size();
      const size_t m = cubin / archCount;
      const std::string &arch = archs[cubin % archCount];
      const bool sm90a = wgmma[m] && archNumber(arch) == 90;
      {
        std::unique_lock<std::mutex> guard(readyLock);
        readyChanged.wait(guard, [&] { return ptxState[2 * m + sm90a] != Ptx::Pending; });
        if (ptxState[2 * m + sm90a] == Ptx::Failed)
          return; // the NVRTC job's own error is the one reported
      }
      fs::path folder = fs::path(workDirectory) / ("module" + std::to_string(m)) / arch;
      fs::create_directories(folder);
      cubins[cubin] = cuda::assemblePtx(sm90a ? ptx90a[m] : ptx[m], arch + (sm90a ? "a" : ""), folder.string(), cache);
    });

    const uint32_t base = uint32_t(manifest.cudaModules.size());
    std::vector<uint32_t> moduleOfSource(sources_.size());
    for (size_t m = 0; m < modules.size(); ++m) {
      package::CudaModule module;
      for (size_t a = 0; a < archCount; ++a)
        module.binaries.push_back({archs[a], false, cubins[m * archCount + a]});
      module.binaries.push_back({oldest, true, std::vector<uint8_t>(ptx[m].begin(), ptx[m].end())});
      manifest.cudaModules.push_back(std::move(module));
      for (size_t kernel : modules[m])
        moduleOfSource[kernel] = base + uint32_t(m);
      if (!options_.emitSourceDirectory.empty()) {
        std::string stem = modules.size() == 1 ? "module" : "module" + std::to_string(m);
        fs::path folder(options_.emitSourceDirectory);
        writeText(folder / (stem + ".cu"), units[m]);
        writeText(folder / (stem + "." + oldest + ".ptx"), ptx[m]);
        if (!ptx90a[m].empty())
          writeText(folder / (stem + ".compute_90a.ptx"), ptx90a[m]);
        for (size_t a = 0; a < archCount; ++a)
          writeText(folder / (stem + "." + archs[a] + ".cubin"),
                    std::string(cubins[m * archCount + a].begin(), cubins[m * archCount + a].end()));
      }
    }
    for (package::Kernel &kernel : manifest.kernels)
      kernel.cudaModule = moduleOfSource[sourceOf.at(kernel.name)];
    return {};
  }

private:
  /// The kernels (indices into sources_) of each module: one module per kKernelsPerModule
  /// kernels (at most kMaxModules), dealt largest source first to the module with the least
  /// source so far, and each module's kernels in their original order.
  std::vector<std::vector<size_t>> splitIntoModules() const {
    const size_t count = std::min(kMaxModules, std::max<size_t>(1, (sources_.size() + kKernelsPerModule - 1) / kKernelsPerModule));
    std::vector<size_t> order(sources_.size());
    for (size_t i = 0; i < order.size(); ++i)
      order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return sources_[a].size() > sources_[b].size(); });
    std::vector<std::vector<size_t>> modules(count);
    std::vector<size_t> sizes(count, 0);
    for (size_t kernel : order) {
      size_t lightest = size_t(std::min_element(sizes.begin(), sizes.end()) - sizes.begin());
      modules[lightest].push_back(kernel);
      sizes[lightest] += sources_[kernel].size();
    }
    // No module is left empty: there are at most ceil(kernels / 16) of them (and one, empty,
    // when there are no kernels: the prelude alone, as before the split).
    for (std::vector<size_t> &module : modules)
      std::sort(module.begin(), module.end());
    return modules;
  }

  /// The kernel choice for a group, made the first time needs() or addKernel() asks for it, so
  /// the workspace planned for a kernel is the one its printer uses. By kernel name, which is
  /// unique in a compile (a bucketed artifact's plans add their suffix).
  const cuda::KernelChoice &choiceFor(const LoweredGroup &group) const {
    auto [found, added] = choices_.try_emplace(group.kernel.name);
    if (added)
      found->second = cuda::chooseKernel(group, options_.cuda, archNumbers_);
    return found->second;
  }

  /// runJobs on the pool of -j workers, reporting each job done as progress of `phase`.
  void runReportedJobs(const char *phase, const char *unit, size_t count,
                       const std::function<void(size_t)> &job) const {
    sinter::runReportedJobs(options_.build.progress, phase, unit, count, options_.build.jobs, job);
  }

  // Eight kernels a module (BERT-base's eleven distinct kernels in two modules, ResNet-50's
  // thirty-one in four) keep two cores busy through NVRTC, whose runs are single-threaded, for
  // about 0.1 s of CUDA headers parsed again per extra module.
  static constexpr size_t kKernelsPerModule = 8, kMaxModules = 16;

  TargetOptions options_;
  mutable std::map<std::string, cuda::KernelChoice> choices_; ///< choiceFor's, by kernel name
  std::vector<int> archNumbers_; ///< options_.cuda.archs as numbers, oldest first
  /// The distinct kernels, in the order first added: source, entry point, generator.
  std::vector<std::string> sources_, sourceNames_, sourceGenerators_;
  /// distinctKernelKey -> index into sources_.
  std::map<std::string, size_t> distinctKernels_;
};

} // namespace

std::unique_ptr<Backend> createCudaBackend(const TargetOptions &options) {
  return std::make_unique<CudaCBackend>(options);
}

} // namespace sinter::codegen
