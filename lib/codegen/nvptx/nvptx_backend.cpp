// The NVPTX route, `--target cuda --gpu-codegen llvm`: kernel IR built as LLVM IR by the shared
// KernelEmitter, optimised at O3 and printed as PTX by LLVM's NVPTX backend (nvptx_emitter.h),
// then assembled by ptxas into SASS for each requested architecture, plus the PTX of the newest
// for JIT on newer GPUs: the same binaries, launch shape (256 threads, a grid-stride loop) and
// artifact format as the CUDA C backend.
//
// Groups the route does not lower yet fall back to the CUDA C backend, group by group:
//  * contractions and convolutions (fusion class Gemm; Conv, ConvTranspose) and opaque ops
//    (TopK, NonZero, Attention, ...): the CUDA C backend owns the specialised (tiled) kernels;
//  * a kernel that needs a math function (exp, log, tanh, erf, pow, fmod, ...) when libdevice is
//    not found (findLibdevice).
// Each route compiles its kernels as one CUDA module, so the manifest has up to two; each kernel
// entry's generator says which route built it: "llvm-nvptx", or the CUDA C backend's "cuda-c"
// (or "cuda-c tiled").
#include "sinter/codegen/nvptx/nvptx_backend.h"
#include "sinter/codegen/cuda/cuda_backend.h"
#include "sinter/codegen/cuda/toolchain.h"
#include "nvptx_emitter.h"
#include "sinter/codegen/llvm/target_machine.h"

#include "sinter/support/error.h"

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <future>
#include <set>

namespace sinter::codegen {
namespace {

namespace fs = std::filesystem;

constexpr int kBlockSize = 256; // as the CUDA C backend
constexpr int64_t kMaxBlocks = int64_t(1) << 20;

void writeText(const fs::path &path, const std::string &text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

/// "sm_90" -> 90, "sm_90a" -> 90 (the CUDA C backend has already refused other names).
/// The PTX of "sm_90a" is labelled "compute_90a", as the CUDA C backend labels it: it only runs
/// there.
int archNumber(const std::string &arch) {
  return std::atoi(arch.c_str() + 3);
}

/// The entry `.entry NAME(...) { ... }` of one kernel in LLVM's PTX (with its `.visible` line
/// start); empty when not found.
std::string kernelPtx(const std::string &ptx, const std::string &name) {
  size_t entry = ptx.find(".entry " + name + "(");
  if (entry == std::string::npos)
    return "";
  size_t begin = ptx.rfind('\n', entry);
  begin = begin == std::string::npos ? 0 : begin + 1;
  size_t end = ptx.find("\n}\n", entry);
  return ptx.substr(begin, end == std::string::npos ? std::string::npos : end + 3 - begin);
}

/// The kernels the NVPTX route takes, compiled together as one CUDA module.
class NvptxRoute {
public:
  explicit NvptxRoute(const TargetOptions &options)
      : options_(options), libdevice_(llvmgen::findLibdevice()) {
    std::sort(options_.cuda.archs.begin(), options_.cuda.archs.end(),
              [](const std::string &a, const std::string &b) {
                return archNumber(a) != archNumber(b) ? archNumber(a) < archNumber(b) : a < b;
              });
    options_.cuda.archs.erase(std::unique(options_.cuda.archs.begin(), options_.cuda.archs.end()),
                              options_.cuda.archs.end());
    for (const std::string &arch : options_.cuda.archs)
      llvmgen::createNvptxTargetMachine(arch); // UserError now for an arch LLVM does not know
  }

  /// Why this group goes to CUDA C instead; empty when the NVPTX route lowers it.
  std::string fallbackReason(const LoweredGroup &group) const {
    for (OpKind op : group.ops) {
      FusionClass fusion = opInfo(op).fusion;
      bool convolution = op == OpKind::Conv || op == OpKind::ConvTranspose;
      if (fusion == FusionClass::Gemm || convolution || fusion == FusionClass::Opaque)
        return std::string(opName(op)) + " (" + std::string(fusionClassName(fusion)) +
               "): not lowered by the NVPTX route yet";
    }
    const Kernel &kernel = group.kernel;
    if (libdevice_.empty() && llvmgen::needsLibdevice(kernel))
      return "needs math functions from libdevice, which was not found (set SINTER_LIBDEVICE)";
    return "";
  }

  void add(const Kernel &kernel) { kernels_.push_back(kernel); }
  size_t size() const { return kernels_.size(); }

  package::CudaModule compile(const std::string &workDirectory) const {
    std::vector<const Kernel *> kernels;
    for (const Kernel &kernel : kernels_)
      kernels.push_back(&kernel);
    const std::string &newest = options_.cuda.archs.back();
    bool emit = !options_.emitSourceDirectory.empty();
    struct Result {
      llvmgen::NvptxModule module;
      std::vector<uint8_t> cubin;
    };
    // One LLVM context, O3 and ptxas run per architecture, in parallel.
    std::vector<std::future<Result>> jobs;
    for (const std::string &arch : options_.cuda.archs) {
      jobs.push_back(std::async(std::launch::async, [&, arch] {
        llvmgen::NvptxModuleOptions moduleOptions{arch, kBlockSize, libdevice_,
                                                  emit && arch == newest};
        Result result{llvmgen::compileNvptxModule(kernels, moduleOptions), {}};
        fs::path folder = fs::path(workDirectory) / arch;
        fs::create_directories(folder);
        result.cubin = cuda::assemblePtx(result.module.ptx, arch, folder.string());
        return result;
      }));
    }
    std::vector<Result> results;
    for (auto &job : jobs)
      results.push_back(job.get());
    package::CudaModule module;
    for (size_t i = 0; i < results.size(); ++i)
      module.binaries.push_back({options_.cuda.archs[i], false, results[i].cubin});
    const std::string &ptx = results.back().module.ptx;
    module.binaries.push_back({"compute_" + newest.substr(3), true,
                               std::vector<uint8_t>(ptx.begin(), ptx.end())});
    if (emit)
      writeSources(results.back().module, [&] {
        std::vector<std::pair<std::string, std::string>> modules;
        for (size_t i = 0; i < results.size(); ++i)
          modules.emplace_back(options_.cuda.archs[i], results[i].module.ptx);
        return modules;
      }());
    return module;
  }

private:
  /// --emit-source: per kernel its optimised LLVM IR and PTX (for the newest architecture), and
  /// the whole module before and after O3 and as PTX for every architecture.
  void writeSources(const llvmgen::NvptxModule &newest,
                    const std::vector<std::pair<std::string, std::string>> &ptxByArch) const {
    fs::path folder = options_.emitSourceDirectory;
    fs::create_directories(folder);
    for (const Kernel &kernel : kernels_) {
      auto ir = newest.kernelIr.find(kernel.name);
      if (ir != newest.kernelIr.end())
        writeText(folder / (kernel.name + ".ll"), ir->second);
      writeText(folder / (kernel.name + ".ptx"), kernelPtx(newest.ptx, kernel.name));
    }
    writeText(folder / "nvptx_module.unoptimized.ll", newest.unoptimizedIr);
    writeText(folder / "nvptx_module.ll", newest.optimizedIr);
    for (const auto &[arch, ptx] : ptxByArch)
      writeText(folder / ("nvptx_module." + arch + ".ptx"), ptx);
  }

  TargetOptions options_;
  std::string libdevice_;
  std::vector<Kernel> kernels_;
};

/// `--gpu-codegen llvm`: each group to the NVPTX route when it lowers it, else to CUDA C.
class LlvmCudaBackend final : public Backend {
public:
  explicit LlvmCudaBackend(const TargetOptions &options)
      : options_(options), cudaC_(createCudaBackend(options)), nvptx_(options) {}

  std::string name() const override {
    return "LLVM NVPTX (" + std::to_string(nvptx_.size()) + " kernels) and CUDA C (" +
           std::to_string(cudaCKernels_) + " kernels)";
  }

  /// Groups it does not lower go to CUDA C, so it can do what the CUDA C backend can.
  BackendCapabilities capabilities() const override { return cudaC_->capabilities(); }

  package::Kernel addKernel(const LoweredGroup &group, LaunchShape &launch) override {
    const Kernel &kernel = group.kernel;
    std::string reason = nvptx_.fallbackReason(group);
    if (reason.empty())
      viaNvptx_.insert(kernel.name);
    if (!options_.emitSourceDirectory.empty())
      routes_ += kernel.name + ": " + (reason.empty() ? "llvm-nvptx" : "cuda-c, " + reason) + "\n";
    if (!reason.empty()) {
      ++cudaCKernels_;
      return cudaC_->addKernel(group, launch);
    }
    nvptx_.add(kernel);
    int64_t blocks = std::clamp<int64_t>((kernel.parallelExtent + kBlockSize - 1) / kBlockSize,
                                         1, kMaxBlocks);
    launch.grid[0] = uint32_t(blocks);
    launch.block[0] = kBlockSize;
    launch.parallelExtent = kernel.parallelExtent;
    if (!options_.emitSourceDirectory.empty()) {
      fs::create_directories(options_.emitSourceDirectory);
      writeText(fs::path(options_.emitSourceDirectory) / (kernel.name + ".kir"),
                printKernel(kernel));
    }
    return describeKernel(group, kernel, "llvm-nvptx");
  }

  std::vector<std::string> finish(package::Manifest &manifest,
                                  const std::string &workDirectory) override {
    auto isNvptx = [&](const package::Kernel &kernel) { return viaNvptx_.count(kernel.name) != 0; };
    if (!options_.emitSourceDirectory.empty()) {
      fs::create_directories(options_.emitSourceDirectory);
      writeText(fs::path(options_.emitSourceDirectory) / "routes.txt", routes_);
    }
    // The CUDA C backend sees a manifest of its own kernels only; its modules are appended after
    // the NVPTX module and its kernels' module indices shifted to match.
    std::vector<size_t> cudaCIndices;
    package::Manifest cudaCManifest;
    cudaCManifest.target = manifest.target;
    cudaCManifest.cudaArchs = manifest.cudaArchs;
    for (size_t i = 0; i < manifest.kernels.size(); ++i)
      if (!isNvptx(manifest.kernels[i])) {
        cudaCIndices.push_back(i);
        cudaCManifest.kernels.push_back(manifest.kernels[i]);
      }
    std::future<std::vector<std::string>> cudaCJob;
    if (!cudaCIndices.empty())
      cudaCJob = std::async(std::launch::async, [&] {
        fs::path folder = fs::path(workDirectory) / "cuda-c";
        fs::create_directories(folder);
        return cudaC_->finish(cudaCManifest, folder.string());
      });
    std::vector<std::string> objects;
    std::exception_ptr failure;
    try {
      if (nvptx_.size() != 0) {
        fs::path folder = fs::path(workDirectory) / "nvptx";
        fs::create_directories(folder);
        uint32_t index = uint32_t(manifest.cudaModules.size());
        manifest.cudaModules.push_back(nvptx_.compile(folder.string()));
        for (package::Kernel &kernel : manifest.kernels)
          if (isNvptx(kernel))
            kernel.cudaModule = index;
      }
    } catch (...) {
      failure = std::current_exception();
    }
    if (cudaCJob.valid()) {
      objects = cudaCJob.get(); // waits even when the NVPTX side failed
      if (failure)
        std::rethrow_exception(failure);
      uint32_t base = uint32_t(manifest.cudaModules.size());
      for (package::CudaModule &module : cudaCManifest.cudaModules)
        manifest.cudaModules.push_back(std::move(module));
      for (size_t j = 0; j < cudaCIndices.size(); ++j)
        manifest.kernels[cudaCIndices[j]].cudaModule = base + cudaCManifest.kernels[j].cudaModule;
    }
    if (failure)
      std::rethrow_exception(failure);
    return objects;
  }

private:
  TargetOptions options_;
  std::unique_ptr<Backend> cudaC_;
  NvptxRoute nvptx_;
  /// The kernels added that take the NVPTX route, by name (the CUDA C fallback's kernels may
  /// share an entry: identical bodies are one kernel).
  std::set<std::string> viaNvptx_;
  size_t cudaCKernels_ = 0;
  std::string routes_; ///< for --emit-source: each kernel's route and why
};

} // namespace

std::unique_ptr<Backend> createNvptxBackend(const TargetOptions &options) {
  return std::make_unique<LlvmCudaBackend>(options);
}

} // namespace sinter::codegen
