// What the sessions of one loaded model share on each device, and the counts that
// sinter_model_device_usage reports. A CUDA device's share (its context, the loaded kernels and
// the one copy of the weights: CudaDeviceCode, cuda_device.h) is made by the first session there,
// held by every session there, and freed with the last of them; the slot here only watches it.
// CPU sessions read the weights in place in the mapped file and register under device 0.
#pragma once

#include "sinter/runtime.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>

namespace sinter::rt {

class CudaDeviceCode;

class DeviceShares {
public:
  /// A session with an arena of `arenaBytes` starts (or ends) on `device`.
  void sessionStarted(int device, uint64_t arenaBytes);
  void sessionEnded(int device, uint64_t arenaBytes);

  /// The live share of `device`, or a new one from `make`, which uploads `weightBytes` of weights.
  /// `make` runs under the lock, so sessions created at once on one device upload once; when it
  /// throws, nothing is recorded.
  std::shared_ptr<const CudaDeviceCode>
  cudaCode(int device, uint64_t weightBytes,
           const std::function<std::shared_ptr<const CudaDeviceCode>()> &make);

  sinter_device_usage usage(int device) const;

private:
  struct Slot {
    std::weak_ptr<const CudaDeviceCode> code;
    uint64_t weightBytes = 0; ///< of the live code
    int32_t uploads = 0;
    int32_t sessions = 0;
    uint64_t arenaBytes = 0;
  };
  mutable std::mutex mutex_;
  std::map<int, Slot> slots_; ///< by device ordinal
};

} // namespace sinter::rt
