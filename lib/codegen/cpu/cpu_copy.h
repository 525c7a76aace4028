// Copy kernels for the CPU backend: a Concat as block copies (concatenation.h) instead of a
// selection among its inputs per element. The parallel index runs over (output row, input)
// pairs, each one memcpy of the input's run into its place in the row; a concat of many inputs
// (DenseNet's, of every earlier layer's features) then costs what moving its bytes costs.
#pragma once

#include "sinter/codegen/backend/backend.h"

#include <llvm/IR/Module.h>

namespace sinter::codegen::llvmgen {

/// Whether `group` is a concatenation this kernel copies; sets the launch's parallel extent.
bool planConcatenation(const LoweredGroup &group, LaunchShape &launch);

/// Adds the copy kernel of `group` (planned above) to `module` and returns the described kernel.
Kernel emitConcatenation(const LoweredGroup &group, llvm::Module &module);

} // namespace sinter::codegen::llvmgen
