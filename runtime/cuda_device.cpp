// CudaDeviceCode (cuda_device.h): what the CUDA sessions of one model on one device share.
#include "cuda_device.h"

#include "status.h"

#include <algorithm>

namespace sinter::rt {

using namespace cuda;

namespace {

/// Dynamic shared memory a kernel may use without opting in.
constexpr uint32_t kDefaultSharedBytes = 48 * 1024;

} // namespace

std::shared_ptr<const CudaDeviceCode> CudaDeviceCode::share(const LoadedArtifact &artifact,
                                                            const Driver &driver, int ordinal) {
  return artifact.devices.cudaCode(ordinal, artifact.weightsBytes(), [&] {
    auto code = std::make_shared<CudaDeviceCode>(driver);
    code->initialize(artifact, ordinal); // on failure, the destructor frees what was made
    return std::shared_ptr<const CudaDeviceCode>(std::move(code));
  });
}

CudaDeviceCode::~CudaDeviceCode() {
  if (!context_)
    return;
  // Best effort: a destructor cannot report, and a failed call here leaks at worst.
  CUcontext popped;
  d_.cuCtxPushCurrent(context_);
  if (weights_)
    d_.cuMemFree(weights_);
  for (CUmodule module : modules_)
    d_.cuModuleUnload(module);
  d_.cuCtxPopCurrent(&popped);
  d_.cuDevicePrimaryCtxRelease(device_);
}

CudaDeviceCode::Arch CudaDeviceCode::parseArch(const std::string &text) {
  // "sm_90", "sm_90a", "compute_120" (validated at load).
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

void CudaDeviceCode::initialize(const LoadedArtifact &artifact, int ordinal) {
  openDevice(ordinal);
  ContextScope scope(d_, context_);
  loadKernels(artifact.manifest());
  if (artifact.weightsBytes() > 0) {
    check(d_.cuMemAlloc(&weights_, artifact.weightsBytes()), "cuMemAlloc (weights)");
    check(d_.cuMemcpyHtoD(weights_, artifact.weights, artifact.weightsBytes()),
          "cuMemcpyHtoD (weights)");
  }
}

void CudaDeviceCode::openDevice(int ordinal) {
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

const package::CudaBinary &CudaDeviceCode::chooseBinary(const package::Manifest &manifest,
                                                        size_t moduleIndex) const {
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

void CudaDeviceCode::loadKernels(const package::Manifest &manifest) {
  check(d_.cuDeviceGetAttribute(&sharedLimit_, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                                device_),
        "cuDeviceGetAttribute");
  sharedNeeded_.assign(manifest.kernels.size(), 0);
  // Every plan's launches: a bucketed artifact's other plans launch kernels of their own.
  auto needShared = [&](const std::vector<package::Step> &steps) {
    for (const package::Step &step : steps)
      if (const auto *launch = std::get_if<package::Launch>(&step))
        sharedNeeded_[launch->kernel] = std::max(sharedNeeded_[launch->kernel], launch->sharedBytes);
  };
  needShared(manifest.steps);
  for (const package::Plan &plan : manifest.additionalPlans)
    needShared(plan.steps);
  manifest_ = &manifest;

  for (size_t index = 0; index < manifest.cudaModules.size(); ++index) {
    const package::CudaBinary &binary = chooseBinary(manifest, index);
    images_.emplace_back(binary.bytes.begin(), binary.bytes.end()); // PTX must end with a NUL
    moduleArch_.push_back(binary.arch);
    modules_.push_back(loadModule(index));
  }
  moduleHasState_.assign(modules_.size(), false);
  for (size_t index = 0; index < manifest.kernels.size(); ++index) {
    const package::Kernel &kernel = manifest.kernels[index];
    CUmodule module = modules_[kernel.cudaModule];
    functions_.push_back(findKernel(module, index));
    CUdeviceptr counters = 0;
    size_t bytes = 0;
    if (d_.cuModuleGetGlobal(&counters, &bytes, module, (kernel.name + "_arrivals").c_str()) == CUDA_SUCCESS)
      moduleHasState_[kernel.cudaModule] = true;
  }
  // Only a module with state is loaded again (by each session); the others' images can go.
  for (size_t index = 0; index < images_.size(); ++index)
    if (!moduleHasState_[index])
      std::string().swap(images_[index]);
}

CUmodule CudaDeviceCode::loadModule(size_t index) const {
  char log[4096] = {};
  int options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *values[] = {log, reinterpret_cast<void *>(uintptr_t(sizeof(log) - 1))};
  CUmodule module = nullptr;
  CUresult result = d_.cuModuleLoadDataEx(&module, images_[index].c_str(), 2, options, values);
  if (result != CUDA_SUCCESS)
    fail(SINTER_ERROR_DEVICE, "loading CUDA module ", index, " (", moduleArch_[index], ") failed: ",
         describeError("cuModuleLoadDataEx", result), log[0] ? "\n" : "", log);
  return module;
}

CUfunction CudaDeviceCode::findKernel(CUmodule module, size_t index) const {
  const package::Kernel &kernel = manifest_->kernels[index];
  const std::string &name = kernel.name;
  CUfunction function = nullptr;
  CUresult result = d_.cuModuleGetFunction(&function, module, name.c_str());
  if (result != CUDA_SUCCESS)
    fail(SINTER_ERROR_INVALID_ARTIFACT, "the ", moduleArch_[kernel.cudaModule], " code of kernel '", name,
         "' has no entry point of that name: ", describeError("cuModuleGetFunction", result));
  if (sharedNeeded_[index] > kDefaultSharedBytes) {
    if (sharedNeeded_[index] > static_cast<uint32_t>(sharedLimit_))
      fail(SINTER_ERROR_UNSUPPORTED, "kernel '", name, "' needs ", sharedNeeded_[index],
           " bytes of shared memory; ", deviceName_, " allows ", sharedLimit_);
    check(d_.cuFuncSetAttribute(function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                static_cast<int>(sharedNeeded_[index])),
          "cuFuncSetAttribute");
  }
  return function;
}

CUmodule CudaDeviceCode::loadModuleCopy(size_t index, std::vector<CUfunction> &functions) const {
  SINTER_ASSERT(moduleHasState_[index], "only a module with state is loaded per session");
  CUmodule module = loadModule(index);
  try {
    for (size_t kernel = 0; kernel < manifest_->kernels.size(); ++kernel)
      if (manifest_->kernels[kernel].cudaModule == index)
        functions[kernel] = findKernel(module, kernel);
  } catch (...) {
    d_.cuModuleUnload(module);
    throw;
  }
  return module;
}

} // namespace sinter::rt
