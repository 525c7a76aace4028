// The CUDA C backend's factory (lib/codegen/cuda/cuda_backend.cpp): kernel IR printed as CUDA C,
// compiled by NVRTC and ptxas. The compile driver reaches it through targets.h's createBackend.
#pragma once

#include "sinter/codegen/backend/backend.h"

#include <memory>

namespace sinter::codegen {

std::unique_ptr<Backend> createCudaBackend(const TargetOptions &options);

} // namespace sinter::codegen
