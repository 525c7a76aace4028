// `sinter compile MODEL.onnx -o MODEL.so`: import, run the pass pipeline, generate and compile
// the kernels for a target, and write the artifact.
#include "commands.h"
#include "compile_flags.h"
#include "options.h"
#include "progress_line.h"

#include "sinter/compiler/compiler.h"
#include "sinter/frontend/onnx.h"
#include "sinter/ir/graph.h"
#include "sinter/support/error.h"
#include "sinter/support/kernel_cache.h"

#include <spdlog/spdlog.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

namespace sinter::cli {
namespace {

struct CompileCommandFlags {
  std::string model;
  std::string output;
  bool printPipeline = false;
  bool force = false;
  CompileFlags compile;
};

std::vector<std::string> splitList(const std::string &text) {
  std::vector<std::string> items;
  std::stringstream stream(text);
  std::string item;
  while (std::getline(stream, item, ','))
    if (!item.empty())
      items.push_back(item);
  return items;
}

/// --precision: the storage type of float32 weights and activations (kernels compute in f32),
/// and for tf32 how f32 contractions use the tensor cores.
DType parsePrecision(const std::string &precision, package::Target target,
                     codegen::CudaOptions::Fp32Contractions &fp32) {
  if (precision == "fp32")
    return DType::Float32;
  if (precision == "fp16")
    return DType::Float16;
  if (precision == "bf16")
    return DType::BFloat16;
  if (precision == "tf32") {
    if (target != package::Target::Cuda)
      userError("--precision tf32 is a CUDA tensor-core mode; with --target cpu use fp32, fp16 "
                "or bf16");
    if (fp32 == codegen::CudaOptions::Fp32Contractions::Simt)
      userError("--precision tf32 rounds the operands of f32 contractions for the tensor cores; "
                "it cannot go with --fp32-contractions simt");
    fp32 = codegen::CudaOptions::Fp32Contractions::Tf32;
    return DType::Float32;
  }
  userError("unknown --precision '", precision, "'; use fp32, tf32, fp16 or bf16");
}

/// Whether a two-way flag's value is `first`; anything but `first` or `second` is a user error
/// that names the flag and both choices.
bool isFirstChoice(const char *flag, const std::string &value, const char *first, const char *second) {
  if (value != first && value != second)
    userError("unknown ", flag, " '", value, "'; use ", first, " or ", second);
  return value == first;
}

/// --tensor-core-tile ROWSxCOLUMNS.
std::array<int, 2> parseTile(const std::string &text) {
  int rows = 0, columns = 0;
  char separator = 0, rest = 0;
  if (std::sscanf(text.c_str(), "%d%c%d%c", &rows, &separator, &columns, &rest) != 3 ||
      separator != 'x' || rows <= 0 || columns <= 0)
    userError("--tensor-core-tile '", text, "' is not ROWSxCOLUMNS, such as 128x128");
  return {rows, columns};
}

/// The sizes a `--dim` value names: "N" (one size), "A,B,C" (buckets, ascending) or "LO..HI"
/// (buckets LO, the powers of two strictly between, and HI). nullopt for a single size.
std::optional<std::vector<int64_t>> parseBuckets(const std::string &entry, const std::string &value) {
  auto number = [&](const std::string &text) {
    std::optional<int64_t> size = parseNonNegative(text);
    if (!size || *size < 1)
      userError("--dim ", entry, ": '", text, "' is not a positive integer (buckets are sizes ",
                "such as batch=1,2,4,8 or seq=16..512)");
    return *size;
  };
  std::vector<int64_t> buckets;
  if (size_t dots = value.find(".."); dots != std::string::npos) {
    int64_t low = number(value.substr(0, dots)), high = number(value.substr(dots + 2));
    if (high < low)
      userError("--dim ", entry, ": the range ends below where it starts");
    buckets.push_back(low);
    for (int64_t power = 1; power < high; power *= 2)
      if (power > low)
        buckets.push_back(power);
    if (high > low)
      buckets.push_back(high);
  } else if (value.find(',') != std::string::npos) {
    for (const std::string &item : splitList(value))
      buckets.push_back(number(item));
    for (size_t i = 1; i < buckets.size(); ++i)
      if (buckets[i] <= buckets[i - 1])
        userError("--dim ", entry, ": list the buckets once each, in ascending order");
  } else {
    return std::nullopt;
  }
  if (buckets.size() > kMaxPlans)
    userError("--dim ", entry, ": ", buckets.size(), " buckets (at most ", kMaxPlans, ")");
  return buckets;
}

/// Takes the bucketed `--dim`s (lists and ranges) out of the shape flags, with the graph inputs'
/// axes that carry each symbol (from the model's declared input types).
std::vector<DimBuckets> takeDimBuckets(ShapeFlags &shapes, const std::string &modelPath) {
  std::vector<DimBuckets> buckets;
  std::vector<std::string> single;
  for (const std::string &entry : shapes.dims) {
    size_t equals = entry.find('=');
    std::optional<std::vector<int64_t>> sizes =
        equals == std::string::npos ? std::nullopt : parseBuckets(entry, entry.substr(equals + 1));
    if (!sizes) {
      single.push_back(entry);
      continue;
    }
    std::string symbol = entry.substr(0, equals);
    for (const DimBuckets &seen : buckets)
      if (seen.symbol == symbol)
        userError("--dim binds '", symbol, "' twice");
    buckets.push_back({symbol, *sizes, {}});
  }
  if (buckets.empty())
    return buckets;
  shapes.dims = single;
  onnx::ModelSummary summary = onnx::summarizeModel(modelPath);
  for (const onnx::ModelSummary::Port &port : summary.inputs) {
    size_t open = port.type.find('[');
    if (open == std::string::npos || port.type.back() != ']')
      continue;
    std::vector<std::string> dims;
    std::stringstream stream(port.type.substr(open + 1, port.type.size() - open - 2));
    for (std::string dim; std::getline(stream, dim, ',');)
      dims.push_back(dim);
    for (DimBuckets &symbol : buckets)
      for (size_t axis = 0; axis < dims.size(); ++axis)
        if (dims[axis] == symbol.symbol)
          symbol.origins.push_back({port.name, int(axis)});
  }
  for (const std::string &shape : shapes.shapes)
    for (const DimBuckets &symbol : buckets)
      for (const DimOrigin &origin : symbol.origins)
        if (shape.rfind(origin.input + "=", 0) == 0)
          userError("--shape ", shape, " fixes input '", origin.input, "', whose dim ",
                    origin.axis, " is the bucketed symbol '", symbol.symbol, "'");
  return buckets;
}

} // namespace

CompileOptions compileOptionsFrom(const CompileFlags &flags) {
  CompileOptions options;
  options.target.target =
      isFirstChoice("--target", flags.target, "cpu", "cuda") ? package::Target::Cpu : package::Target::Cuda;
  options.target.cuda.archs = splitList(flags.archs);
  options.target.cpu.levels = splitList(flags.cpu);
  isFirstChoice("--gpu-codegen", flags.gpuCodegen, "cuda-c", "llvm");
  options.target.cuda.gpuCodegen = flags.gpuCodegen;
  options.target.emitSourceDirectory = flags.emitSource;
  options.target.cuda.fp32Contractions = isFirstChoice("--fp32-contractions", flags.fp32Contractions, "tensor-core", "simt")
                                             ? codegen::CudaOptions::Fp32Contractions::Tf32x3
                                             : codegen::CudaOptions::Fp32Contractions::Simt;
  options.target.cuda.warpgroupMma = isFirstChoice("--wgmma", flags.wgmma, "on", "off");
  options.target.cuda.streamK = isFirstChoice("--stream-k", flags.streamK, "auto", "off");
  options.target.cuda.rowWalkEpilogue = isFirstChoice("--tensor-core-epilogue", flags.tensorCoreEpilogue, "rows", "fragments");
  options.target.cuda.directDepthwise = isFirstChoice("--depthwise-kernel", flags.depthwiseKernel, "direct", "generic");
  if (!flags.tensorCoreTile.empty()) {
    if (options.target.target != package::Target::Cuda)
      userError("--tensor-core-tile chooses the CUDA tensor-core tile; it has no meaning with --target cpu");
    options.target.cuda.tensorCoreTile = parseTile(flags.tensorCoreTile);
  }
  options.pipeline.precision = parsePrecision(flags.precision, options.target.target,
                                              options.target.cuda.fp32Contractions);
  // auto: stored with fp16 (torch's model.half() keeps the residual stream in f16, and f16's
  // 11 bits hold it to about 1e-3), f32 with bf16 (8 bits would not).
  if (flags.normInputs != "auto" && flags.normInputs != "f32" && flags.normInputs != "stored")
    userError("unknown --norm-inputs '", flags.normInputs, "'; use auto, f32 or stored");
  if (flags.normInputs == "auto") {
    options.pipeline.pinNormalizationInputs = options.pipeline.precision != DType::Float16;
  } else {
    options.pipeline.pinNormalizationInputs = flags.normInputs == "f32";
    if (!options.pipeline.pinNormalizationInputs && options.pipeline.precision == DType::Float32)
      userError("--norm-inputs stored chooses what 16-bit storage does with normalisation inputs; it has no "
                "meaning without --precision fp16 or bf16");
  }
  options.pipeline.disabled.insert(flags.disabledPasses.begin(), flags.disabledPasses.end());
  options.pipeline.dumpAfter = flags.dumpIrAfter;
  options.pipeline.dumpStream = &std::cerr;
  options.target.build.progress = ProgressLine::forStderr();
  options.target.build.jobs = flags.jobs;
  if (!flags.noCache) {
    std::string directory = flags.cacheDirectory.empty() ? defaultCacheDirectory() : flags.cacheDirectory;
    if (!directory.empty())
      options.target.build.cache = std::make_shared<KernelCache>(directory);
  }

  return options;
}

std::vector<std::pair<std::string, std::string>> describeCompileFlags(const CompileFlags &flags) {
  std::vector<std::pair<std::string, std::string>> described = {
      {"--target", flags.target},
      {"--arch", flags.archs},
      {"--cpu", flags.cpu},
      {"--gpu-codegen", flags.gpuCodegen},
      {"--precision", flags.precision},
      {"--norm-inputs", flags.normInputs},
      {"--fp32-contractions", flags.fp32Contractions},
      {"--tensor-core-tile", flags.tensorCoreTile},
      {"--wgmma", flags.wgmma},
      {"--stream-k", flags.streamK},
      {"--tensor-core-epilogue", flags.tensorCoreEpilogue},
      {"--depthwise-kernel", flags.depthwiseKernel},
  };
  for (const std::string &pass : flags.disabledPasses)
    described.emplace_back("--disable-pass", pass);
  for (const std::string &shape : flags.shapes.shapes)
    described.emplace_back("--shape", shape);
  for (const std::string &dim : flags.shapes.dims)
    described.emplace_back("--dim", dim);
  return described;
}

namespace {

void runCompile(const CompileCommandFlags &command) {
  namespace fs = std::filesystem;
  using Clock = std::chrono::steady_clock;
  const CompileFlags &flags = command.compile;
  if (command.printPipeline) {
    std::cout << describePipeline();
    if (command.model.empty())
      return;
  }
  if (command.model.empty())
    userError("compile needs a model: sinter compile MODEL.onnx -o MODEL.so");
  if (command.output.empty())
    userError("compile needs an output path: -o MODEL.so");
  if (fs::exists(command.output) && !command.force)
    userError(command.output, " exists; pass --force to replace it");
  if (classifyModelFile(command.model) != ModelKind::Onnx)
    userError(command.model, " is not an ONNX model");
  CompileOptions options = compileOptionsFrom(flags);

  auto start = Clock::now();
  ShapeFlags shapes = flags.shapes;
  std::vector<DimBuckets> buckets = takeDimBuckets(shapes, command.model);
  onnx::ImportOptions importOptions = parseShapeFlags(shapes);
  parseBindFlags(flags.bindings, importOptions);
  for (const auto &[name, bound] : importOptions.boundInputs)
    options.boundInputs.emplace(name, bound.value);
  CompileStatistics stats;
  double importSeconds = 0;
  if (buckets.empty()) {
    std::unique_ptr<Graph> graph = onnx::importModel(command.model, importOptions);
    importSeconds = std::chrono::duration<double>(Clock::now() - start).count();
    spdlog::info("imported {}: {} nodes, {} constants ({:.2f} s)", command.model,
                 graph->numNodes(), graph->constants().size(), importSeconds);
    stats = compileGraph(*graph, options, command.output);
  } else {
    // One import per plan, with the bucketed symbols bound to that plan's sizes.
    GraphImporter importAt = [&](const std::map<std::string, int64_t> &sizes) {
      auto importStart = Clock::now();
      onnx::ImportOptions planOptions = importOptions;
      for (const auto &[symbol, size] : sizes) {
        if (planOptions.dimBindings.count(symbol))
          userError("--dim binds '", symbol, "' twice");
        planOptions.dimBindings[symbol] = size;
      }
      std::unique_ptr<Graph> graph = onnx::importModel(command.model, planOptions);
      importSeconds += std::chrono::duration<double>(Clock::now() - importStart).count();
      return graph;
    };
    stats = compileBucketedGraphs(importAt, buckets, options, command.output);
  }
  double totalSeconds = std::chrono::duration<double>(Clock::now() - start).count();
  spdlog::info("wrote {}: {} kernels ({} distinct) from {} nodes; arena {} (activations {}), weights {}",
               command.output, stats.kernelCount, stats.distinctKernelCount, stats.sourceNodeCount,
               humanBytes(int64_t(stats.arenaBytes)), humanBytes(int64_t(stats.activationBytes)),
               humanBytes(int64_t(stats.weightBytes)));
  if (options.target.build.cache && stats.cacheHits + stats.cacheMisses > 0) {
    uint64_t units = stats.cacheHits + stats.cacheMisses;
    spdlog::info("kernel cache {}: {} of {} toolchain units from the cache{}",
                 options.target.build.cache->directory(), stats.cacheHits, units,
                 stats.cacheCorrupt ? fmt::format(" ({} damaged entries rebuilt)", stats.cacheCorrupt) : "");
  }
  spdlog::info("time: import {:.2f} s, passes {:.2f} s, codegen {:.2f} s, plan {:.2f} s, backend {:.2f} s, "
               "write {:.2f} s, total {:.2f} s",
               importSeconds, stats.passSeconds, stats.codegenSeconds, stats.planSeconds, stats.finishSeconds,
               stats.writeSeconds, totalSeconds);
}

} // namespace

void addCompileFlags(CLI::App &command, CompileFlags &flags) {
  command.add_option("--target", flags.target, "cuda (default) or cpu")->capture_default_str();
  command.add_option("--arch", flags.archs, "CUDA architectures to build SASS for, comma-separated; PTX of the oldest is added for newer GPUs")
      ->capture_default_str();
  command.add_option("--cpu", flags.cpu, "CPU target: the x86-64 levels to build kernels for, comma-separated (x86-64-v2, x86-64-v3, x86-64-v4; the runtime runs the best the CPU has), or native (this machine's level alone)")
      ->capture_default_str();
  command.add_option("--gpu-codegen", flags.gpuCodegen, "CUDA target: cuda-c (CUDA C through NVRTC, the default) or llvm (LLVM's NVPTX backend; groups it cannot lower yet use cuda-c)")
      ->capture_default_str();
  command.add_option("--precision", flags.precision,
                      "Storage of float32 weights and activations: fp32 (default), fp16 or bf16 "
                      "(f32 math; contractions on tensor cores; docs/precision.md); tf32: fp32 "
                      "storage, contraction operands rounded to tf32 (CUDA only)")
      ->capture_default_str();
  command.add_option("--norm-inputs", flags.normInputs,
                      "With --precision fp16|bf16: LayerNorm and the other normalisations that "
                      "subtract a mean read inputs computed and stored in f32 (f32: a "
                      "transformer's residual stream stays f32) or in the storage precision "
                      "(stored: the residual stream in 16 bits, as torch's model.half() keeps it); "
                      "auto (the default): stored with fp16, f32 with bf16")
      ->capture_default_str();
  command.add_option("--fp32-contractions", flags.fp32Contractions,
                      "CUDA, sm_80+: f32 contractions on tensor-core (default: operands as tf32 "
                      "pairs, fp32 accuracy) or simt (f32 FMA); docs/precision.md")
      ->capture_default_str();
  command.add_option("--tensor-core-tile", flags.tensorCoreTile,
                      "CUDA: every tensor-core contraction uses this block tile (ROWSxCOLUMNS, "
                      "e.g. 96x128) instead of the one sinter chooses; for tuning and ablations")
      ->type_name("ROWSxCOLUMNS");
  command.add_option("--wgmma", flags.wgmma,
                      "CUDA with sm_90 in --arch: 16-bit contractions on warpgroup MMA in the sm_90 "
                      "code, built for sm_90a (on, the default) or on mma.sync only (off)")
      ->capture_default_str();
  command.add_option("--stream-k", flags.streamK,
                      "CUDA wgmma contractions with long reductions whose tiles leave part of a round "
                      "of blocks over split the leftover tiles into parts of their reductions, a block "
                      "a part (auto, the default), or keep a block per tile (off)")
      ->capture_default_str();
  command.add_option("--tensor-core-epilogue", flags.tensorCoreEpilogue,
                      "CUDA: tensor-core epilogues walk the tile by rows through shared memory "
                      "(rows, the default) or each thread its own accumulators (fragments); for "
                      "ablations")
      ->capture_default_str();
  command.add_option("--depthwise-kernel", flags.depthwiseKernel,
                      "CUDA: depthwise convolutions run as a direct kernel over planes staged in shared "
                      "memory (direct, the default) or as the generic kernel, a thread an output "
                      "(generic); for ablations")
      ->capture_default_str();
  command.add_option("--emit-source", flags.emitSource, "Write the generated code, kernel by kernel, here")
      ->type_name("DIR");
  command.add_option("--dump-ir-after", flags.dumpIrAfter, "Print the IR after PASS (or all) to stderr")
      ->type_name("PASS|all");
  addRepeatableOption(command, "--disable-pass", flags.disabledPasses, "Skip a pass", "PASS");
  command.add_option("-j,--jobs", flags.jobs,
                     "Toolchain runs (NVRTC, ptxas) at once; 0 (the default): one per core. The "
                     "artifact is the same for every value")
      ->type_name("N");
  command.add_flag("--no-cache", flags.noCache,
                   "Neither read nor write the kernel cache (the artifact is the same either way)");
  command.add_option("--cache-dir", flags.cacheDirectory,
                     "The kernel cache's folder (default $SINTER_CACHE_DIR, else "
                     "$XDG_CACHE_HOME/sinter, else ~/.cache/sinter)")
      ->type_name("DIR");
  addShapeFlags(command, flags.shapes);
  addBindFlags(command, flags.bindings);
}

Command addCompileCommand(CLI::App &parent) {
  auto flags = std::make_shared<CompileCommandFlags>();
  CLI::App *command = parent.add_subcommand("compile", "Compile an ONNX model into model.so");
  command->add_option("model", flags->model, "The ONNX model")->type_name("MODEL.onnx");
  command->add_option("-o,--output", flags->output, "The artifact to write")->type_name("MODEL.so");
  addCompileFlags(*command, flags->compile);
  command->add_flag("--print-pipeline", flags->printPipeline, "Print the pass pipeline and its reasons");
  command->add_flag("--force", flags->force, "Replace an existing output file");
  return {command, [flags] { runCompile(*flags); }};
}

} // namespace sinter::cli
