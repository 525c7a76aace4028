// One model's code and weights on one CUDA device, shared by every session of the model there:
// the device's retained primary context, each CUDA module loaded once (the cubin for this GPU's
// architecture, else JIT-compiled PTX), each kernel found in its module (with its shared-memory
// opt-in set), and one device copy of the weights. Made by the first session on the device
// (through the artifact's DeviceShares, so concurrent first sessions upload once) and freed with
// the last. Read-only once made: sessions on any thread launch its functions and read its weights.
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
  const package::CudaBinary &chooseBinary(const package::Manifest &manifest,
                                          size_t moduleIndex) const;

  const cuda::Driver &d_;
  cuda::CUdevice device_ = 0;
  cuda::CUcontext context_ = nullptr;
  Arch deviceArch_;
  std::string deviceName_;
  std::vector<cuda::CUmodule> modules_;
  std::vector<cuda::CUfunction> functions_; ///< by kernel index
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
