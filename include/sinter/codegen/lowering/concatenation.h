// A Concat as block copies, for a backend with a copy kernel (the CPU's: cpu_copy.h): with the
// output viewed as [outer, (sum of the inputs' extents along the axis) x inner], input k is
// `outer` contiguous runs of extents[k] x inner elements, each copied to its place in an output
// row. Described for a group that is one Concat of static shape reading its inputs directly
// (no fused prologue, no epilogue); every dtype is whole bytes inside sinter. The naive lowering (a selection per element)
// computes the same.
#pragma once

#include "sinter/codegen/lowering/lowering.h"

#include <optional>
#include <vector>

namespace sinter::codegen {

struct Concatenation {
  int64_t outer = 1, inner = 1, elementBytes = 4;
  std::vector<int> sources;     ///< per Concat input, the kernel buffer it is read from
  std::vector<int64_t> extents; ///< per Concat input, its extent along the axis
  int output = -1;              ///< the kernel buffer written
  int64_t rowElements() const {
    int64_t total = 0;
    for (int64_t extent : extents)
      total += extent;
    return total * inner;
  }
};

/// The concatenation of a group made of one Concat node the description covers; nullopt for any
/// other group.
std::optional<Concatenation> describeConcatenation(const KernelGroup &group);

} // namespace sinter::codegen
