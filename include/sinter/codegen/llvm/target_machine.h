// LLVM target set-up shared by the CPU backend and the NVPTX route.
#pragma once

#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include <memory>
#include <string>

namespace sinter::codegen::llvmgen {

/// An x86-64 TargetMachine for a CPU level: "x86-64-v2" | "x86-64-v3" | "x86-64-v4" | "native".
/// UserError for anything else.
std::unique_ptr<llvm::TargetMachine> createX86TargetMachine(const std::string &cpuLevel);

/// "native" becomes the highest x86-64 level (x86-64-v2/-v3/-v4) this machine supports, so the
/// artifact names an instruction set a runtime elsewhere can check; other levels are unchanged.
std::string resolveCpuLevel(const std::string &cpuLevel);

/// An NVPTX (nvptx64-nvidia-cuda) TargetMachine for a real architecture ("sm_80", "sm_90a").
/// Floating point as NVRTC's defaults: IEEE division and square root, no flush to zero, and
/// multiply-add contracted to fma. UserError when LLVM does not know the architecture.
std::unique_ptr<llvm::TargetMachine> createNvptxTargetMachine(const std::string &arch);

/// Runs LLVM's O3 pipeline (new pass manager; loop and SLP vectorisation on).
void optimizeModule(llvm::Module &module, llvm::TargetMachine &machine);

/// Emits the module as an object file (or assembly) to `path`.
void emitFile(llvm::Module &module, llvm::TargetMachine &machine, const std::string &path,
              bool assembly);

/// The module's assembly as text (PTX for an NVPTX machine).
std::string emitAssembly(llvm::Module &module, llvm::TargetMachine &machine);

} // namespace sinter::codegen::llvmgen
