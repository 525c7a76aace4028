// The order in which a convolution's implicit GEMM walks its reduction, one rule for the pass
// that lays out the weights (permute-conv-weights) and the lowering that reads them
// (describeConv in lib/codegen/lower_contraction.cpp):
//
//   channels innermost  r = (window position, input channel): when the input channels of a group
//                       are a multiple of 8, a run of eight steps is eight channels at one window
//                       position (one bounds test, one address, H * W elements apart in NCHW),
//                       and the weights are stored [Cout, window, Cin] so their rows stay
//                       contiguous;
//   window innermost    r = (input channel, window position), ONNX's weight order: with few
//                       channels (an RGB stem, a ViT patch embedding of 3 channels) a run of
//                       steps along the window's last axis is contiguous in the input instead
//                       (a 16x16 patch row is 16 adjacent pixels).
#pragma once

#include <cstdint>

namespace sinter {

inline bool convReducesChannelsInnermost(int64_t channelsPerGroup) { return channelsPerGroup % 8 == 0; }

} // namespace sinter
