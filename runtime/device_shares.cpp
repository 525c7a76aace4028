#include "device_shares.h"

namespace sinter::rt {

void DeviceShares::sessionStarted(int device, uint64_t arenaBytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  Slot &slot = slots_[device];
  ++slot.sessions;
  slot.arenaBytes += arenaBytes;
}

void DeviceShares::sessionEnded(int device, uint64_t arenaBytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  Slot &slot = slots_[device];
  --slot.sessions;
  slot.arenaBytes -= arenaBytes;
}

std::shared_ptr<const CudaDeviceCode>
DeviceShares::cudaCode(int device, uint64_t weightBytes,
                       const std::function<std::shared_ptr<const CudaDeviceCode>()> &make) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = slots_.find(device);
  if (found != slots_.end())
    if (std::shared_ptr<const CudaDeviceCode> live = found->second.code.lock())
      return live;
  std::shared_ptr<const CudaDeviceCode> made = make();
  Slot &slot = slots_[device];
  slot.code = made;
  slot.weightBytes = weightBytes;
  if (weightBytes > 0)
    ++slot.uploads;
  return made;
}

sinter_device_usage DeviceShares::usage(int device) const {
  std::lock_guard<std::mutex> lock(mutex_);
  sinter_device_usage usage{};
  auto found = slots_.find(device);
  if (found == slots_.end())
    return usage;
  const Slot &slot = found->second;
  usage.sessions = slot.sessions;
  usage.weight_uploads = slot.uploads;
  usage.weight_bytes = slot.code.expired() ? 0 : slot.weightBytes;
  usage.arena_bytes = slot.arenaBytes;
  return usage;
}

} // namespace sinter::rt
