// The factory of the NVPTX route, --gpu-codegen llvm (lib/codegen/nvptx/nvptx_backend.cpp):
// LLVM's NVPTX backend and ptxas, falling back to createCudaBackend group by group. The compile
// driver reaches it through targets.h's createBackend.
#pragma once

#include "sinter/codegen/backend/backend.h"

#include <memory>

namespace sinter::codegen {

std::unique_ptr<Backend> createNvptxBackend(const TargetOptions &options);

} // namespace sinter::codegen
