// Copies between a caller's tensor and a plan's slot of a larger bucket (a padded run: docs/runtime.md,
// "Shape buckets"). Both are row-major and start at their origin; the caller's dims are at most the
// plan's on every axis. The copy is a list of contiguous runs: every axis after the last one that
// differs is whole in both, so each run is the caller's extent of that axis times what follows it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace sinter::rt {

struct CopyRun {
  uint64_t callerOffset = 0; ///< bytes into the caller's tensor
  uint64_t planOffset = 0;   ///< bytes into the plan's slot
  uint64_t bytes = 0;
};

/// The runs that place a tensor of `callerDims` inside one of `planDims` (same rank, each dim no
/// larger), with elements of `elementBytes`. One run when the dims are equal or only the first
/// differs; none when the caller's tensor is empty.
std::vector<CopyRun> paddedCopyRuns(const std::vector<int64_t> &callerDims,
                                    const std::vector<int64_t> &planDims, size_t elementBytes);

} // namespace sinter::rt
