#include "nvptx_emitter.h"

#include "sinter/codegen/llvm/kernel_emitter.h"
#include "sinter/codegen/llvm/target_machine.h"

#include "sinter/support/error.h"

#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Linker/Linker.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Transforms/IPO/Internalize.h>

#include <cstdlib>
#include <filesystem>
#include <set>
#include <sstream>

#include <unistd.h>

namespace sinter::codegen::llvmgen {
namespace {

namespace fs = std::filesystem;

/// libdevice's functions (`__nv_expf`, `__nv_exp`, ...); square root is `sqrt.rn`, an instruction.
class LibdeviceMath final : public MathLibrary {
public:
  llvm::Value *call(MathFunction function, llvm::ArrayRef<llvm::Value *> operands,
                    llvm::IRBuilder<> &builder, llvm::Module &module) const override {
    if (function == MathFunction::Sqrt) {
      llvm::Function *sqrt = llvm::Intrinsic::getDeclaration(&module, llvm::Intrinsic::sqrt,
                                                             {operands[0]->getType()});
      return builder.CreateCall(sqrt, operands);
    }
    llvm::Type *type = operands[0]->getType();
    std::string name = std::string("__nv_") + baseName(function) + (type->isDoubleTy() ? "" : "f");
    std::vector<llvm::Type *> parameters(operands.size(), type);
    llvm::FunctionCallee callee =
        module.getOrInsertFunction(name, llvm::FunctionType::get(type, parameters, false));
    if (auto *declaration = llvm::dyn_cast<llvm::Function>(callee.getCallee()))
      declaration->setDoesNotThrow();
    return builder.CreateCall(callee, operands);
  }

private:
  static const char *baseName(MathFunction function) {
    switch (function) {
    case MathFunction::Exp: return "exp";
    case MathFunction::Log: return "log";
    case MathFunction::Sqrt: return "sqrt";
    case MathFunction::Sin: return "sin";
    case MathFunction::Cos: return "cos";
    case MathFunction::Tan: return "tan";
    case MathFunction::Asin: return "asin";
    case MathFunction::Acos: return "acos";
    case MathFunction::Atan: return "atan";
    case MathFunction::Sinh: return "sinh";
    case MathFunction::Cosh: return "cosh";
    case MathFunction::Tanh: return "tanh";
    case MathFunction::Asinh: return "asinh";
    case MathFunction::Acosh: return "acosh";
    case MathFunction::Atanh: return "atanh";
    case MathFunction::Erf: return "erf";
    case MathFunction::Pow: return "pow";
    case MathFunction::Fmod: return "fmod";
    }
    SINTER_ASSERT(false, "unhandled math function");
  }
};

bool isFile(const fs::path &path) {
  std::error_code error;
  return fs::is_regular_file(path, error);
}

/// The folder holding the ptxas sinter would run, if any (as toolchain.cpp looks for it).
std::string ptxasFolder() {
  if (const char *path = std::getenv("SINTER_PTXAS"))
    return fs::path(path).parent_path().string();
  if (const char *pathVariable = std::getenv("PATH")) {
    std::stringstream stream(pathVariable);
    std::string folder;
    while (std::getline(stream, folder, ':'))
      if (!folder.empty() && access((folder + "/ptxas").c_str(), X_OK) == 0)
        return folder;
  }
  return "";
}

void addKernel(const Kernel &kernel, int blockSize, llvm::Module &module,
               const MathLibrary &math) {
  llvm::LLVMContext &context = module.getContext();
  llvm::Type *ptr = llvm::PointerType::getUnqual(context);
  llvm::Type *i64 = llvm::Type::getInt64Ty(context);
  std::vector<llvm::Type *> parameters(kernel.buffers.size(), ptr);
  auto *function = llvm::Function::Create(
      llvm::FunctionType::get(llvm::Type::getVoidTy(context), parameters, false),
      llvm::Function::ExternalLinkage, kernel.name, module);
  function->addFnAttr(llvm::Attribute::NoUnwind);
  std::vector<llvm::Value *> buffers;
  for (size_t i = 0; i < kernel.buffers.size(); ++i) {
    // The memory plan never hands one buffer to two arguments of a kernel.
    function->addParamAttr(unsigned(i), llvm::Attribute::NoAlias);
    if (!kernel.buffers[i].written)
      function->addParamAttr(unsigned(i), llvm::Attribute::ReadOnly);
    function->getArg(unsigned(i))->setName("b" + std::to_string(i));
    buffers.push_back(function->getArg(unsigned(i)));
  }
  llvm::NamedMDNode *annotations = module.getOrInsertNamedMetadata("nvvm.annotations");
  auto annotate = [&](const char *key, int value) {
    llvm::Metadata *operands[] = {
        llvm::ValueAsMetadata::get(function), llvm::MDString::get(context, key),
        llvm::ValueAsMetadata::get(llvm::ConstantInt::get(llvm::Type::getInt32Ty(context), value))};
    annotations->addOperand(llvm::MDNode::get(context, operands));
  };
  annotate("kernel", 1);
  annotate("maxntidx", blockSize);

  llvm::IRBuilder<> b(context);
  auto *entry = llvm::BasicBlock::Create(context, "entry", function);
  auto *header = llvm::BasicBlock::Create(context, "gid.loop", function);
  auto *body = llvm::BasicBlock::Create(context, "gid.body", function);
  auto *exit = llvm::BasicBlock::Create(context, "exit", function);
  b.SetInsertPoint(entry);
  KernelEmitter emitter(kernel, b, module, buffers, math, /*nativeHalfConversions=*/true);
  auto special = [&](llvm::Intrinsic::ID id, const char *name) {
    llvm::Function *read = llvm::Intrinsic::getDeclaration(&module, id);
    return b.CreateZExt(b.CreateCall(read, {}), i64, name);
  };
  llvm::Value *thread = special(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x, "tid");
  llvm::Value *block = special(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x, "ctaid");
  llvm::Value *blockSizeValue = special(llvm::Intrinsic::nvvm_read_ptx_sreg_ntid_x, "ntid");
  llvm::Value *blocks = special(llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_x, "nctaid");
  llvm::Value *start = b.CreateAdd(b.CreateMul(block, blockSizeValue, "", true, true), thread,
                                   "gid.start", true, true);
  llvm::Value *stride = b.CreateMul(blocks, blockSizeValue, "gid.stride", true, true);
  b.CreateBr(header);
  b.SetInsertPoint(header);
  llvm::PHINode *gid = b.CreatePHI(i64, 2, "gid");
  gid->addIncoming(start, entry);
  b.CreateCondBr(b.CreateICmpSLT(gid, b.getInt64(kernel.parallelExtent)), body, exit);
  b.SetInsertPoint(body);
  emitter.emitBody(gid);
  llvm::Value *next = b.CreateAdd(gid, stride, "gid.next", true, true);
  gid->addIncoming(next, b.GetInsertBlock());
  b.CreateBr(header);
  b.SetInsertPoint(exit);
  b.CreateRetVoid();
}

bool callsLibdevice(const llvm::Module &module) {
  for (const llvm::Function &function : module)
    if (function.isDeclaration() && function.getName().starts_with("__nv_"))
      return true;
  return false;
}

void linkLibdevice(llvm::Module &module, const std::string &path) {
  SINTER_ASSERT(!path.empty(), "a kernel needs libdevice but none was found");
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file = llvm::MemoryBuffer::getFile(path);
  if (!file)
    userError("cannot read libdevice ", path, ": ", file.getError().message());
  llvm::Expected<std::unique_ptr<llvm::Module>> libdevice =
      llvm::parseBitcodeFile((*file)->getMemBufferRef(), module.getContext());
  if (!libdevice)
    userError("cannot parse libdevice ", path, ": ", llvm::toString(libdevice.takeError()));
  (*libdevice)->setTargetTriple(module.getTargetTriple());
  (*libdevice)->setDataLayout(module.getDataLayout());
  bool failed = llvm::Linker::linkModules(module, std::move(*libdevice),
                                          llvm::Linker::Flags::LinkOnlyNeeded);
  SINTER_ASSERT(!failed, "linking libdevice ", path, " into the NVPTX module failed");
}

std::string printed(const llvm::Module &module) {
  std::string text;
  llvm::raw_string_ostream stream(text);
  module.print(stream, nullptr);
  return text;
}

} // namespace

std::string findLibdevice() {
  const std::string relative = "nvvm/libdevice/libdevice.10.bc";
  if (const char *path = std::getenv("SINTER_LIBDEVICE"))
    return isFile(path) ? path : "";
  std::vector<fs::path> homes;
  if (std::string folder = ptxasFolder(); !folder.empty())
    homes.push_back(fs::path(folder).parent_path());
  for (const char *variable : {"CUDA_HOME", "CUDA_PATH"})
    if (const char *value = std::getenv(variable))
      homes.push_back(value);
  homes.push_back("/usr/local/cuda");
  for (const fs::path &home : homes)
    if (isFile(home / relative))
      return (home / relative).string();
  return "";
}

bool needsLibdevice(const Kernel &kernel) {
  std::set<MathFunction> used = mathFunctionsUsed(kernel);
  used.erase(MathFunction::Sqrt);
  return !used.empty();
}

NvptxModule compileNvptxModule(const std::vector<const Kernel *> &kernels,
                               const NvptxModuleOptions &options) {
  std::unique_ptr<llvm::TargetMachine> machine = createNvptxTargetMachine(options.arch);
  llvm::LLVMContext context;
  llvm::Module module("sinter_nvptx_" + options.arch, context);
  module.setDataLayout(machine->createDataLayout());
  module.setTargetTriple(machine->getTargetTriple().str());
  LibdeviceMath math;
  std::set<std::string> entryPoints;
  for (const Kernel *kernel : kernels) {
    addKernel(*kernel, options.blockSize, module, math);
    entryPoints.insert(kernel->name);
  }
  std::string problems;
  llvm::raw_string_ostream stream(problems);
  SINTER_ASSERT(!llvm::verifyModule(module, &stream), "generated NVPTX IR is invalid:\n", problems);

  NvptxModule result;
  if (options.keepText)
    result.unoptimizedIr = printed(module);
  if (callsLibdevice(module)) {
    linkLibdevice(module, options.libdevicePath);
    // Only the kernels are entry points: libdevice's functions become internal, so O3 inlines
    // them and drops the unused.
    llvm::internalizeModule(module, [&](const llvm::GlobalValue &value) {
      return entryPoints.count(value.getName().str()) != 0;
    });
  }
  optimizeModule(module, *machine);
  if (options.keepText) {
    result.optimizedIr = printed(module);
    for (const Kernel *kernel : kernels) {
      std::string text;
      llvm::raw_string_ostream kernelStream(text);
      module.getFunction(kernel->name)->print(kernelStream);
      result.kernelIr[kernel->name] = text;
    }
  }
  result.ptx = emitAssembly(module, *machine);
  return result;
}

} // namespace sinter::codegen::llvmgen
