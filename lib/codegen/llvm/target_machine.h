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

/// Runs LLVM's O3 pipeline (new pass manager; loop and SLP vectorisation on).
void optimizeModule(llvm::Module &module, llvm::TargetMachine &machine);

/// Emits the module as an object file (or assembly) to `path`.
void emitFile(llvm::Module &module, llvm::TargetMachine &machine, const std::string &path,
              bool assembly);

} // namespace sinter::codegen::llvmgen
