// Prints kernel IR as CUDA C: one `extern "C" __global__` function per kernel, a grid-stride
// loop over the kernel's parallel index, and calls to the overloaded helpers of the prelude for
// math whose semantics must match the reference (NaN-propagating min/max, round-half-even, ...).
#pragma once

#include "sinter/codegen/kernel_ir.h"

#include <string>

namespace sinter::codegen::cuda {

/// Helpers every generated translation unit starts with (no #include: NVRTC needs no headers).
const std::string &cudaPrelude();

/// The CUDA C of one kernel; `blockSize` is its __launch_bounds__.
std::string printCudaKernel(const Kernel &kernel, int blockSize);

/// The C type a buffer of this dtype is declared with ("float", "unsigned short" for f16, ...).
const char *cudaStorageType(DType type);

} // namespace sinter::codegen::cuda
