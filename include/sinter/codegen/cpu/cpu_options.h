// The options of the CPU target (--target cpu), owned by its backend (cpu_backend.h). The generic
// TargetOptions (backend/backend.h) carries them as `cpu`.
#pragma once

#include <string>
#include <vector>

namespace sinter::codegen {

struct CpuOptions {
  /// The x86-64 levels the artifact has kernels for ("x86-64-v2", "x86-64-v3", "x86-64-v4", or
  /// "native": this machine's); the runtime runs the highest the CPU has. By default all three,
  /// so one artifact runs everywhere and uses AVX2 or AVX-512 where they are.
  std::vector<std::string> levels = {"x86-64-v2", "x86-64-v3", "x86-64-v4"};
};

} // namespace sinter::codegen
