// The CUDA C backend: kernel IR printed as CUDA C, every kernel of a model in one translation
// unit, compiled once per architecture by NVRTC to PTX and by ptxas to SASS. The artifact gets
// one cubin per requested architecture plus the PTX of the newest, so it runs on each listed GPU
// generation and JIT-compiles on newer ones.
#include "../backends.h"
#include "cuda_contraction.h"
#include "cuda_source.h"
#include "toolchain.h"

#include "sinter/support/error.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <future>
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
    if (options_.cudaArchs.empty())
      userError("--arch lists no CUDA architecture");
    for (const std::string &arch : options_.cudaArchs)
      archNumber(arch);
    std::sort(options_.cudaArchs.begin(), options_.cudaArchs.end(),
              [](const std::string &a, const std::string &b) { return archNumber(a) < archNumber(b); });
    options_.cudaArchs.erase(std::unique(options_.cudaArchs.begin(), options_.cudaArchs.end()),
                             options_.cudaArchs.end());
  }

  std::string name() const override { return "CUDA C (NVRTC, ptxas)"; }

  package::Kernel addKernel(const KernelGroup &group, const Kernel &kernel,
                            LaunchShape &launch) override {
    std::string source;
    std::string generator = "cuda-c";
    std::optional<Contraction> contraction = lowerContraction(group);
    std::optional<cuda::TileShape> tile;
    std::optional<cuda::MmaOperands> operands;
    if (contraction && worthTiling(contraction->spec)) {
      tile = cuda::chooseTile(contraction->spec);
      // mma.sync with f16/bf16/tf32 operands needs sm_80; the list is sorted, oldest first.
      if (archNumber(options_.cudaArchs.front()) >= 80)
        operands = cuda::mmaOperands(contraction->spec, options_.fp32Contractions);
    }
    std::optional<cuda::MmaTile> mmaTile;
    bool wgmma = false;
    if (operands && hasSm90() && options_.warpgroupMma && !options_.tensorCoreTile)
      if ((mmaTile = cuda::wgmmaBlockTile(contraction->spec, *operands)))
        wgmma = true;
    if (operands && !mmaTile)
      mmaTile = cuda::chooseMmaTile(contraction->spec, *operands, options_.tensorCoreTile);
    if (mmaTile && cuda::fitsGrid(contraction->spec, mmaTile->bm, mmaTile->bn)) {
      source = cuda::printMmaContraction(*contraction, *mmaTile, *operands, launch, wgmma, options_.rowWalkEpilogue);
      generator = std::string("cuda-c tensor-core ") + cuda::mmaOperandsName(*operands) + (wgmma ? " wgmma" : "");
      usesWgmma_ |= wgmma;
    } else if (tile && cuda::fitsGrid(contraction->spec, tile->bm, tile->bn)) {
      source = cuda::printTiledContraction(*contraction, *tile, launch);
      generator = "cuda-c tiled";
    } else {
      source = cuda::printCudaKernel(kernel, kBlockSize);
      int64_t blocks = std::clamp<int64_t>((cuda::threadsNeeded(kernel) + kBlockSize - 1) / kBlockSize,
                                           1, kMaxBlocks);
      launch.grid[0] = uint32_t(blocks);
      launch.block[0] = kBlockSize;
      launch.parallelExtent = kernel.parallelExtent;
    }
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
    std::string unit = cuda::cudaPrelude();
    for (const std::string &source : sources_)
      unit += "\n" + source;
    if (!options_.emitSourceDirectory.empty())
      writeText(fs::path(options_.emitSourceDirectory) / "module.cu", unit);

    // One NVRTC + ptxas run per architecture, in parallel.
    struct Result {
      std::string arch, ptx;
      std::vector<uint8_t> cubin;
    };
    std::vector<std::future<Result>> jobs;
    for (const std::string &arch : options_.cudaArchs) {
      jobs.push_back(std::async(std::launch::async, [&, arch] {
        Result result{arch, {}, {}};
        // wgmma exists on sm_90a only: that build takes the kernels' wgmma bodies. The PTX kept
        // for newer GPUs stays compute_90, with the mma.sync bodies.
        std::string feature = usesWgmma_ && archNumber(arch) == 90 ? "a" : "";
        std::string virtualArch = "compute_" + arch.substr(3);
        result.ptx = cuda::compileToPtx(unit, virtualArch + feature, "sinter_module.cu");
        fs::path folder = fs::path(workDirectory) / arch;
        fs::create_directories(folder);
        result.cubin = cuda::assemblePtx(result.ptx, arch + feature, folder.string());
        if (!feature.empty() && arch == options_.cudaArchs.back())
          result.ptx = cuda::compileToPtx(unit, virtualArch, "sinter_module.cu");
        return result;
      }));
    }
    package::CudaModule module;
    std::vector<Result> results;
    for (auto &job : jobs)
      results.push_back(job.get());
    for (const Result &result : results)
      module.binaries.push_back({result.arch, false, result.cubin});
    const Result &newest = results.back();
    module.binaries.push_back({"compute_" + newest.arch.substr(3), true,
                               std::vector<uint8_t>(newest.ptx.begin(), newest.ptx.end())});
    if (!options_.emitSourceDirectory.empty()) {
      for (const Result &result : results) {
        writeText(fs::path(options_.emitSourceDirectory) / ("module." + result.arch + ".ptx"), result.ptx);
        writeText(fs::path(options_.emitSourceDirectory) / ("module." + result.arch + ".cubin"),
                  std::string(result.cubin.begin(), result.cubin.end()));
      }
    }
    manifest.cudaModules.push_back(std::move(module));
    for (package::Kernel &kernel : manifest.kernels)
      kernel.cudaModule = 0;
    return {};
  }

private:
  bool hasSm90() const {
    return std::any_of(options_.cudaArchs.begin(), options_.cudaArchs.end(),
                       [](const std::string &arch) { return archNumber(arch) == 90; });
  }

  TargetOptions options_;
  bool usesWgmma_ = false; ///< some kernel has a wgmma body: sm_90 is built for sm_90a
  std::vector<std::string> sources_;
};

} // namespace

std::unique_ptr<Backend> createCudaBackend(const TargetOptions &options) {
  return std::make_unique<CudaCBackend>(options);
}

} // namespace sinter::codegen
