// The CPU backend: kernel IR built as LLVM IR for x86-64, optimised at O3 and emitted as one
// object that the artifact writer links into model.so (through the kernel cache: an unchanged
// module's object is not built again).
//
// Each kernel is `void NAME(void *const *args, int64_t begin, int64_t end)`: the runtime's
// thread pool calls it on disjoint chunks of the parallel index. The body lives in an internal
// `NAME.body(ptr noalias b0, ..., i64 begin, i64 end)` so LLVM knows the buffers do not alias
// (the memory plan never hands one buffer to two arguments of a kernel); it is inlined.
//
// MatMul, Gemm and Conv worth tiling get a blocked, packed, vectorised kernel instead
// (cpu_contraction.h), whose parallel index runs over output tiles.
#include "sinter/codegen/cpu/cpu_backend.h"
#include "cpu_contraction.h"
#include "sinter/codegen/llvm/kernel_emitter.h"
#include "sinter/codegen/llvm/target_machine.h"

#include "sinter/support/error.h"

#include <llvm/Config/llvm-config.h>
#include <llvm/IR/Verifier.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/Support/raw_ostream.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>

namespace sinter::codegen {
namespace {

namespace fs = std::filesystem;

class CpuBackend final : public Backend {
public:
  explicit CpuBackend(const TargetOptions &options)
      : options_(resolved(options)), machine_(llvmgen::createX86TargetMachine(options_.cpu.level)),
        module_(std::make_unique<llvm::Module>("sinter_kernels", context_)) {
    module_->setDataLayout(machine_->createDataLayout());
    module_->setTargetTriple(machine_->getTargetTriple().str());
    // x86-64-v3 and up convert f16 in hardware; v2 gets the emitter's integer conversions.
    hasF16c_ = machine_->getMCSubtargetInfo()->checkFeatures("+f16c");
  }

  std::string name() const override { return "LLVM x86-64 (" + options_.cpu.level + ")"; }

  /// --cpu native compiles for the host's highest x86-64 level, which the manifest then names.
  static TargetOptions resolved(TargetOptions options) {
    options.cpu.level = llvmgen::resolveCpuLevel(options.cpu.level);
    return options;
  }

  package::Kernel addKernel(const LoweredGroup &group, LaunchShape &launch) override {
    const Kernel &kernel = group.kernel;
    if (std::optional<Kernel> blocked = llvmgen::addBlockedContraction(group, options_.cpu.level, *module_, launch,
                                                                             hasF16c_)) {
      emitKernelSource(kernel);
      return describeKernel(group, *blocked, "llvm-x86-blocked");
    }
    buildKernel(kernel);
    launch.parallelExtent = kernel.parallelExtent;
    emitKernelSource(kernel);
    return describeKernel(group, kernel, "llvm-x86");
  }

  /// With --emit-source: the kernel IR of the group (the naive form for a blocked kernel).
  void emitKernelSource(const Kernel &kernel) {
    if (options_.emitSourceDirectory.empty())
      return;
    fs::create_directories(options_.emitSourceDirectory);
    std::ofstream(fs::path(options_.emitSourceDirectory) / (kernel.name + ".kir")) << printKernel(kernel);
  }

  std::vector<std::string> finish(package::Manifest &manifest,
                                  const std::string &workDirectory) override {
    std::string problems;
    llvm::raw_string_ostream stream(problems);
    SINTER_ASSERT(!llvm::verifyModule(*module_, &stream), "generated LLVM IR is invalid:\n", problems);
    manifest.cpuLevel = options_.cpu.level;
    bool emit = !options_.emitSourceDirectory.empty();
    if (emit)
      writeModule(fs::path(options_.emitSourceDirectory) / "module.unoptimized.ll");
    std::string object = (fs::path(workDirectory) / "kernels.o").string();
    const ProgressCallback &progress = options_.build.progress;
    if (progress)
      progress({"LLVM O3 and object", "modules", 0, 1});
    // The kernel cache (support/kernel_cache.h): the object is keyed by the unoptimised module's
    // text, the target machine and LLVM's version, so a hit is the object LLVM would emit.
    // --emit-source needs the optimised module and its assembly, so it bypasses the cache.
    const KernelCache *cache = options_.build.cache.get();
    std::string key;
    if (cache && cache->enabled() && !emit) {
      std::string text;
      llvm::raw_string_ostream stream(text);
      module_->print(stream, nullptr);
      key = cacheKey({"llvm object", LLVM_VERSION_STRING, machine_->getTargetTriple().str(),
                      machine_->getTargetCPU().str(), machine_->getTargetFeatureString().str(), "O3", text});
      if (std::optional<std::string> bytes = cache->load(key)) {
        std::ofstream(object, std::ios::binary) << *bytes;
        if (progress)
          progress({"LLVM O3 and object", "modules", 1, 1});
        return {object};
      }
    }
    llvmgen::optimizeModule(*module_, *machine_);
    llvmgen::emitFile(*module_, *machine_, object, false);
    if (!key.empty()) {
      std::ifstream in(object, std::ios::binary);
      cache->store(key, std::string(std::istreambuf_iterator<char>(in), {}));
    }
    if (progress)
      progress({"LLVM O3 and object", "modules", 1, 1});
    if (emit) {
      writeModule(fs::path(options_.emitSourceDirectory) / "module.ll");
      llvmgen::emitFile(*module_, *machine_, (fs::path(options_.emitSourceDirectory) / "module.s").string(), true);
    }
    return {object};
  }

private:
  void writeModule(const fs::path &path) {
    std::string text;
    llvm::raw_string_ostream stream(text);
    module_->print(stream, nullptr);
    std::ofstream(path) << text;
  }

  void buildKernel(const Kernel &kernel) {
    llvm::Type *ptr = llvm::PointerType::getUnqual(context_);
    llvm::Type *i64 = llvm::Type::getInt64Ty(context_);
    llvm::Type *voidType = llvm::Type::getVoidTy(context_);

    // The body: (b0, b1, ..., begin, end), buffers noalias.
    std::vector<llvm::Type *> bodyParams(kernel.buffers.size(), ptr);
    bodyParams.push_back(i64);
    bodyParams.push_back(i64);
    auto *body = llvm::Function::Create(llvm::FunctionType::get(voidType, bodyParams, false),
                                        llvm::Function::InternalLinkage, kernel.name + ".body",
                                        module_.get());
    body->addFnAttr(llvm::Attribute::NoUnwind);
    body->addFnAttr(llvm::Attribute::AlwaysInline);
    std::vector<llvm::Value *> buffers;
    for (size_t i = 0; i < kernel.buffers.size(); ++i) {
      body->addParamAttr(unsigned(i), llvm::Attribute::NoAlias);
      if (!kernel.buffers[i].written)
        body->addParamAttr(unsigned(i), llvm::Attribute::ReadOnly);
      buffers.push_back(body->getArg(unsigned(i)));
    }
    llvm::Value *begin = body->getArg(unsigned(kernel.buffers.size()));
    llvm::Value *end = body->getArg(unsigned(kernel.buffers.size() + 1));

    llvm::IRBuilder<> b(context_);
    auto *entry = llvm::BasicBlock::Create(context_, "entry", body);
    auto *header = llvm::BasicBlock::Create(context_, "gid.loop", body);
    auto *loopBody = llvm::BasicBlock::Create(context_, "gid.body", body);
    auto *exit = llvm::BasicBlock::Create(context_, "exit", body);
    b.SetInsertPoint(entry);
    llvmgen::KernelEmitter emitter(kernel, b, *module_, buffers, llvmgen::hostMathLibrary(),
                                   hasF16c_);
    b.CreateBr(header);
    b.SetInsertPoint(header);
    llvm::PHINode *gid = b.CreatePHI(i64, 2, "gid");
    gid->addIncoming(begin, entry);
    b.CreateCondBr(b.CreateICmpSLT(gid, end), loopBody, exit);
    b.SetInsertPoint(loopBody);
    emitter.emitBody(gid);
    llvm::Value *next = b.CreateAdd(gid, b.getInt64(1), "gid.next", true, true);
    gid->addIncoming(next, b.GetInsertBlock());
    b.CreateBr(header);
    b.SetInsertPoint(exit);
    b.CreateRetVoid();

    // The entry point the runtime calls: unpack args and call the body.
    auto *wrapper = llvm::Function::Create(
        llvm::FunctionType::get(voidType, {ptr, i64, i64}, false), llvm::Function::ExternalLinkage,
        kernel.name, module_.get());
    wrapper->addFnAttr(llvm::Attribute::NoUnwind);
    b.SetInsertPoint(llvm::BasicBlock::Create(context_, "entry", wrapper));
    std::vector<llvm::Value *> arguments;
    for (size_t i = 0; i < kernel.buffers.size(); ++i)
      arguments.push_back(b.CreateLoad(ptr, b.CreateConstInBoundsGEP1_64(ptr, wrapper->getArg(0), i)));
    arguments.push_back(wrapper->getArg(1));
    arguments.push_back(wrapper->getArg(2));
    b.CreateCall(body, arguments);
    b.CreateRetVoid();
  }

  TargetOptions options_;
  llvm::LLVMContext context_;
  std::unique_ptr<llvm::TargetMachine> machine_;
  std::unique_ptr<llvm::Module> module_;
  bool hasF16c_ = false;
};

} // namespace

std::unique_ptr<Backend> createCpuBackend(const TargetOptions &options) {
  return std::make_unique<CpuBackend>(options);
}

} // namespace sinter::codegen
