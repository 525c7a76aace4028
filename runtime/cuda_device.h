// One model's code and weights on one CUDA device, shared by every session of the model there:
// the device's retained primary context, each CUDA module loaded once (the cubin for this GPU's
// architecture, else JIT-compiled PTX), each kernel found in its module (with its shared-memory
// opt-in set), and one device copy of the weights. Made by the first session on the device
// (through the artifact's DeviceShares, so concurrent first sessions upload once) and freed with
// the last. Read-only once made: sessions on any thread launch its functions and read its weights.
//
// A module whose kernels keep state between launches (a stream-K kernel's `NAME_arrivals`
// counters, zero at load and reset by each launch's last arrival) cannot be shared: two sessions
// running it at once would count into one set of counters. Each session loads its own copy of
// such a module (loadModuleCopy, from the image kept for it); every other module is loaded once
// here. The artifact outlives this (a session holds both, and releases this first), so its
// manifest is read in place.
#pragma once

#include "cuda_driver.h"
#include "model.h"

#include <memory>
#include <string>
#include <vector>

namespace sinter::rt {

class CudaDeviceCode {
public:
  /// The share of `ordinal` for `artifact`: the live one, or a new one (NO_DEVICE for an ordinal
  /// no GPU has; UNSUPPORTED or DEVICE when the code cannot be loaded there).
  static std::shared_ptr<const CudaDeviceCode> share(const LoadedArtifact &artifact,
                                                     const cuda::Driver &driver, int ordinal);

  CudaDeviceCode(const cuda::Driver &driver) : d_(driver) {}
  ~CudaDeviceCode();
  CudaDeviceCode(const CudaDeviceCode &) = delete;
  CudaDeviceCode &operator=(const CudaDeviceCode &) = delete;

  cuda::CUcontext context() const { return context_; }
  cuda::CUdeviceptr weights() const { return weights_; }
  cuda::CUfunction function(size_t kernel) const { return functions_[kernel]; }
  size_t kernelCount() const { return functions_.size(); }
  /// Whether module `index` keeps state between launches, so that each session needs its own.
  bool moduleHasState(size_t index) const { return moduleHasState_[index]; }
  size_t moduleCount() const { return modules_.size(); }
  /// Loads another copy of module `index` (the image chosen at load) into the current context and
  /// puts its kernels' functions into `functions` (by kernel index); the caller unloads it.
  cuda::CUmodule loadModuleCopy(size_t index, std::vector<cuda::CUfunction> &functions) const;

private:
  struct Arch {
    int major = 0;
    int minor = 0;
    bool specific = false; ///< "sm_90a": runs on exactly that architecture
  };
  static Arch parseArch(const std::string &text);

  void initialize(const LoadedArtifact &artifact, int ordinal);
  void openDevice(int ordinal);
  void loadKernels(const package::Manifest &manifest);
  cuda::CUmodule loadModule(size_t index) const;
  /// Finds kernel `index` in `module` and opts it into the shared memory its launches need.
  cuda::CUfunction findKernel(cuda::CUmodule module, size_t index) const;
  const package::CudaBinary &chooseBinary(const package::Manifest &manifest,
                                          size_t moduleIndex) const;

  const cuda::Driver &d_;
  cuda::CUdevice device_ = 0;
  cuda::CUcontext context_ = nullptr;
  Arch deviceArch_;
  std::string deviceName_;
  std::vector<cuda::CUmodule> modules_;
  /// By module: the chosen cubin or PTX, kept only for a module with state (emptied otherwise).
  std::vector<std::string> images_;
  std::vector<std::string> moduleArch_;     ///< by module: the chosen image's architecture
  std::vector<bool> moduleHasState_;        ///< by module
  std::vector<cuda::CUfunction> functions_; ///< by kernel index
  std::vector<uint32_t> sharedNeeded_;      ///< by kernel index: the most its launches take
  const package::Manifest *manifest_ = nullptr;
  int sharedLimit_ = 0;
  cuda::CUdeviceptr weights_ = 0;
};

/// Makes a context current for the scope of one call.
class ContextScope {
public:
  ContextScope(const cuda::Driver &driver, cuda::CUcontext context) : driver_(driver) {
    cuda::check(driver_.cuCtxPushCurrent(context), "cuCtxPushCurrent");
  }
  ~ContextScope() {
    cuda::CUcontext popped;
    driver_.cuCtxPopCurrent(&popped);
  }
  ContextScope(const ContextScope &) = delete;
  ContextScope &operator=(const ContextScope &) = delete;

private:
  const cuda::Driver &driver_;
};

} // namespace sinter::rt
