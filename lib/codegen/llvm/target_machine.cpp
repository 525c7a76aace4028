#include "sinter/codegen/llvm/target_machine.h"

#include "sinter/support/error.h"

#include <llvm/ADT/SmallString.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/TargetParser/Host.h>

#include <mutex>

namespace sinter::codegen::llvmgen {

static void initializeX86() {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeX86TargetInfo();
    LLVMInitializeX86Target();
    LLVMInitializeX86TargetMC();
    LLVMInitializeX86AsmPrinter();
  });
}

static void initializeNvptx() {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
  });
}

std::unique_ptr<llvm::TargetMachine> createNvptxTargetMachine(const std::string &arch) {
  initializeNvptx();
  const std::string triple = "nvptx64-nvidia-cuda";
  std::string error;
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, error);
  SINTER_ASSERT(target, "LLVM has no NVPTX target: ", error);
  // Asked of a generic subtarget: one made for an unknown CPU would warn on stderr.
  std::unique_ptr<llvm::MCSubtargetInfo> subtarget(target->createMCSubtargetInfo(triple, "", ""));
  if (!subtarget || !subtarget->isCPUStringValid(arch))
    userError("LLVM's NVPTX backend does not know CUDA architecture ", arch,
              "; use --gpu-codegen cuda-c for it");
  llvm::TargetOptions options;
  options.AllowFPOpFusion = llvm::FPOpFusion::Fast; // fma, as NVRTC's --fmad=true
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      triple, arch, "", options, std::nullopt, std::nullopt, llvm::CodeGenOptLevel::Aggressive));
  SINTER_ASSERT(machine, "LLVM could not create an NVPTX target machine for ", arch);
  return machine;
}

std::string resolveCpuLevel(const std::string &cpuLevel) {
  if (cpuLevel != "native")
    return cpuLevel;
  // The features each level adds (the x86-64 psABI's micro-architecture levels).
  static const char *const kV2[] = {"cx16", "popcnt", "sse4.1", "sse4.2", "ssse3", "sahf"};
  static const char *const kV3[] = {"avx", "avx2", "bmi", "bmi2", "f16c", "fma", "lzcnt", "movbe", "xsave"};
  static const char *const kV4[] = {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"};
  llvm::StringMap<bool> host = llvm::sys::getHostCPUFeatures();
  auto has = [&](const auto &features) {
    for (const char *feature : features) {
      auto it = host.find(feature);
      if (it == host.end() || !it->second)
        return false;
    }
    return true;
  };
  if (!has(kV2))
    userError("--cpu native: this machine lacks x86-64-v2, the oldest instruction set sinter targets");
  if (!has(kV3))
    return "x86-64-v2";
  return has(kV4) ? "x86-64-v4" : "x86-64-v3";
}

std::unique_ptr<llvm::TargetMachine> createX86TargetMachine(const std::string &cpuLevel) {
  initializeX86();
  std::string cpu = cpuLevel, features;
  if (cpuLevel == "native") {
    cpu = llvm::sys::getHostCPUName().str();
    for (const auto &feature : llvm::sys::getHostCPUFeatures())
      features += std::string(feature.second ? "+" : "-") + feature.first().str() + ",";
  } else if (cpuLevel != "x86-64-v2" && cpuLevel != "x86-64-v3" && cpuLevel != "x86-64-v4") {
    userError("unknown --cpu '", cpuLevel, "'; use native, x86-64-v2, x86-64-v3 or x86-64-v4");
  }
  const std::string triple = "x86_64-unknown-linux-gnu";
  std::string error;
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, error);
  SINTER_ASSERT(target, "LLVM has no x86-64 target: ", error);
  llvm::TargetOptions options;
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      triple, cpu, features, options, llvm::Reloc::PIC_, std::nullopt,
      llvm::CodeGenOptLevel::Aggressive));
  SINTER_ASSERT(machine, "LLVM could not create a target machine for ", cpu);
  return machine;
}

void optimizeModule(llvm::Module &module, llvm::TargetMachine &machine) {
  llvm::LoopAnalysisManager loops;
  llvm::FunctionAnalysisManager functions;
  llvm::CGSCCAnalysisManager cgscc;
  llvm::ModuleAnalysisManager modules;
  llvm::PipelineTuningOptions tuning;
  tuning.LoopVectorization = true;
  tuning.SLPVectorization = true;
  llvm::PassBuilder builder(&machine, tuning);
  builder.registerModuleAnalyses(modules);
  builder.registerCGSCCAnalyses(cgscc);
  builder.registerFunctionAnalyses(functions);
  builder.registerLoopAnalyses(loops);
  builder.crossRegisterProxies(loops, functions, cgscc, modules);
  llvm::ModulePassManager pipeline = builder.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  pipeline.run(module, modules);
}

void emitFile(llvm::Module &module, llvm::TargetMachine &machine, const std::string &path,
              bool assembly) {
  std::error_code error;
  llvm::raw_fd_ostream out(path, error, llvm::sys::fs::OF_None);
  if (error)
    userError("cannot write ", path, ": ", error.message());
  llvm::legacy::PassManager passes;
  bool failed = machine.addPassesToEmitFile(
      passes, out, nullptr,
      assembly ? llvm::CodeGenFileType::AssemblyFile : llvm::CodeGenFileType::ObjectFile);
  SINTER_ASSERT(!failed, "LLVM cannot emit this file type");
  passes.run(module);
}

std::string emitAssembly(llvm::Module &module, llvm::TargetMachine &machine) {
  llvm::SmallString<0> text;
  llvm::raw_svector_ostream out(text);
  llvm::legacy::PassManager passes;
  bool failed = machine.addPassesToEmitFile(passes, out, nullptr,
                                            llvm::CodeGenFileType::AssemblyFile);
  SINTER_ASSERT(!failed, "LLVM cannot emit assembly for ", machine.getTargetTriple().str());
  passes.run(module);
  return std::string(text.str());
}

} // namespace sinter::codegen::llvmgen
