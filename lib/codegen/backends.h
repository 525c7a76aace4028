// Private: the factories of the backends built in (each defined in its backend's folder).
#pragma once

#include "sinter/codegen/backend.h"

namespace sinter::codegen {

std::unique_ptr<Backend> createCudaBackend(const TargetOptions &options); // lib/codegen/cuda
std::unique_ptr<Backend> createCpuBackend(const TargetOptions &options);  // lib/codegen/llvm
/// --gpu-codegen llvm: the NVPTX route, falling back to createCudaBackend group by group.
std::unique_ptr<Backend> createNvptxBackend(const TargetOptions &options); // lib/codegen/llvm

} // namespace sinter::codegen
