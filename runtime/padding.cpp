#include "padding.h"

namespace sinter::rt {

std::vector<CopyRun> paddedCopyRuns(const std::vector<int64_t> &callerDims,
                                    const std::vector<int64_t> &planDims, size_t elementBytes) {
  const size_t rank = callerDims.size();
  size_t last = rank; // the last axis whose sizes differ
  for (size_t axis = 0; axis < rank; ++axis)
    if (callerDims[axis] != planDims[axis])
      last = axis;
  uint64_t inner = elementBytes; // bytes of one step along `last`: whole in both tensors
  for (size_t axis = last == rank ? 0 : last + 1; axis < rank; ++axis)
    inner *= uint64_t(callerDims[axis]);
  if (last == rank)
    return inner == 0 ? std::vector<CopyRun>{} : std::vector<CopyRun>{{0, 0, inner}};
  uint64_t runBytes = inner * uint64_t(callerDims[last]);
  uint64_t runs = 1;
  for (size_t axis = 0; axis < last; ++axis)
    runs *= uint64_t(callerDims[axis]);
  std::vector<CopyRun> copies;
  if (runBytes == 0 || runs == 0)
    return copies;
  copies.reserve(runs);
  // The bytes of one step along each axis before `last`, in each tensor.
  std::vector<uint64_t> callerStep(last), planStep(last);
  uint64_t callerBytes = runBytes, planBytes = inner * uint64_t(planDims[last]);
  for (size_t axis = last; axis-- > 0;) {
    callerStep[axis] = callerBytes;
    planStep[axis] = planBytes;
    callerBytes *= uint64_t(callerDims[axis]);
    planBytes *= uint64_t(planDims[axis]);
  }
  std::vector<int64_t> index(last, 0);
  for (uint64_t run = 0; run < runs; ++run) {
    CopyRun copy{0, 0, runBytes};
    for (size_t axis = 0; axis < last; ++axis) {
      copy.callerOffset += uint64_t(index[axis]) * callerStep[axis];
      copy.planOffset += uint64_t(index[axis]) * planStep[axis];
    }
    copies.push_back(copy);
    for (size_t axis = last; axis-- > 0;) { // the odometer, last axis fastest
      if (++index[axis] < callerDims[axis])
        break;
      index[axis] = 0;
    }
  }
  return copies;
}

} // namespace sinter::rt
