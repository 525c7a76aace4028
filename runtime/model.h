// A loaded artifact: the dlopen'ed model.so, its parsed manifest, the weights (in place in the
// mapped file) and, for the CPU target, the kernel entry points. Immutable after loading (but for
// the device shares its sessions make, device_shares.h) and shared (by reference count) between
// the sinter_model handle (handles.h) and its sessions, so freeing the model before its sessions
// is safe.
#pragma once

#include "device_shares.h"
#include "sinter/package/format.h"
#include "sinter/runtime.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace sinter::rt {

/// `void name(void *const *args, int64_t begin, int64_t end)`: a CPU kernel.
using CpuKernelFunction = void (*)(void *const *args, int64_t begin, int64_t end);

struct LoadedArtifact {
  std::string path;
  void *library = nullptr; ///< dlopen handle
  package::ArtifactView view;
  const uint8_t *weights = nullptr; ///< aligned to kWeightAlignment; view.weights or alignedCopy
  std::vector<uint8_t> alignedCopy;  ///< only when the mapped weights were misaligned
  std::vector<CpuKernelFunction> cpuKernels; ///< by kernel index (CPU target)
  std::string cpuLevel;                      ///< the level whose kernels those are (CPU target)
  /// What its sessions share on each device (the CUDA weights, once per device) and their counts:
  /// the one part that changes after loading, behind its own lock.
  mutable DeviceShares devices;

  /// Every plan (plan 0 is the manifest's own signature, arena and steps; a bucketed artifact
  /// has one per combination of buckets: manifest.h).
  std::vector<package::Plan> plans;

  const package::Manifest &manifest() const { return view.manifest; }
  /// The largest arena of any plan: a session's, since it runs one plan at a time.
  uint64_t largestArenaBytes() const;
  uint64_t weightsBytes() const { return view.weights.size(); }

  LoadedArtifact() = default;
  LoadedArtifact(const LoadedArtifact &) = delete;
  LoadedArtifact &operator=(const LoadedArtifact &) = delete;
  ~LoadedArtifact();
};

/// Loads and checks model.so; throws RuntimeError (IO, INVALID_ARTIFACT, UNSUPPORTED).
std::shared_ptr<const LoadedArtifact> loadArtifact(const std::string &path);

/// Fills a sinter_tensor_info from a signature entry (the name points into the manifest).
void describeTensor(const package::TensorSignature &tensor, sinter_tensor_info *info);

} // namespace sinter::rt

