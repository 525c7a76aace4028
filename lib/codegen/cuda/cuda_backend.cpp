// The CUDA C backend: kernel IR printed as CUDA C, the model's kernels dealt into modules of
// about equal size (one per 16 kernels, at most 8), each a translation unit compiled once per
// architecture by NVRTC to PTX and by ptxas to SASS, all on a pool of the host's cores. Each
// module gets one cubin per requested architecture plus the PTX of the newest, so it runs on each
// listed GPU generation and JIT-compiles on newer ones.
#include "sinter/codegen/cuda/cuda_backend.h"
#include "cuda_attention.h"
#include "cuda_contraction.h"
#include "cuda_kernel_choice.h"
#include "cuda_source.h"
#include "sinter/codegen/cuda/toolchain.h"

#include "sinter/support/error.h"

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <regex>
#include <thread>

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
    const cuda::KernelChoice choice = cuda::chooseKernel(group, options_.cuda, archNumbers_);
    KernelNeeds needs;
    if (choice.form == cuda::KernelForm::TensorCore)
      needs.workspaceBytes = cuda::mmaWorkspaceBytes(group.contraction->spec, choice.mmaTile, choice.operands,
                                                     choice.mmaOptions);
    return needs;
  }

  package::Kernel addKernel(const LoweredGroup &group, LaunchShape &launch) override {
    const Kernel &kernel = group.kernel;
    // Which kernel is cuda_kernel_choice.cpp's; each form has its printer.
    const cuda::KernelChoice choice = cuda::chooseKernel(group, options_.cuda, archNumbers_);
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
    sources_.push_back(std::move(source));
    return describeKernel(group, kernel, generator);
  }

  std::vector<std::string> finish(package::Manifest &manifest,
                                  const std::string &workDirectory) override {
    SINTER_ASSERT(manifest.kernels.size() == sources_.size(), "the CUDA C backend's manifest has ",
                  manifest.kernels.size(), " kernels for ", sources_.size(), " sources");
    // The kernels are dealt into modules of about equal source size, each a translation unit
    // compiled once per architecture: NVRTC and ptxas are single-threaded, so one unit per
    // architecture kept four cores busy while ResNet-50 took 27-48 s on a 16-core host. The
    // split depends on the sources alone, so the artifact does not depend on the host.
    std::vector<std::vector<size_t>> modules = splitIntoModules();
    const size_t archCount = options_.cuda.archs.size();
    struct Result {
      std::string ptx;
      std::vector<uint8_t> cubin;
    };
    std::vector<Result> results(modules.size() * archCount);
    std::vector<std::string> units(modules.size());
    // A module with a wgmma kernel (its generator says so) builds its sm_90 code for sm_90a.
    std::vector<bool> wgmma(modules.size(), false);
    for (size_t m = 0; m < modules.size(); ++m) {
      units[m] = cuda::cudaPrelude();
      for (size_t kernel : modules[m]) {
        units[m] += "\n" + sources_[kernel];
        wgmma[m] = wgmma[m] || manifest.kernels[kernel].generator.find(" wgmma") != std::string::npos;
      }
    }
    auto compile = [&](size_t job) {
      const size_t m = job / archCount;
      const std::string &arch = options_.cuda.archs[job % archCount];
      Result &result = results[job];
      // wgmma exists on sm_90a only: that build takes the kernels' wgmma bodies. The PTX kept
      // for newer GPUs stays compute_90, with the mma.sync bodies.
      std::string feature = wgmma[m] && archNumber(arch) == 90 ? "a" : "";
      std::string virtualArch = "compute_" + arch.substr(3);
      // An absolute name: NVRTC prefixes a relative one with the working directory in the PTX's
      // line info (.file), which made the artifact depend on where sinter ran.
      std::string program = "/sinter/module_" + std::to_string(m) + ".cu";
      result.ptx = cuda::compileToPtx(units[m], virtualArch + feature, program);
      fs::path folder = fs::path(workDirectory) / ("module" + std::to_string(m)) / arch;
      fs::create_directories(folder);
      result.cubin = cuda::assemblePtx(result.ptx, arch + feature, folder.string());
      if (!feature.empty() && arch == options_.cuda.archs.back())
        result.ptx = cuda::compileToPtx(units[m], virtualArch, program);
    };
    runJobs(results.size(), compile);

    const uint32_t base = uint32_t(manifest.cudaModules.size());
    for (size_t m = 0; m < modules.size(); ++m) {
      package::CudaModule module;
      for (size_t a = 0; a < archCount; ++a)
        module.binaries.push_back({options_.cuda.archs[a], false, results[m * archCount + a].cubin});
      const std::string &newest = options_.cuda.archs.back();
      const std::string &ptx = results[m * archCount + archCount - 1].ptx;
      module.binaries.push_back({"compute_" + newest.substr(3), true, std::vector<uint8_t>(ptx.begin(), ptx.end())});
      manifest.cudaModules.push_back(std::move(module));
      for (size_t kernel : modules[m])
        manifest.kernels[kernel].cudaModule = base + uint32_t(m);
      if (!options_.emitSourceDirectory.empty()) {
        std::string stem = modules.size() == 1 ? "module" : "module" + std::to_string(m);
        writeText(fs::path(options_.emitSourceDirectory) / (stem + ".cu"), units[m]);
        for (size_t a = 0; a < archCount; ++a) {
          const Result &result = results[m * archCount + a];
          const std::string &arch = options_.cuda.archs[a];
          writeText(fs::path(options_.emitSourceDirectory) / (stem + "." + arch + ".ptx"), result.ptx);
          writeText(fs::path(options_.emitSourceDirectory) / (stem + "." + arch + ".cubin"),
                    std::string(result.cubin.begin(), result.cubin.end()));
        }
      }
    }
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

  /// Runs job(0) .. job(count - 1) on as many threads as the host has cores (NVRTC and ptxas
  /// hold hundreds of MB each, so not all at once), and rethrows the first failure.
  static void runJobs(size_t count, const std::function<void(size_t)> &job) {
    const size_t workers = std::max<size_t>(1, std::min<size_t>(count, std::thread::hardware_concurrency()));
    std::atomic<size_t> next{0};
    std::vector<std::exception_ptr> failures(count);
    std::vector<std::thread> threads;
    for (size_t w = 0; w < workers; ++w)
      threads.emplace_back([&] {
        for (size_t i = next++; i < count; i = next++) {
          try {
            job(i);
          } catch (...) {
            failures[i] = std::current_exception();
          }
        }
      });
    for (std::thread &thread : threads)
      thread.join();
    for (const std::exception_ptr &failure : failures)
      if (failure)
        std::rethrow_exception(failure);
  }

  static constexpr size_t kKernelsPerModule = 16, kMaxModules = 8;

  TargetOptions options_;
  std::vector<int> archNumbers_; ///< options_.cuda.archs as numbers, oldest first
  std::vector<std::string> sources_;
};

} // namespace

std::unique_ptr<Backend> createCudaBackend(const TargetOptions &options) {
  return std::make_unique<CudaCBackend>(options);
}

} // namespace sinter::codegen
