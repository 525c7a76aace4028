// Pooling described as a window slid over each (image, channel) plane on its own, so a backend
// can generate a direct kernel for it (the CPU's: cpu_plane_window.h):
//
//   for image, channel, position (row-major over geometry.output):
//     acc = max, or sum, over the window's taps inside X of X[image][channel][at]
//           (at_d = position_d * strides_d - padBegin_d + tap_d * dilations_d)
//     epilogue(image, channel, position, acc)   (an average's division; stores the output)
//
// Described for a MaxPool (no Indices output) or AveragePool over 1 or 2 spatial dims whose input
// X is read directly (no fused prologue) and stored as f32, f16 or bf16 (the taps are compared or
// summed in f32). The naive lowering (lower_pooling.cpp) computes the same; a backend without a
// direct kernel uses that.
#pragma once

#include "sinter/codegen/kernel/kernel_ir.h"
#include "sinter/codegen/lowering/lowering.h"
#include "sinter/ir/op_attributes.h"

#include <optional>

namespace sinter::codegen {

struct Pooling {
  Kernel kernel;   ///< buffers and variables; its body is empty (a backend writes the loops)
  bool max = true; ///< the taps' maximum (a NaN never wins, as in the reference), else their sum
  int source = -1; ///< the buffer X
  /// X's element as the taps read it: `load` (of X's type: f32, f16 or bf16) through casts
  /// between those types to f32.
  ExprRef read, load;
  int64_t images = 0, channels = 0;
  WindowGeometry geometry;
  int image = -1, channel = -1, position = -1; ///< i64 variables the epilogue reads
  int acc = -1;                                ///< the accumulator variable (f32)
  /// Stores the output element for (image, channel, position) from acc (an average divided by
  /// its window's count, then the group's fused elementwise ops).
  std::vector<StmtRef> epilogue;
};

/// The pooling of a group made of one MaxPool or AveragePool node that the description covers;
/// nullopt for any other group.
std::optional<Pooling> lowerPooling(const KernelGroup &group);

} // namespace sinter::codegen
