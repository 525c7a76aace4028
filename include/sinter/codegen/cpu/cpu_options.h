// The options of the CPU target (--target cpu), owned by its backend (cpu_backend.h). The generic
// TargetOptions (backend/backend.h) carries them as `cpu`.
#pragma once

#include <string>

namespace sinter::codegen {

struct CpuOptions {
  /// "x86-64-v2" (default, portable), "x86-64-v3", "x86-64-v4" or "native".
  std::string level = "x86-64-v2";
};

} // namespace sinter::codegen
