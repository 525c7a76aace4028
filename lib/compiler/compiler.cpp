// The compile driver. buildManifest, at the end of this file, lists the stages in the order they
// run, one line each; each stage is a function above it, and the reason for its place in the
// order is written where it is called.
#include "sinter/compiler/compiler.h"

#include "sinter/codegen/schedule/buffer_assignment.h"
#include "sinter/codegen/schedule/fusion.h"
#include "sinter/codegen/lowering/lowering.h"
#include "sinter/codegen/schedule/memory_plan.h"
#include "sinter/codegen/targets/targets.h"
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
#include <optional>
#include <set>

#include <unistd.h>

namespace sinter {

namespace {

using Clock = std::chrono::steady_clock;
double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// The graph's nodes as kernels, and where their values live (codegen/fusion.h,
/// codegen/buffer_assignment.h).
struct Schedule {
  std::vector<codegen::KernelGroup> groups;
  codegen::BufferAssignment buffers;
};

/// What the backend made of each group: the manifest's kernel entry and the launch shape, with
/// the derived constants and workspace the kernel asks for. Empty for a view group.
struct GeneratedKernels {
  std::vector<package::Kernel> entries;
  std::vector<codegen::LaunchShape> shapes;
};

/// Where every value, scratch buffer and workspace lives.
struct MemoryLayout {
  std::map<const Value *, package::BufferRef> location;
  codegen::ArenaPlan arena;
  /// Per group: the arena slots (indices into arena.offsets) of its scratch buffers, and of its
  /// workspace when it has one.
  std::vector<std::vector<size_t>> scratchSlots;
  std::vector<std::optional<size_t>> workspaceSlot;
};

// ---- import checks -----------------------------------------------------------------------

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

// ---- the stages, in order -----------------------------------------------------------------

/// The manifest's header: target, producer, storage precision, what the graph was specialised
/// to (--bind-input), the CPU level or the CUDA architectures.
package::Manifest startManifest(const Graph &graph, const CompileOptions &options) {
  package::Manifest manifest;
  manifest.target = options.target.target;
  manifest.producer = "sinter 0.1.0";
  manifest.storagePrecision = options.pipeline.precision;
  manifest.sourceNodeCount = graph.numNodes();
  for (const auto &[name, value] : options.boundInputs) {
    package::BoundInput bound{name, value.dtype(), value.dims(), 0, {}};
    std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t *>(value.data()), value.byteSize());
    bound.valueHash = package::hashBytes(bytes);
    if (bytes.size() <= package::kMaxRecordedBoundBytes)
      bound.value.assign(bytes.begin(), bytes.end());
    manifest.boundInputs.push_back(std::move(bound));
  }
  if (manifest.target == package::Target::Cpu)
    manifest.cpuLevel = options.target.cpu.level;
  else
    manifest.cudaArchs = options.target.cuda.archs;
  return manifest;
}

/// The pass pipeline (passes/pipeline.h). Returns whether kernels are to be fused: fusion is
/// planned in scheduling, not a graph pass, but --disable-pass fuse-kernels turns it off the
/// same way.
bool runPasses(Graph &graph, const CompileOptions &options,
               const codegen::BackendCapabilities &capabilities) {
  requireStaticShapes(graph);
  PipelineOptions pipeline = options.pipeline;
  bool fuseKernels = pipeline.disabled.erase(std::string(kFuseKernels)) == 0;
  // Attention is fused when the backend has a kernel for it at this storage precision (the
  // CUDA C one multiplies 16-bit operands; docs/attention.md).
  pipeline.fusedAttention = capabilities.fusedAttention16Bit &&
                            (pipeline.precision == DType::Float16 || pipeline.precision == DType::BFloat16);
  runPipeline(graph, pipeline);
  return fuseKernels;
}

/// Kernel groups (one per node with fusion off), then which bytes each value lives in: a group of
/// views is no kernel and its output aliases its source.
Schedule scheduleGraph(const Graph &graph, bool fuseKernels) {
  Schedule schedule;
  schedule.groups = codegen::formKernelGroups(graph, fuseKernels);
  schedule.buffers = codegen::assignBuffers(graph, schedule.groups);
  return schedule;
}

/// Every group but views, once, into the forms the backend consumes (backend.h's LoweredGroup:
/// kernel IR, and the contraction or attention descriptions); a view group's stays empty.
std::vector<codegen::LoweredGroup> lowerGroups(const Schedule &schedule,
                                               const codegen::BackendCapabilities &capabilities,
                                               const std::function<void(const std::string &)> &report) {
  const std::vector<codegen::KernelGroup> &groups = schedule.groups;
  std::vector<codegen::LoweredGroup> lowered(groups.size());
  for (size_t i = 0; i < groups.size(); ++i) {
    if (schedule.buffers.viewGroup[i])
      continue; // no kernel: its output is its source's bytes
    if (i % 50 == 0)
      report("generating kernel " + std::to_string(i + 1) + "/" + std::to_string(groups.size()));
    lowered[i] = codegen::lowerForBackend(groups[i], capabilities);
  }
  return lowered;
}

/// The constants no kernel reads any more: every kernel group that takes them as an input has
/// replaced them by a derived constant (LaunchShape::replacedInputs: weights packed into the
/// kernel's layout), and no view or graph output needs them. Stored once, in packed form.
std::set<const Value *> replacedConstants(const Graph &graph, const Schedule &schedule,
                                          const GeneratedKernels &generated) {
  std::set<const Value *> replaced, needed;
  for (size_t i = 0; i < schedule.groups.size(); ++i) {
    const std::vector<const Value *> &inputs = schedule.groups[i].inputs;
    const std::vector<bool> &byKernel = generated.shapes[i].replacedInputs;
    for (size_t x = 0; x < inputs.size(); ++x) {
      if (!inputs[x]->isConstant())
        continue;
      bool gone = !schedule.buffers.viewGroup[i] && x < byKernel.size() && byKernel[x];
      (gone ? replaced : needed).insert(inputs[x]);
    }
  }
  for (Value *output : graph.outputs())
    needed.insert(output);
  std::set<const Value *> result;
  for (const Value *value : replaced)
    if (!needed.count(value))
      result.insert(value);
  return result;
}

/// Constants that something reads go to the weights blob, in the graph's constant order, but
/// for those that kernels replaced by their packed forms.
std::map<const Value *, package::BufferRef> placeConstants(const Graph &graph,
                                                           const std::set<const Value *> &replaced,
                                                           package::Manifest &manifest) {
  std::map<const Value *, package::BufferRef> location;
  for (Value *constant : graph.constants()) {
    if ((!constant->hasUses() && !graph.isOutput(constant)) || replaced.count(constant))
      continue;
    const Tensor &tensor = constant->constant();
    uint64_t offset = appendWeights(manifest, tensor.data(), tensor.byteSize(), constant->name());
    location[constant] = {package::Region::Weights, offset};
  }
  return location;
}

/// Each kernel's source (kept by the backend until finish) and launch shape.
GeneratedKernels generateKernels(codegen::Backend &backend, const Schedule &schedule,
                                 const std::vector<codegen::LoweredGroup> &lowered) {
  const size_t count = schedule.groups.size();
  GeneratedKernels generated{std::vector<package::Kernel>(count),
                             std::vector<codegen::LaunchShape>(count)};
  for (size_t i = 0; i < count; ++i)
    if (!schedule.buffers.viewGroup[i]) // a view has no kernel: its output is its source's bytes
      generated.entries[i] = backend.addKernel(lowered[i], generated.shapes[i]);
  return generated;
}

/// The arena: the values' lifetimes, then each kernel's scratch buffers (in kernel then buffer
/// order), then each kernel's workspace, every one of those live for its kernel's step alone.
/// Fills `location` for arena values and their aliases.
MemoryLayout planMemory(const Schedule &schedule, const std::vector<codegen::LoweredGroup> &lowered,
                        const GeneratedKernels &generated,
                        std::map<const Value *, package::BufferRef> location) {
  const codegen::BufferAssignment &buffers = schedule.buffers;
  const size_t count = schedule.groups.size();
  std::vector<codegen::BufferLifetime> lifetimes = buffers.lifetimes;
  MemoryLayout layout;
  layout.scratchSlots.resize(count);
  layout.workspaceSlot.resize(count);
  for (size_t i = 0; i < count; ++i)
    for (const codegen::BufferParam &buffer : lowered[i].kernel.buffers)
      if (buffer.scratch) {
        layout.scratchSlots[i].push_back(lifetimes.size());
        lifetimes.push_back({uint64_t(buffer.elements) * dtypeSize(buffer.dtype), int64_t(i), int64_t(i)});
      }
  for (size_t i = 0; i < count; ++i)
    if (generated.shapes[i].workspaceBytes > 0) {
      layout.workspaceSlot[i] = lifetimes.size();
      lifetimes.push_back({generated.shapes[i].workspaceBytes, int64_t(i), int64_t(i)});
    }
  layout.arena = codegen::planArena(lifetimes, package::kArenaAlignment);
  for (size_t i = 0; i < buffers.arenaValues.size(); ++i)
    if (!buffers.arenaValues[i]->isConstant())
      location[buffers.arenaValues[i]] = {package::Region::Arena, layout.arena.offsets[i]};
  for (const auto &[alias, owner] : buffers.storage)
    location[alias] = location.at(owner);
  layout.location = std::move(location);
  return layout;
}

/// One launch per kernel, with every argument's place: the group's inputs, its outputs, its
/// scratch buffers, the constants the backend derived (appended to the weights blob here) and
/// its workspace, in that order (backend.h's LaunchShape).
void recordLaunches(const Schedule &schedule, const std::vector<codegen::LoweredGroup> &lowered,
                    GeneratedKernels &generated, const MemoryLayout &layout,
                    package::Manifest &manifest) {
  for (size_t i = 0; i < schedule.groups.size(); ++i) {
    const codegen::KernelGroup &group = schedule.groups[i];
    if (schedule.buffers.viewGroup[i])
      continue;
    const codegen::LaunchShape &shape = generated.shapes[i];
    package::Launch launch;
    launch.kernel = uint32_t(manifest.kernels.size());
    std::copy(shape.grid, shape.grid + 3, launch.grid);
    std::copy(shape.block, shape.block + 3, launch.block);
    launch.sharedBytes = shape.sharedBytes;
    launch.parallelExtent = shape.parallelExtent;
    std::vector<package::BufferRef> derived;
    for (const std::vector<uint8_t> &data : shape.derivedConstants)
      derived.push_back({package::Region::Weights, appendWeights(manifest, data.data(), data.size(),
                                                                 lowered[i].kernel.name + ".derived")});
    for (const Value *input : group.inputs) {
      auto found = layout.location.find(input);
      // A constant stored only in its packed form: the kernel never reads this argument.
      SINTER_ASSERT(found != layout.location.end() || !derived.empty(), "kernel ", lowered[i].kernel.name,
                    " reads '", input->name(), "', which has no storage");
      launch.args.push_back(found != layout.location.end() ? found->second : derived.front());
    }
    for (const Value *output : group.outputs)
      launch.args.push_back(layout.location.at(output));
    for (size_t slot : layout.scratchSlots[i])
      launch.args.push_back({package::Region::Arena, layout.arena.offsets[slot]});
    launch.args.insert(launch.args.end(), derived.begin(), derived.end());
    if (layout.workspaceSlot[i])
      launch.args.push_back({package::Region::Arena, layout.arena.offsets[*layout.workspaceSlot[i]]});
    manifest.kernels.push_back(std::move(generated.entries[i]));
    manifest.steps.push_back(std::move(launch));
  }
}

/// The signature's inputs, with the symbols they were declared with and their arena slots.
void recordInputs(const Graph &graph, const std::map<std::string, Shape> &declared,
                  const MemoryLayout &layout, package::Manifest &manifest) {
  for (Value *input : graph.inputs()) {
    package::TensorSignature signature = signatureOf(input, declared.at(input->name()));
    signature.arenaOffset = layout.location.at(input).offset;
    manifest.inputs.push_back(std::move(signature));
  }
}

/// The signature's outputs with their arena slots; a constant output is copied into its slot
/// after the last launch.
void recordOutputs(const Graph &graph, const Schedule &schedule, const MemoryLayout &layout,
                   package::Manifest &manifest) {
  for (Value *output : graph.outputs()) {
    package::TensorSignature signature = signatureOf(output, output->shape());
    uint64_t slot = layout.arena.offsets[schedule.buffers.arenaIndex.at(schedule.buffers.storageOf(output))];
    signature.arenaOffset = output->isConstant() ? slot : layout.location.at(output).offset;
    if (output->isConstant())
      manifest.steps.push_back(package::Copy{layout.location.at(output),
                                             {package::Region::Arena, slot},
                                             output->constant().byteSize()});
    manifest.outputs.push_back(std::move(signature));
  }
}

} // namespace

package::Manifest buildManifest(Graph &graph, const CompileOptions &options,
                                const std::string &workDirectory,
                                std::vector<std::string> &objectFiles, CompileStatistics &stats) {
  auto report = [&](const std::string &message) {
    if (options.progress)
      options.progress(message);
  };
  stats.sourceNodeCount = graph.numNodes();
  package::Manifest manifest = startManifest(graph, options);
  // The signature keeps the shapes as declared, with their symbols; passes may rewrite inputs.
  std::map<std::string, Shape> declared;
  for (Value *input : graph.inputs())
    declared[input->name()] = input->shape();

  // 0. The target's backend, first: its capabilities decide what the passes form (fused
  //    attention) and what lowering describes for it.
  std::unique_ptr<codegen::Backend> backend = codegen::createBackend(options.target);
  const codegen::BackendCapabilities capabilities = backend->capabilities();

  // 1. Passes: graph to graph, before anything is scheduled (they change which nodes exist).
  auto start = Clock::now();
  const bool fuseKernels = runPasses(graph, options, capabilities);
  stats.passSeconds = secondsSince(start);

  // 2. Schedule: kernel groups, then view aliases and lifetimes over the groups' order.
  Schedule schedule = scheduleGraph(graph, fuseKernels);

  // 3. Lowering, once per group, into what the backend consumes; backends never read the graph.
  //    Before memory planning: a kernel may declare scratch buffers (KernelBuilder::addScratch),
  //    which the arena holds for its step only.
  start = Clock::now();
  std::vector<codegen::LoweredGroup> lowered = lowerGroups(schedule, capabilities, report);
  double codegenSeconds = secondsSince(start);

  // 4. Backend code generation. Before memory planning: a backend may declare workspace of its
  //    own for a kernel (LaunchShape::workspaceBytes: a stream-K GEMM's partial sums).
  start = Clock::now();
  GeneratedKernels generated = generateKernels(*backend, schedule, lowered);
  codegenSeconds += secondsSince(start);

  // 5. Weights: the graph's constants, in graph order (the derived constants follow in step 7).
  //    After code generation: a constant that kernels replaced by a packed form is not stored.
  std::map<const Value *, package::BufferRef> location =
      placeConstants(graph, replacedConstants(graph, schedule, generated), manifest);

  // 6. Memory plan: values, then scratch, then workspace, all in one arena.
  MemoryLayout layout = planMemory(schedule, lowered, generated, std::move(location));
  manifest.arenaBytes = layout.arena.arenaBytes;
  manifest.activationBytes = layout.arena.totalBytes;
  stats.arenaBytes = layout.arena.arenaBytes;
  stats.activationBytes = layout.arena.totalBytes;

  // 7. The plan: inputs' slots, one launch per kernel with every argument's place, then the
  //    outputs' slots (and the copies of constant outputs, which run after every launch).
  recordInputs(graph, declared, layout, manifest);
  recordLaunches(schedule, lowered, generated, layout, manifest);
  stats.codegenSeconds = codegenSeconds;
  stats.weightBytes = manifest.weights.size(); // with the constants backends derived
  stats.kernelCount = int(manifest.kernels.size());
  recordOutputs(graph, schedule, layout, manifest);

  // 8. Packaging: the backend compiles what it kept (NVRTC and ptxas, or LLVM to an object);
  //    compileGraph's writer then links model.so.
  start = Clock::now();
  report("compiling " + std::to_string(manifest.kernels.size()) + " kernels with " +
         backend->name());
  objectFiles = backend->finish(manifest, workDirectory);
  stats.finishSeconds = secondsSince(start);
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
