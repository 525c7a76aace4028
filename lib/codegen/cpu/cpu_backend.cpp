// The CPU backend: kernel IR built as LLVM IR for x86-64, eight kernels a module, each module
// optimised at O3 and emitted as an object on the -j pool (its own LLVMContext and target
// machine, as LLVM's are not shared between threads); the artifact writer links the objects into
// model.so. Each module's object goes through the kernel cache, so a compile that changes some
// kernels builds only their modules again. Which module a kernel lands in depends on its place
// in the plan alone, never on -j, so the artifact is the same for every job count.
//
// Each kernel is `void NAME(void *const *args, int64_t begin, int64_t end)`: the runtime's
// thread pool calls it on disjoint chunks of the parallel index. The body lives in an internal
// `NAME.body(ptr noalias b0, ..., i64 begin, i64 end)` so LLVM knows the buffers do not alias
// (the memory plan never hands one buffer to two arguments of a kernel); it is inlined.
//
// MatMul, Gemm and Conv worth tiling get a blocked, packed, vectorised kernel instead
// (cpu_contraction.h), whose parallel index runs over output tiles.
//
// Kernels whose code is the same but for their names (repeated layers) are built once: the later
// ones take the first one's entry point (CpuBackend::distinct), as the CUDA backend's do.
#include "sinter/codegen/cpu/cpu_backend.h"
#include "cpu_contraction.h"
#include "sinter/codegen/llvm/kernel_emitter.h"
#include "sinter/codegen/llvm/target_machine.h"

#include "sinter/support/error.h"
#include "sinter/support/job_pool.h"

#include <llvm/Config/llvm-config.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/Verifier.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/Support/raw_ostream.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>

namespace sinter::codegen {
namespace {

namespace fs = std::filesystem;

class CpuBackend final : public Backend {
public:
  explicit CpuBackend(const TargetOptions &options)
      : options_(resolved(options)) {
    // x86-64-v3 and up convert f16 in hardware; v2 gets the emitter's integer conversions.
    hasF16c_ = llvmgen::createX86TargetMachine(options_.cpu.level)->getMCSubtargetInfo()->checkFeatures("+f16c");
  }

  std::string name() const override { return "LLVM x86-64 (" + options_.cpu.level + ")"; }

  /// --cpu native compiles for the host's highest x86-64 level, which the manifest then names.
  static TargetOptions resolved(TargetOptions options) {
    options.cpu.level = llvmgen::resolveCpuLevel(options.cpu.level);
    return options;
  }

  package::Kernel addKernel(const LoweredGroup &group, LaunchShape &launch) override {
    const Kernel &kernel = group.kernel;
    Unit &unit = unitForNextKernel();
    emitKernelSource(kernel);
    if (std::optional<Kernel> blocked = llvmgen::addBlockedContraction(group, options_.cpu.level, *unit.module, launch,
                                                                             hasF16c_))
      return distinct(describeKernel(group, *blocked, "llvm-x86-blocked"), unit);
    buildKernel(kernel, unit);
    launch.parallelExtent = kernel.parallelExtent;
    return distinct(describeKernel(group, kernel, "llvm-x86"), unit);
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
    manifest.cpuLevel = options_.cpu.level;
    if (units_.empty())
      units_.push_back(newUnit()); // a model without kernels still links one (empty) object
    for (const Unit &unit : units_) {
      std::string problems;
      llvm::raw_string_ostream stream(problems);
      SINTER_ASSERT(!llvm::verifyModule(*unit.module, &stream), "generated LLVM IR is invalid:\n", problems);
    }
    const bool emit = !options_.emitSourceDirectory.empty();
    // --emit-source: module.ll, or module0.ll, module1.ll, ... when the kernels fill several.
    auto sourcePath = [&](size_t index, const char *suffix) {
      std::string stem = units_.size() == 1 ? "module" : "module" + std::to_string(index);
      return fs::path(options_.emitSourceDirectory) / (stem + suffix);
    };
    std::vector<std::string> objects(units_.size());
    for (size_t i = 0; i < units_.size(); ++i)
      objects[i] = (fs::path(workDirectory) / ("kernels" + std::to_string(i) + ".o")).string();
    // The kernel cache (support/kernel_cache.h): each object is keyed by its unoptimised
    // module's text, the target machine and LLVM's version, so a hit is the object LLVM would
    // emit. --emit-source needs the optimised module and its assembly, so it bypasses the cache.
    const KernelCache *cache = emit ? nullptr : options_.build.cache.get();
    runReportedJobs(options_.build.progress, "LLVM O3 and object", "modules", units_.size(), options_.build.jobs,
                    [&](size_t index) {
      Unit &unit = units_[index];
      if (emit)
        writeModule(*unit.module, sourcePath(index, ".unoptimized.ll"));
      std::string key;
      if (cache && cache->enabled()) {
        std::string text;
        llvm::raw_string_ostream stream(text);
        unit.module->print(stream, nullptr);
        key = cacheKey({"llvm object", LLVM_VERSION_STRING, unit.machine->getTargetTriple().str(),
                        unit.machine->getTargetCPU().str(), unit.machine->getTargetFeatureString().str(), "O3", text});
        if (std::optional<std::string> bytes = cache->load(key)) {
          std::ofstream(objects[index], std::ios::binary) << *bytes;
          return;
        }
      }
      llvmgen::optimizeModule(*unit.module, *unit.machine);
      llvmgen::emitFile(*unit.module, *unit.machine, objects[index], false);
      if (!key.empty()) {
        std::ifstream in(objects[index], std::ios::binary);
        cache->store(key, std::string(std::istreambuf_iterator<char>(in), {}));
      }
      if (emit) {
        writeModule(*unit.module, sourcePath(index, ".ll"));
        llvmgen::emitFile(*unit.module, *unit.machine, sourcePath(index, ".s").string(), true);
      }
    });
    return objects;
  }

private:
  /// An LLVM module a job optimises and emits alone, with the context and target machine it
  /// needs (the module is destroyed before its context).
  struct Unit {
    std::unique_ptr<llvm::LLVMContext> context;
    std::unique_ptr<llvm::TargetMachine> machine;
    std::unique_ptr<llvm::Module> module;
    size_t kernels = 0;
  };

  /// Eight kernels a module, as the CUDA backend deals them: a model's modules keep the cores
  /// busy (BERT-base's 122 kernels in 16), for a few milliseconds of pass setup per module.
  static constexpr size_t kKernelsPerModule = 8;

  Unit newUnit() const {
    Unit unit;
    unit.context = std::make_unique<llvm::LLVMContext>();
    unit.machine = llvmgen::createX86TargetMachine(options_.cpu.level);
    unit.module = std::make_unique<llvm::Module>("sinter_kernels", *unit.context);
    unit.module->setDataLayout(unit.machine->createDataLayout());
    unit.module->setTargetTriple(unit.machine->getTargetTriple().str());
    return unit;
  }

  Unit &unitForNextKernel() {
    if (units_.empty() || units_.back().kernels == kKernelsPerModule)
      units_.push_back(newUnit());
    ++units_.back().kernels;
    return units_.back();
  }

  /// One kernel per distinct body: a kernel whose functions print as an earlier kernel's but for
  /// its name (a model's repeated layers: their weights and packed constants are arguments, not
  /// code), with the same ops, generator, flops and bytes, is that kernel. Its functions leave the
  /// module, it takes the earlier one's entry point, and the compile driver gives both launches
  /// one manifest entry; the launch shape (parallel extent, derived constants) stays its own.
  package::Kernel distinct(package::Kernel entry, Unit &unit) {
    std::vector<llvm::Function *> functions;
    for (llvm::Function &function : *unit.module)
      if (!function.isDeclaration() &&
          (function.getName() == entry.name || function.getName().starts_with(entry.name + ".")))
        functions.push_back(&function);
    auto [found, inserted] = distinctKernels_.emplace(distinctKernelKey(codeOf(functions), entry.name, entry), entry.name);
    if (inserted)
      return entry;
    for (llvm::Function *function : functions)
      function->dropAllReferences(); // the wrapper calls the body: unlink before erasing
    for (llvm::Function *function : functions)
      function->eraseFromParent();
    --unit.kernels;
    entry.name = found->second;
    return entry;
  }

  /// The functions' LLVM IR as it decides what they do, the same in every module: the text with
  /// the module-wide attribute group numbers (` #3`) taken out, and the attributes themselves (the
  /// functions', their parameters' and their call sites') spelled out after it.
  static std::string codeOf(const std::vector<llvm::Function *> &functions) {
    std::string code;
    auto spell = [&](const llvm::AttributeList &attributes) {
      for (unsigned index : attributes.indexes())
        code += std::to_string(index) + ":" + attributes.getAsString(index) + ";";
      code += '\n';
    };
    for (llvm::Function *function : functions) {
      std::string text;
      llvm::raw_string_ostream stream(text);
      function->print(stream);
      stream.flush();
      for (size_t i = 0; i < text.size(); ++i) {
        if (text[i] == ' ' && i + 2 < text.size() && text[i + 1] == '#' && std::isdigit(static_cast<unsigned char>(text[i + 2]))) {
          i += 2;
          while (i + 1 < text.size() && std::isdigit(static_cast<unsigned char>(text[i + 1])))
            ++i;
          continue;
        }
        code += text[i];
      }
      spell(function->getAttributes());
      for (llvm::BasicBlock &block : *function)
        for (llvm::Instruction &instruction : block)
          if (auto *call = llvm::dyn_cast<llvm::CallBase>(&instruction))
            spell(call->getAttributes());
    }
    return code;
  }

  static void writeModule(const llvm::Module &module, const fs::path &path) {
    std::string text;
    llvm::raw_string_ostream stream(text);
    module.print(stream, nullptr);
    std::ofstream(path) << text;
  }

  void buildKernel(const Kernel &kernel, Unit &unit) {
    llvm::LLVMContext &context = *unit.context;
    llvm::Module *module = unit.module.get();
    llvm::Type *ptr = llvm::PointerType::getUnqual(context);
    llvm::Type *i64 = llvm::Type::getInt64Ty(context);
    llvm::Type *voidType = llvm::Type::getVoidTy(context);

    // The body: (b0, b1, ..., begin, end), buffers noalias.
    std::vector<llvm::Type *> bodyParams(kernel.buffers.size(), ptr);
    bodyParams.push_back(i64);
    bodyParams.push_back(i64);
    auto *body = llvm::Function::Create(llvm::FunctionType::get(voidType, bodyParams, false),
                                        llvm::Function::InternalLinkage, kernel.name + ".body",
                                        module);
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

    llvm::IRBuilder<> b(context);
    auto *entry = llvm::BasicBlock::Create(context, "entry", body);
    auto *header = llvm::BasicBlock::Create(context, "gid.loop", body);
    auto *loopBody = llvm::BasicBlock::Create(context, "gid.body", body);
    auto *exit = llvm::BasicBlock::Create(context, "exit", body);
    b.SetInsertPoint(entry);
    llvmgen::KernelEmitter emitter(kernel, b, *module, buffers, llvmgen::hostMathLibrary(),
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
        kernel.name, module);
    wrapper->addFnAttr(llvm::Attribute::NoUnwind);
    b.SetInsertPoint(llvm::BasicBlock::Create(context, "entry", wrapper));
    std::vector<llvm::Value *> arguments;
    for (size_t i = 0; i < kernel.buffers.size(); ++i)
      arguments.push_back(b.CreateLoad(ptr, b.CreateConstInBoundsGEP1_64(ptr, wrapper->getArg(0), i)));
    arguments.push_back(wrapper->getArg(1));
    arguments.push_back(wrapper->getArg(2));
    b.CreateCall(body, arguments);
    b.CreateRetVoid();
  }

  TargetOptions options_;
  std::vector<Unit> units_;
  bool hasF16c_ = false;
  /// distinctKernelKey of each distinct kernel -> its entry point.
  std::map<std::string, std::string> distinctKernels_;
};

} // namespace

std::unique_ptr<Backend> createCpuBackend(const TargetOptions &options) {
  return std::make_unique<CpuBackend>(options);
}

} // namespace sinter::codegen
