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
// (cpu_contraction.h), whose parallel index runs over output tiles; depthwise convolutions get a
// direct kernel over bands of their planes, as do MaxPool and AveragePool (cpu_plane_window.h);
// a Concat that reads its inputs directly is block copies (cpu_copy.h); an elementwise kernel
// whose indices divide the flat index runs in rows, its indices computed once a row (cpu_rows.h).
//
// Kernels whose code is the same but for their names (repeated layers) are built once: the later
// ones take the first one's entry point (CpuBackend::isDistinct), as the CUDA backend's do.
//
// An artifact carries kernels for one or several x86-64 levels (--cpu; by default v2, v3 and
// v4), and the runtime runs the best one the CPU has. Every level's kernels come from the same
// plan (one launch shape and one set of packed constants a launch: cpu_contraction.h), each
// level in modules of its own with its own target machine; with several levels each entry point
// is named for its level (package::cpuKernelSymbol).
#include "sinter/codegen/cpu/cpu_backend.h"
#include "cpu_contraction.h"
#include "cpu_copy.h"
#include "cpu_plane_window.h"
#include "cpu_rows.h"
#include "cpu_kernel_frame.h"
#include "sinter/codegen/llvm/kernel_emitter.h"
#include "sinter/codegen/llvm/target_machine.h"

#include "sinter/package/format.h"
#include "sinter/support/error.h"
#include "sinter/support/job_pool.h"

#include <llvm/Config/llvm-config.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/Verifier.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
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
  explicit CpuBackend(const TargetOptions &options) : levels_(resolvedLevels(options.cpu.levels)), options_(options) {
    for (const std::string &level : levels_) {
      // x86-64-v3 and up convert f16 in hardware; v2 gets the emitter's integer conversions.
      hasF16c_.push_back(llvmgen::createX86TargetMachine(level)->getMCSubtargetInfo()->checkFeatures("+f16c"));
      units_.emplace_back();
    }
  }

  /// Contractions read their run-time operands directly or through views: see
  /// BackendCapabilities::deepPrologues.
  BackendCapabilities capabilities() const override {
    BackendCapabilities capabilities;
    capabilities.deepPrologues = false;
    return capabilities;
  }

  std::string name() const override { return "LLVM x86-64 (" + package::joinedCpuLevels(levels_) + ")"; }

  /// The levels resolved (--cpu native is the host's highest x86-64 level, which the manifest
  /// then names), ascending, each once.
  static std::vector<std::string> resolvedLevels(const std::vector<std::string> &requested) {
    std::vector<std::string> levels;
    for (const std::string &level : requested)
      levels.push_back(llvmgen::resolveCpuLevel(level)); // the constructor's target machines refuse other names
    std::sort(levels.begin(), levels.end());
    levels.erase(std::unique(levels.begin(), levels.end()), levels.end());
    if (levels.empty())
      userError("--cpu names no x86-64 level; use x86-64-v2, x86-64-v3, x86-64-v4 or native");
    return levels;
  }

  /// The kernel for the first level, then, when its body is new, for every other level: one plan
  /// (the launch shape, packed constants) serves them all.
  package::Kernel addKernel(const LoweredGroup &lowered, LaunchShape &launch) override {
    emitKernelSource(lowered.kernel);
    const LoweredGroup group = withSimplifiedIndices(lowered);
    const Kernel &kernel = group.kernel;
    std::optional<llvmgen::PlaneWindow> window = llvmgen::planDepthwiseConvolution(group, launch);
    const char *windowGenerator = "llvm-x86-depthwise";
    if (!window) {
      window = llvmgen::planPooling(group, launch);
      windowGenerator = "llvm-x86-pool";
    }
    std::optional<llvmgen::BlockedContraction> blocked =
        window ? std::nullopt : llvmgen::planBlockedContraction(group, launch);
    const bool copies = !window && !blocked && llvmgen::planConcatenation(group, launch);
    // The rest is the generic kernel: flat, or in rows where that takes divisions out (cpu_rows.h).
    const bool generic = !blocked && !window && !copies;
    std::optional<llvmgen::RowKernel> rows = generic ? llvmgen::splitIntoRows(kernel) : std::nullopt;
    const Kernel &genericKernel = rows ? rows->kernel : kernel;
    if (generic)
      launch.parallelExtent = genericKernel.parallelExtent;
    if (rows)
      launch.derivedConstants = std::move(rows->columnTables);
    auto build = [&](size_t level, Unit &unit) {
      if (copies)
        return llvmgen::emitConcatenation(group, *unit.module);
      if (window)
        return llvmgen::emitPlaneWindow(group, *window, levels_[level], *unit.module, hasF16c_[level]);
      if (blocked)
        return llvmgen::emitBlockedContraction(group, *blocked, levels_[level], *unit.module, hasF16c_[level]);
      buildKernel(genericKernel, unit, hasF16c_[level]);
      return genericKernel;
    };
    Unit &first = unitForNextKernel();
    const char *generator = window ? windowGenerator : blocked ? "llvm-x86-blocked" : copies ? "llvm-x86-copy" : rows ? "llvm-x86-rows" : "llvm-x86";
    package::Kernel entry = describeKernel(group, build(0, first), generator);
    if (!isDistinct(entry, first))
      return entry;
    for (size_t level = 1; level < levels_.size(); ++level)
      build(level, units_[level].back());
    entryPoints_.push_back(entry.name);
    return entry;
  }

  /// The group's kernel IR with the index arithmetic its ranges decide simplified
  /// (IndexRanges::simplify): LLVM does not know a flattened index's variables' ranges, so
  /// bias[(i * n + j) % n] in a GEMM's epilogue or a reshape's div/rem chain in a copy would cost
  /// a division per element, and keep the loop vectorizer off the loop.
  static LoweredGroup withSimplifiedIndices(const LoweredGroup &group) {
    LoweredGroup simplified = group;
    simplified.kernel = codegen::withSimplifiedIndices(group.kernel);
    if (group.contraction)
      simplified.contraction = codegen::withSimplifiedIndices(*group.contraction);
    if (group.pooling) {
      IndexRanges ranges(group.pooling->kernel);
      ranges.setVariable(group.pooling->image, {0, group.pooling->images - 1});
      ranges.setVariable(group.pooling->channel, {0, group.pooling->channels - 1});
      int64_t positions = 1;
      for (int64_t extent : group.pooling->geometry.output)
        positions *= extent;
      ranges.setVariable(group.pooling->position, {0, positions - 1});
      for (StmtRef &statement : simplified.pooling->epilogue)
        statement = ranges.simplify(statement);
    }
    return simplified;
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
    manifest.cpuLevels = levels_;
    if (units_[0].empty())
      for (size_t level = 0; level < levels_.size(); ++level)
        units_[level].push_back(newUnit(levels_[level])); // a model without kernels still links one (empty) object
    // Each level's entry points take the names the runtime looks up (package::cpuKernelSymbol).
    for (size_t level = 0; level < levels_.size(); ++level)
      for (Unit &unit : units_[level])
        for (const std::string &name : entryPoints_)
          if (llvm::Function *function = unit.module->getFunction(name))
            function->setName(package::cpuKernelSymbol(name, levels_[level], levels_.size()));
    struct Job {
      Unit *unit;
      std::string level;
      size_t index; ///< the module's place in its level
    };
    std::vector<Job> jobs;
    for (size_t level = 0; level < levels_.size(); ++level)
      for (size_t index = 0; index < units_[level].size(); ++index)
        jobs.push_back({&units_[level][index], levels_[level], index});
    for (const Job &job : jobs) {
      std::string problems;
      llvm::raw_string_ostream stream(problems);
      SINTER_ASSERT(!llvm::verifyModule(*job.unit->module, &stream), "generated LLVM IR is invalid:\n", problems);
    }
    const bool emit = !options_.emitSourceDirectory.empty();
    // --emit-source: module.ll, or module0.ll, module1.ll, ... when the kernels fill several;
    // with several levels each name starts with its level ("x86-64-v3.module.ll").
    const size_t modulesPerLevel = units_[0].size();
    auto sourcePath = [&](const Job &job, const char *suffix) {
      std::string stem = modulesPerLevel == 1 ? "module" : "module" + std::to_string(job.index);
      if (levels_.size() > 1)
        stem = job.level + "." + stem;
      return fs::path(options_.emitSourceDirectory) / (stem + suffix);
    };
    std::vector<std::string> objects(jobs.size());
    for (size_t i = 0; i < jobs.size(); ++i)
      objects[i] = (fs::path(workDirectory) / ("kernels" + std::to_string(i) + ".o")).string();
    // The kernel cache (support/kernel_cache.h): each object is keyed by its unoptimised
    // module's text, the target machine and LLVM's version, so a hit is the object LLVM would
    // emit. --emit-source needs the optimised module and its assembly, so it bypasses the cache.
    const KernelCache *cache = emit ? nullptr : options_.build.cache.get();
    runReportedJobs(options_.build.progress, "LLVM O3 and object", "modules", jobs.size(), options_.build.jobs,
                    [&](size_t index) {
      Unit &unit = *jobs[index].unit;
      if (emit)
        writeModule(*unit.module, sourcePath(jobs[index], ".unoptimized.ll"));
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
        writeModule(*unit.module, sourcePath(jobs[index], ".ll"));
        llvmgen::emitFile(*unit.module, *unit.machine, sourcePath(jobs[index], ".s").string(), true);
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

  static Unit newUnit(const std::string &level) {
    Unit unit;
    unit.context = std::make_unique<llvm::LLVMContext>();
    unit.machine = llvmgen::createX86TargetMachine(level);
    unit.module = std::make_unique<llvm::Module>("sinter_kernels", *unit.context);
    unit.module->setDataLayout(unit.machine->createDataLayout());
    unit.module->setTargetTriple(unit.machine->getTargetTriple().str());
    return unit;
  }

  /// The first level's module for the next kernel; every level starts a module at the same
  /// kernel, so their modules hold the same kernels.
  Unit &unitForNextKernel() {
    if (units_[0].empty() || units_[0].back().kernels == kKernelsPerModule)
      for (size_t level = 0; level < levels_.size(); ++level)
        units_[level].push_back(newUnit(levels_[level]));
    ++units_[0].back().kernels;
    return units_[0].back();
  }

  /// One kernel per distinct body: a kernel whose functions print as an earlier kernel's but for
  /// its name (a model's repeated layers: their weights and packed constants are arguments, not
  /// code), with the same ops, generator, flops and bytes, is that kernel. Its functions leave the
  /// module, it takes the earlier one's entry point (`entry.name`), and the compile driver gives
  /// both launches one manifest entry; the launch shape (parallel extent, derived constants) stays
  /// its own. Returns whether the kernel is new. Decided at the first level, for all of them.
  bool isDistinct(package::Kernel &entry, Unit &unit) {
    std::vector<llvm::Function *> functions;
    for (llvm::Function &function : *unit.module)
      if (!function.isDeclaration() &&
          (function.getName() == entry.name || function.getName().starts_with(entry.name + ".")))
        functions.push_back(&function);
    auto [found, inserted] = distinctKernels_.emplace(distinctKernelKey(codeOf(functions), entry.name, entry), entry.name);
    if (inserted)
      return true;
    for (llvm::Function *function : functions)
      function->dropAllReferences(); // the wrapper calls the body: unlink before erasing
    for (llvm::Function *function : functions)
      function->eraseFromParent();
    --unit.kernels;
    entry.name = found->second;
    return false;
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

  static void buildKernel(const Kernel &kernel, Unit &unit, bool hasF16c) {
    llvm::LLVMContext &context = *unit.context;
    llvm::Module *module = unit.module.get();
    llvm::Type *i64 = llvm::Type::getInt64Ty(context);

    // The body: (b0, b1, ..., begin, end), buffers noalias.
    llvm::Function *body = llvmgen::createKernelBody(*module, kernel.name, kernel.buffers.size(),
                                                     [&](size_t i) { return kernel.buffers[i].written; });
    std::vector<llvm::Value *> buffers;
    for (size_t i = 0; i < kernel.buffers.size(); ++i)
      buffers.push_back(body->getArg(unsigned(i)));
    llvm::Value *begin = body->getArg(unsigned(kernel.buffers.size()));
    llvm::Value *end = body->getArg(unsigned(kernel.buffers.size() + 1));

    llvm::IRBuilder<> b(context);
    auto *entry = llvm::BasicBlock::Create(context, "entry", body);
    auto *header = llvm::BasicBlock::Create(context, "gid.loop", body);
    auto *loopBody = llvm::BasicBlock::Create(context, "gid.body", body);
    auto *exit = llvm::BasicBlock::Create(context, "exit", body);
    b.SetInsertPoint(entry);
    llvmgen::KernelEmitter emitter(kernel, b, *module, buffers, llvmgen::hostMathLibrary(), hasF16c);
    emitter.keepContiguousReductionsRolled();
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

    llvmgen::emitEntryPoint(*module, body, kernel.name, kernel.buffers.size());
  }

  std::vector<std::string> levels_; ///< resolved, ascending
  TargetOptions options_;
  std::vector<bool> hasF16c_;           ///< per level
  std::vector<std::vector<Unit>> units_; ///< per level, its modules (the same kernels at each level)
  std::vector<std::string> entryPoints_; ///< the distinct kernels' names
  /// distinctKernelKey of each distinct kernel -> its entry point.
  std::map<std::string, std::string> distinctKernels_;
};

} // namespace

std::unique_ptr<Backend> createCpuBackend(const TargetOptions &options) {
  return std::make_unique<CpuBackend>(options);
}

} // namespace sinter::codegen
