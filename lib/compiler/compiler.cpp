#include "sinter/compiler/compiler.h"

#include "sinter/codegen/fusion.h"
#include "sinter/codegen/lowering.h"
#include "sinter/codegen/memory_plan.h"
#include "sinter/ir/data_dependence.h"
#include "sinter/ir/graph.h"
#include "sinter/ir/infer.h"
#include "sinter/package/format.h"
#include "sinter/package/writer.h"
#include "sinter/support/error.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>

#include <unistd.h>

namespace sinter {

namespace {

using Clock = std::chrono::steady_clock;
double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// Every dim of every value must be static to compile: the artifact is specialised to shapes.
void requireStaticShapes(const Graph &graph) {
  std::string symbolic;
  for (Value *input : graph.inputs())
    if (!isStatic(input->shape()))
      symbolic += "\n  " + input->name() + ": " + input->type().str();
  if (!symbolic.empty())
    userError("every input dim must be known to compile; these inputs have symbolic or unknown "
              "dims:",
              symbolic, "\nfix them with --dim SYMBOL=N or --shape NAME=AxBxC");
  for (const auto &node : graph.nodes())
    for (Value *output : node->outputs())
      if (!isStatic(output->shape())) {
        // Name the graph inputs whose data the shape needs, so the user (or a test runner) can
        // bind exactly those.
        std::vector<const Value *> needed;
        for (int i : unresolvedValueInputs(*node))
          needed.push_back(node->input(i));
        userError(node->describe(), " produces '", output->name(), "' of type ",
                  output->type().str(),
                  " whose shape depends on data; sinter compiles static shapes only",
                  bindInputHint(graphInputsFeeding(needed)));
      }
}

uint64_t byteSizeOf(const Value *value) {
  return uint64_t(*elementCount(value->shape())) * dtypeSize(value->dtype());
}

bool isView(OpKind kind) {
  return kind == OpKind::Reshape || kind == OpKind::Flatten || kind == OpKind::Squeeze ||
         kind == OpKind::Unsqueeze || kind == OpKind::Identity;
}

/// The value a group of views only reinterprets (the same bytes under another shape), or null
/// when the group computes something. Such a group needs no kernel: its output shares the
/// source's arena slot (DESIGN.md: views never copy).
const Value *viewSource(const codegen::KernelGroup &group) {
  if (group.outputs.size() != 1)
    return nullptr;
  for (const Node *node : group.nodes)
    if (!isView(node->kind()))
      return nullptr;
  const Value *source = nullptr;
  for (const Value *input : group.inputs) {
    if (input->isConstant())
      continue; // a Reshape's shape
    if (source)
      return nullptr;
    source = input;
  }
  const Value *output = group.outputs[0];
  if (!source || source->dtype() != output->dtype() || byteSizeOf(source) != byteSizeOf(output))
    return nullptr;
  return source;
}

package::TensorSignature signatureOf(const Value *value, const Shape &declared) {
  package::TensorSignature signature;
  signature.name = value->name();
  signature.dtype = value->dtype();
  signature.dims = staticDims(value->shape());
  for (const Dim &dim : declared)
    signature.dimSymbols.push_back(dim.isSymbol() ? dim.symbolName() : "");
  return signature;
}

/// Appends bytes to the weights blob at the next aligned offset; returns the offset.
uint64_t appendWeights(package::Manifest &manifest, const void *data, uint64_t bytes,
                       const std::string &name) {
  uint64_t offset = (manifest.weights.size() + package::kWeightAlignment - 1) /
                    package::kWeightAlignment * package::kWeightAlignment;
  manifest.weights.resize(offset + bytes);
  std::copy(static_cast<const uint8_t *>(data), static_cast<const uint8_t *>(data) + bytes,
            manifest.weights.begin() + offset);
  manifest.weightTable.push_back({name, offset, bytes});
  return offset;
}

} // namespace

package::Manifest buildManifest(Graph &graph, const CompileOptions &options,
                                const std::string &workDirectory,
                                std::vector<std::string> &objectFiles, CompileStatistics &stats) {
  auto report = [&](const std::string &message) {
    if (options.progress)
      options.progress(message);
  };
  package::Manifest manifest;
  manifest.target = options.target.target;
  manifest.producer = "sinter 0.1.0";
  manifest.storagePrecision = options.pipeline.precision;
  manifest.sourceNodeCount = graph.numNodes();
  stats.sourceNodeCount = graph.numNodes();
  for (const auto &[name, value] : options.boundInputs) {
    package::BoundInput bound{name, value.dtype(), value.dims(), 0, {}};
    std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t *>(value.data()), value.byteSize());
    bound.valueHash = package::hashBytes(bytes);
    if (bytes.size() <= package::kMaxRecordedBoundBytes)
      bound.value.assign(bytes.begin(), bytes.end());
    manifest.boundInputs.push_back(std::move(bound));
  }
  if (manifest.target == package::Target::Cpu)
    manifest.cpuLevel = options.target.cpuLevel;
  else
    manifest.cudaArchs = options.target.cudaArchs;

  // The declared input shapes (with their symbols) before passes, for the signature.
  std::map<std::string, Shape> declared;
  for (Value *input : graph.inputs())
    declared[input->name()] = input->shape();

  auto passStart = Clock::now();
  requireStaticShapes(graph);
  // Kernel fusion is planned in code generation, not a graph pass, but is disabled the same way.
  PipelineOptions pipeline = options.pipeline;
  bool fuseKernels = pipeline.disabled.erase(std::string(kFuseKernels)) == 0;
  // The fused attention kernel multiplies 16-bit operands; float32 attention keeps its products
  // on the tf32 tensor-core kernels, and the CPU its blocked ones (docs/attention.md).
  pipeline.fusedAttention = manifest.target != package::Target::Cpu &&
                            (pipeline.precision == DType::Float16 || pipeline.precision == DType::BFloat16);
  runPipeline(graph, pipeline);
  stats.passSeconds = secondsSince(passStart);

  // Kernel groups (fusion.h), unless --disable-pass fuse-kernels asks for one kernel per node.
  std::vector<codegen::KernelGroup> groups = codegen::formKernelGroups(graph, fuseKernels);

  // Views share their source's slot: `storage` maps each aliasing value to the value that owns
  // the bytes, whose lifetime then covers every alias's.
  std::map<const Value *, const Value *> storage;
  std::vector<bool> viewGroup(groups.size(), false);
  auto storageOf = [&](const Value *value) {
    auto it = storage.find(value);
    return it == storage.end() ? value : it->second;
  };
  for (size_t i = 0; i < groups.size(); ++i) {
    if (const Value *source = viewSource(groups[i])) {
      storage[groups[i].outputs[0]] = storageOf(source);
      viewGroup[i] = true;
    }
  }

  // Lowering comes before memory planning: a kernel may ask for scratch buffers, which live in
  // the arena for its own step only.
  auto codegenStart = Clock::now();
  std::vector<codegen::Kernel> kernels(groups.size());
  for (size_t i = 0; i < groups.size(); ++i) {
    if (viewGroup[i])
      continue; // no kernel: its output is its source's bytes
    if (i % 50 == 0)
      report("generating kernel " + std::to_string(i + 1) + "/" + std::to_string(groups.size()));
    kernels[i] = codegen::lowerGroup(groups[i]);
  }
  double loweringSeconds = secondsSince(codegenStart);

  // Memory: constants go to the weights blob; everything else lives in the arena.
  std::map<const Value *, package::BufferRef> location;
  for (Value *constant : graph.constants()) {
    if (!constant->hasUses() && !graph.isOutput(constant))
      continue;
    const Tensor &tensor = constant->constant();
    uint64_t offset = appendWeights(manifest, tensor.data(), tensor.byteSize(), constant->name());
    location[constant] = {package::Region::Weights, offset};
  }

  std::vector<const Value *> arenaValues;
  std::map<const Value *, size_t> arenaIndex;
  std::vector<codegen::BufferLifetime> lifetimes;
  auto touch = [&](const Value *aliasOrOwner, int64_t step) {
    const Value *value = storageOf(aliasOrOwner);
    auto [it, inserted] = arenaIndex.try_emplace(value, arenaValues.size());
    if (inserted) {
      arenaValues.push_back(value);
      lifetimes.push_back({byteSizeOf(value), step, step});
    }
    codegen::BufferLifetime &lifetime = lifetimes[it->second];
    lifetime.firstStep = std::min(lifetime.firstStep, step);
    lifetime.lastStep = std::max(lifetime.lastStep, step);
  };
  const int64_t endStep = int64_t(groups.size());
  for (Value *input : graph.inputs())
    touch(input, -1);
  for (size_t i = 0; i < groups.size(); ++i) {
    for (const Value *input : groups[i].inputs)
      if (!input->isConstant())
        touch(input, int64_t(i));
    for (const Value *output : groups[i].outputs)
      touch(output, int64_t(i));
  }
  for (Value *output : graph.outputs())
    touch(output, endStep); // constant outputs get an arena slot too: copied there at the end
  // Code generation: each kernel's source and launch shape, before the arena is planned, as a
  // backend may ask for workspace (LaunchShape::workspaceBytes).
  codegenStart = Clock::now();
  std::unique_ptr<codegen::Backend> backend = codegen::createBackend(options.target);
  std::vector<codegen::LaunchShape> shapes(groups.size());
  std::vector<package::Kernel> entries(groups.size());
  for (size_t i = 0; i < groups.size(); ++i)
    if (!viewGroup[i]) // a view has no kernel: its output is its source's bytes
      entries[i] = backend->addKernel(groups[i], kernels[i], shapes[i]);
  const double kernelSeconds = secondsSince(codegenStart);

  // Scratch buffers and workspace: slots after the values', in kernel then buffer order, each
  // live for its kernel's step alone.
  std::vector<std::vector<size_t>> scratchSlots(groups.size());
  for (size_t i = 0; i < kernels.size(); ++i)
    for (const codegen::BufferParam &buffer : kernels[i].buffers)
      if (buffer.scratch) {
        scratchSlots[i].push_back(lifetimes.size());
        lifetimes.push_back({uint64_t(buffer.elements) * dtypeSize(buffer.dtype), int64_t(i), int64_t(i)});
      }
  std::vector<std::optional<size_t>> workspaceSlot(groups.size());
  for (size_t i = 0; i < groups.size(); ++i)
    if (shapes[i].workspaceBytes > 0) {
      workspaceSlot[i] = lifetimes.size();
      lifetimes.push_back({shapes[i].workspaceBytes, int64_t(i), int64_t(i)});
    }
  codegen::ArenaPlan arena = codegen::planArena(lifetimes, package::kArenaAlignment);
  for (size_t i = 0; i < arenaValues.size(); ++i)
    if (!arenaValues[i]->isConstant())
      location[arenaValues[i]] = {package::Region::Arena, arena.offsets[i]};
  for (const auto &[alias, owner] : storage)
    location[alias] = location.at(owner);
  manifest.arenaBytes = arena.arenaBytes;
  manifest.activationBytes = arena.totalBytes;
  stats.arenaBytes = arena.arenaBytes;
  stats.activationBytes = arena.totalBytes;

  for (Value *input : graph.inputs()) {
    package::TensorSignature signature = signatureOf(input, declared[input->name()]);
    signature.arenaOffset = location.at(input).offset;
    manifest.inputs.push_back(std::move(signature));
  }

  // The launches, with every argument's place.
  for (size_t i = 0; i < groups.size(); ++i) {
    const codegen::KernelGroup &group = groups[i];
    if (viewGroup[i])
      continue;
    const codegen::Kernel &kernel = kernels[i];
    const codegen::LaunchShape &shape = shapes[i];
    package::Launch launch;
    launch.kernel = uint32_t(manifest.kernels.size());
    std::copy(shape.grid, shape.grid + 3, launch.grid);
    std::copy(shape.block, shape.block + 3, launch.block);
    launch.sharedBytes = shape.sharedBytes;
    launch.parallelExtent = shape.parallelExtent;
    for (const Value *input : group.inputs)
      launch.args.push_back(location.at(input));
    for (const Value *output : group.outputs)
      launch.args.push_back(location.at(output));
    for (size_t slot : scratchSlots[i])
      launch.args.push_back({package::Region::Arena, arena.offsets[slot]});
    for (const std::vector<uint8_t> &data : shape.derivedConstants)
      launch.args.push_back({package::Region::Weights, appendWeights(manifest, data.data(), data.size(),
                                                                     kernel.name + ".derived")});
    if (workspaceSlot[i])
      launch.args.push_back({package::Region::Arena, arena.offsets[*workspaceSlot[i]]});
    manifest.kernels.push_back(std::move(entries[i]));
    manifest.steps.push_back(std::move(launch));
  }
  stats.codegenSeconds = loweringSeconds + kernelSeconds;
  stats.weightBytes = manifest.weights.size(); // with the constants backends derived
  stats.kernelCount = int(manifest.kernels.size());

  // Graph outputs: a constant output is copied into its arena slot after the plan.
  for (Value *output : graph.outputs()) {
    package::TensorSignature signature = signatureOf(output, output->shape());
    uint64_t slot = arena.offsets[arenaIndex.at(storageOf(output))];
    signature.arenaOffset = output->isConstant() ? slot : location.at(output).offset;
    if (output->isConstant())
      manifest.steps.push_back(package::Copy{location.at(output),
                                             {package::Region::Arena, slot},
                                             output->constant().byteSize()});
    manifest.outputs.push_back(std::move(signature));
  }

  auto finishStart = Clock::now();
  report("compiling " + std::to_string(manifest.kernels.size()) + " kernels with " +
         backend->name());
  objectFiles = backend->finish(manifest, workDirectory);
  stats.finishSeconds = secondsSince(finishStart);
  return manifest;
}

CompileStatistics compileGraph(Graph &graph, const CompileOptions &options,
                               const std::string &outputPath) {
  namespace fs = std::filesystem;
  CompileStatistics stats;
  fs::path work = fs::temp_directory_path() / ("sinter-compile-" + std::to_string(::getpid()));
  fs::create_directories(work);
  struct Cleanup {
    fs::path path;
    ~Cleanup() {
      std::error_code ignored;
      fs::remove_all(path, ignored);
    }
  } cleanup{work};
  std::vector<std::string> objects;
  package::Manifest manifest = buildManifest(graph, options, work.string(), objects, stats);
  auto writeStart = Clock::now();
  package::writeArtifact(manifest, outputPath, objects);
  stats.writeSeconds = secondsSince(writeStart);
  return stats;
}

} // namespace sinter
