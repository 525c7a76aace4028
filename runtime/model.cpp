// sinter_model_load's work: check the file before anything maps it (a regular file, its ELF
// layout against its size, its whole-file digest), then open model.so with dlopen (RTLD_LOCAL,
// so two models never see each other's kernels), fetch the manifest through `sinter_artifact`,
// parse and validate it, check the host can run it, and resolve the CPU kernels once.
#include "model.h"

#include "cpu_features.h"
#include "sinter/package/file_digest.h"
#include "status.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace sinter::rt {
namespace {

using ArtifactFunction = const void *(*)(uint64_t *size);

/// An open file descriptor, closed on destruction.
class Descriptor {
public:
  explicit Descriptor(int value) : value_(value) {}
  ~Descriptor() {
    if (value_ >= 0)
      close(value_);
  }
  Descriptor(const Descriptor &) = delete;
  Descriptor &operator=(const Descriptor &) = delete;
  int get() const { return value_; }

private:
  int value_;
};

const char *fileKind(mode_t mode) {
  if (S_ISDIR(mode))
    return "a folder";
  if (S_ISFIFO(mode))
    return "a FIFO";
  if (S_ISCHR(mode) || S_ISBLK(mode))
    return "a device";
  if (S_ISSOCK(mode))
    return "a socket";
  return "not a regular file";
}

/// Everything before dlopen: the path names a regular file (checked with stat before opening, so
/// a FIFO or a device is never opened; and again with fstat on the descriptor, which never
/// blocks: O_NONBLOCK), whose ELF layout fits its size and whose whole-file digest matches
/// (file_digest.h). Fails with IO when it cannot be opened, INVALID_ARTIFACT naming the problem.
void verifyFile(const std::string &path) {
  struct stat status {};
  if (stat(path.c_str(), &status) != 0)
    fail(SINTER_ERROR_IO, "cannot open '", path, "': ", std::strerror(errno));
  if (!S_ISREG(status.st_mode))
    fail(SINTER_ERROR_IO, "cannot load '", path, "': it is ", fileKind(status.st_mode));
  Descriptor descriptor(open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (descriptor.get() < 0)
    fail(SINTER_ERROR_IO, "cannot open '", path, "': ", std::strerror(errno));
  if (fstat(descriptor.get(), &status) != 0 || !S_ISREG(status.st_mode))
    fail(SINTER_ERROR_IO, "cannot load '", path, "': it is ", fileKind(status.st_mode));
  std::string problem =
      package::findArtifactFileProblem(descriptor.get(), static_cast<uint64_t>(status.st_size));
  if (!problem.empty())
    fail(SINTER_ERROR_INVALID_ARTIFACT, "'", path, "' is not a valid sinter artifact: ", problem);
}

void resolveCpuKernels(LoadedArtifact &artifact) {
  const package::Manifest &manifest = artifact.manifest();
  artifact.cpuLevel = chooseCpuLevel(manifest.cpuLevels, artifact.path);
  for (const package::Kernel &kernel : manifest.kernels) {
    std::string name = package::cpuKernelSymbol(kernel.name, artifact.cpuLevel, manifest.cpuLevels.size());
    void *symbol = dlsym(artifact.library, name.c_str());
    if (!symbol)
      fail(SINTER_ERROR_INVALID_ARTIFACT, "'", artifact.path, "' has no function for kernel '",
           kernel.name, "' at ", artifact.cpuLevel);
    artifact.cpuKernels.push_back(reinterpret_cast<CpuKernelFunction>(symbol));
  }
}

} // namespace

LoadedArtifact::~LoadedArtifact() {
  if (library)
    dlclose(library);
}

std::shared_ptr<const LoadedArtifact> loadArtifact(const std::string &path) {
  verifyFile(path);
  auto artifact = std::make_shared<LoadedArtifact>();
  artifact->path = path;
  // A name without a slash would make dlopen search the library path instead of opening it.
  std::string openPath = path.find('/') == std::string::npos ? "./" + path : path;
  artifact->library = dlopen(openPath.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!artifact->library) {
    const char *message = dlerror();
    fail(SINTER_ERROR_INVALID_ARTIFACT, "cannot load '", path,
         "' as a shared object: ", message ? message : "unknown dlopen error");
  }
  auto accessor = reinterpret_cast<ArtifactFunction>(dlsym(artifact->library, "sinter_artifact"));
  if (!accessor)
    fail(SINTER_ERROR_INVALID_ARTIFACT, "'", path,
         "' is not a sinter artifact: it has no sinter_artifact symbol");
  uint64_t size = 0;
  const void *bytes = accessor(&size);
  if (!bytes || size == 0)
    fail(SINTER_ERROR_INVALID_ARTIFACT, "'", path, "' returned an empty manifest");

  try {
    // The whole-file digest covered the weights already; the metadata hash is still checked.
    artifact->view = package::parseArtifactView(
        std::span<const uint8_t>(static_cast<const uint8_t *>(bytes), size),
        /*verifyWeights=*/false);
  } catch (const UserError &error) {
    fail(SINTER_ERROR_INVALID_ARTIFACT, "'", path, "': ", error.what());
  }

  const std::span<const uint8_t> &weights = artifact->view.weights;
  artifact->weights = weights.data();
  if (reinterpret_cast<uintptr_t>(weights.data()) % package::kWeightAlignment != 0) {
    // Not made by our writer (it page-aligns the blob); keep going with an aligned copy.
    artifact->alignedCopy.resize(weights.size() + package::kWeightAlignment);
    uintptr_t base = reinterpret_cast<uintptr_t>(artifact->alignedCopy.data());
    uintptr_t aligned = (base + package::kWeightAlignment - 1) / package::kWeightAlignment *
                        package::kWeightAlignment;
    artifact->weights = reinterpret_cast<const uint8_t *>(aligned);
    std::copy(weights.begin(), weights.end(), reinterpret_cast<uint8_t *>(aligned));
  }
  const package::Manifest &manifest = artifact->manifest();
  artifact->plans.push_back({manifest.inputs, manifest.outputs, manifest.arenaBytes,
                             manifest.activationBytes, manifest.steps});
  artifact->plans.insert(artifact->plans.end(), manifest.additionalPlans.begin(),
                         manifest.additionalPlans.end());
  if (manifest.target == package::Target::Cpu)
    resolveCpuKernels(*artifact);
  return artifact;
}

uint64_t LoadedArtifact::largestArenaBytes() const {
  uint64_t largest = 0;
  for (const package::Plan &plan : plans)
    largest = std::max(largest, plan.arenaBytes);
  return largest;
}

void describeTensor(const package::TensorSignature &tensor, sinter_tensor_info *info) {
  *info = sinter_tensor_info{};
  info->name = tensor.name.c_str();
  info->dtype = static_cast<sinter_dtype>(dtypeToOnnx(tensor.dtype));
  info->rank = static_cast<int32_t>(tensor.dims.size());
  for (size_t i = 0; i < tensor.dims.size(); ++i)
    info->dims[i] = tensor.dims[i];
}

} // namespace sinter::rt
