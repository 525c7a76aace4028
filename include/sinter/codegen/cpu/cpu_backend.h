// The CPU backend's factory (lib/codegen/cpu/cpu_backend.cpp): kernel IR built as LLVM IR for
// x86-64, one object linked into model.so. The compile driver reaches it through targets.h.
#pragma once

#include "sinter/codegen/backend/backend.h"

#include <memory>

namespace sinter::codegen {

std::unique_ptr<Backend> createCpuBackend(const TargetOptions &options);

} // namespace sinter::codegen
