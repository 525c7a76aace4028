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
#include "sinter/passes/independent_dims.h"
#include "sinter/support/error.h"
#include "sinter/support/temporary_folder.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <set>

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
/// the derived constants the kernel asks for. Empty for a view group.
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

int launchCount(const std::vector<package::Step> &steps) {
  return int(std::count_if(steps.begin(), steps.end(), [](const package::Step &step) {
    return std::holds_alternative<package::Launch>(step);
  }));
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

package::TensorSignature signatureOf(const Value *value, const Shape &declared) {
  package::TensorSignature signature;
  signature.name = value->name();
  signature.dtype = value->dtype();
  signature.dims = staticDims(value->shape());
  for (const Dim &dim : declared)
    signature.dimSymbols.push_back(dim.isSymbol() ? dim.symbolName() : "");
  return signature;
}

/// The weights already in the blob by content, so that the plans of a bucketed artifact share
/// one copy of each constant (null for an artifact of one plan: its blob is what it always was).
struct WeightIndex {
  std::multimap<uint64_t, uint64_t> offsetsByHash; ///< hashBytes of the bytes -> blob offset
  std::map<uint64_t, uint64_t> bytesAt;           ///< blob offset -> length
};

/// `offset` rounded up to the weights' alignment.
uint64_t weightsAligned(uint64_t offset) {
  return (offset + package::kWeightAlignment - 1) / package::kWeightAlignment * package::kWeightAlignment;
}

/// Appends bytes to the weights blob at the next aligned offset, or finds the same bytes there
/// already (with an index); returns the offset. An artifact of one plan lays its blob out
/// without copying (Manifest::borrowedWeights): bytes that last until the artifact is written
/// (`lasting`: the graph's constants) are referred to, others copied into derivedWeights. A
/// bucketed artifact (with an index) copies into `weights`: its plans' graphs are gone by then.
uint64_t appendWeights(package::Manifest &manifest, std::span<const uint8_t> bytes,
                       const std::string &name, WeightIndex *index, bool lasting) {
  if (!index) {
    static const uint8_t zeros[package::kWeightAlignment] = {};
    uint64_t size = package::weightsSize(manifest), offset = weightsAligned(size);
    if (offset > size)
      manifest.borrowedWeights.push_back({zeros, offset - size});
    if (!lasting) {
      manifest.derivedWeights.emplace_back(bytes.begin(), bytes.end());
      bytes = manifest.derivedWeights.back();
    }
    if (!bytes.empty())
      manifest.borrowedWeights.push_back(bytes);
    manifest.weightTable.push_back({name, offset, bytes.size()});
    return offset;
  }
  uint64_t hash = package::hashBytes(bytes);
  auto [begin, end] = index->offsetsByHash.equal_range(hash);
  for (auto it = begin; it != end; ++it)
    if (index->bytesAt.at(it->second) == bytes.size() &&
        (bytes.empty() || std::memcmp(manifest.weights.data() + it->second, bytes.data(), bytes.size()) == 0))
      return it->second;
  uint64_t offset = weightsAligned(manifest.weights.size());
  manifest.weights.resize(offset); // the alignment's padding
  manifest.weights.insert(manifest.weights.end(), bytes.begin(), bytes.end());
  manifest.weightTable.push_back({name, offset, bytes.size()});
  index->offsetsByHash.emplace(hash, offset);
  index->bytesAt[offset] = bytes.size();
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
  if (manifest.target != package::Target::Cpu) // the CPU backend records its resolved levels
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
Schedule scheduleGraph(const Graph &graph, bool fuseKernels, const codegen::BackendCapabilities &capabilities,
                       const std::string &kernelSuffix) {
  Schedule schedule;
  schedule.groups = codegen::formKernelGroups(graph, fuseKernels, capabilities.deepPrologues);
  for (codegen::KernelGroup &group : schedule.groups) // unique names across a bucketed artifact's plans
    group.name += kernelSuffix;
  schedule.buffers = codegen::assignBuffers(graph, schedule.groups);
  return schedule;
}

/// Every group but views, once, into the forms the backend consumes (backend.h's LoweredGroup:
/// kernel IR, and the contraction or attention descriptions); a view group's stays empty.
std::vector<codegen::LoweredGroup> lowerGroups(const Schedule &schedule,
                                               const codegen::BackendCapabilities &capabilities,
                                               const ProgressCallback &progress) {
  const std::vector<codegen::KernelGroup> &groups = schedule.groups;
  std::vector<codegen::LoweredGroup> lowered(groups.size());
  if (progress)
    progress({"lowering", "groups", 0, groups.size()});
  for (size_t i = 0; i < groups.size(); ++i) {
    if (!schedule.buffers.viewGroup[i]) // a view group has no kernel: its output is its source's bytes
      lowered[i] = codegen::lowerForBackend(groups[i], capabilities);
    if (progress)
      progress({"lowering", "groups", i + 1, groups.size()});
  }
  return lowered;
}

/// What each kernel will need of the arena (a workspace), as the backend declares it before
/// memory planning; nothing for a view group.
std::vector<codegen::KernelNeeds> declareNeeds(const codegen::Backend &backend, const Schedule &schedule,
                                               const std::vector<codegen::LoweredGroup> &lowered) {
  std::vector<codegen::KernelNeeds> needs(schedule.groups.size());
  for (size_t i = 0; i < needs.size(); ++i)
    if (!schedule.buffers.viewGroup[i])
      needs[i] = backend.needs(lowered[i]);
  return needs;
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
                                                           package::Manifest &manifest,
                                                           WeightIndex *weightIndex) {
  auto placed = [&](const Value *constant) {
    return (constant->hasUses() || graph.isOutput(constant)) && !replaced.count(constant);
  };
  // A bucketed artifact copies its constants: room for all of them at once, so the blob is
  // copied into once, not again at every doubling. Only for the first plan: the later plans find
  // most of their constants in the blob already (weightIndex), and reserving for all of them
  // again would copy it each time.
  if (weightIndex && manifest.weights.empty()) {
    uint64_t room = 0;
    for (Value *constant : graph.constants())
      if (placed(constant))
        room += constant->constant().byteSize() + package::kWeightAlignment;
    manifest.weights.reserve(room);
  }
  std::map<const Value *, package::BufferRef> location;
  for (Value *constant : graph.constants()) {
    if (!placed(constant))
      continue;
    const Tensor &tensor = constant->constant();
    uint64_t offset = appendWeights(
        manifest, {reinterpret_cast<const uint8_t *>(tensor.data()), tensor.byteSize()},
        constant->name(), weightIndex, /*lasting=*/true);
    location[constant] = {package::Region::Weights, offset};
  }
  return location;
}

/// Each kernel's source (kept by the backend until finish) and launch shape.
GeneratedKernels generateKernels(codegen::Backend &backend, const Schedule &schedule,
                                 const std::vector<codegen::LoweredGroup> &lowered,
                                 const ProgressCallback &progress) {
  const size_t count = schedule.groups.size();
  GeneratedKernels generated{std::vector<package::Kernel>(count),
                             std::vector<codegen::LaunchShape>(count)};
  if (progress)
    progress({"code generation", "groups", 0, count});
  for (size_t i = 0; i < count; ++i) {
    if (!schedule.buffers.viewGroup[i]) // a view has no kernel: its output is its source's bytes
      generated.entries[i] = backend.addKernel(lowered[i], generated.shapes[i]);
    if (progress)
      progress({"code generation", "groups", i + 1, count});
  }
  return generated;
}

/// The arena: the values' lifetimes, then each kernel's scratch buffers (in kernel then buffer
/// order), then each kernel's workspace, every one of those live for its kernel's step alone.
/// Fills `location` for the values that live in the arena (locateValues adds the constants and
/// the aliases once the weights are placed).
MemoryLayout planMemory(const Schedule &schedule, const std::vector<codegen::LoweredGroup> &lowered,
                        const std::vector<codegen::KernelNeeds> &needs) {
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
    if (needs[i].workspaceBytes > 0) {
      layout.workspaceSlot[i] = lifetimes.size();
      lifetimes.push_back({needs[i].workspaceBytes, int64_t(i), int64_t(i)});
    }
  layout.arena = codegen::planArena(lifetimes, package::kArenaAlignment);
  for (size_t i = 0; i < buffers.arenaValues.size(); ++i)
    if (!buffers.arenaValues[i]->isConstant())
      layout.location[buffers.arenaValues[i]] = {package::Region::Arena, layout.arena.offsets[i]};
  return layout;
}

/// Every value's place: the arena's (planMemory), the weights' (placeConstants), and each
/// view's, which is its source's.
void locateValues(const Schedule &schedule, std::map<const Value *, package::BufferRef> constants,
                  MemoryLayout &layout) {
  layout.location.merge(constants);
  for (const auto &[alias, owner] : schedule.buffers.storage)
    layout.location[alias] = layout.location.at(owner);
}

/// The bytes a value spans where it lives: a constant's data in the weights, else its type's size.
uint64_t valueBytes(const Value *value) {
  if (value->isConstant())
    return value->constant().byteSize();
  return uint64_t(*elementCount(value->shape())) * dtypeSize(value->dtype());
}

/// The manifest index of a kernel entry: an earlier entry of the same name (the backend found
/// the two kernels' code identical and gave them one entry point) is reused, so launches of one
/// body share one entry, in every plan of the artifact; the entries must then agree in
/// everything they say.
uint32_t recordKernel(package::Kernel entry, package::Manifest &manifest,
                      std::map<std::string, uint32_t> &indexOfName) {
  auto [found, inserted] = indexOfName.emplace(entry.name, uint32_t(manifest.kernels.size()));
  if (inserted) {
    manifest.kernels.push_back(std::move(entry));
    return found->second;
  }
  const package::Kernel &known = manifest.kernels[found->second];
  SINTER_ASSERT(known.generator == entry.generator && known.ops == entry.ops &&
                    known.flops == entry.flops && known.bytesMoved == entry.bytesMoved,
                "the backend gave two different kernels the entry point '", entry.name, "'");
  return found->second;
}

/// One launch per kernel, with every argument's place and size (Launch::argBytes, which the
/// runtime's validator bounds inside the argument's region): the group's inputs, its outputs, its
/// scratch buffers, the constants the backend derived (appended to the weights blob here) and
/// its workspace, in that order (backend.h's LaunchShape).
void recordLaunches(const Schedule &schedule, const std::vector<codegen::LoweredGroup> &lowered,
                    const std::vector<codegen::KernelNeeds> &needs, GeneratedKernels &generated,
                    const MemoryLayout &layout,
                    package::Manifest &manifest, package::Plan &plan, WeightIndex *weightIndex,
                    std::map<std::string, uint32_t> &kernelIndex) {
  for (size_t i = 0; i < schedule.groups.size(); ++i) {
    const codegen::KernelGroup &group = schedule.groups[i];
    if (schedule.buffers.viewGroup[i])
      continue;
    const codegen::LaunchShape &shape = generated.shapes[i];
    package::Launch launch;
    launch.kernel = recordKernel(std::move(generated.entries[i]), manifest, kernelIndex);
    std::copy(shape.grid, shape.grid + 3, launch.grid);
    std::copy(shape.block, shape.block + 3, launch.block);
    launch.sharedBytes = shape.sharedBytes;
    launch.parallelExtent = shape.parallelExtent;
    auto add = [&](package::BufferRef place, uint64_t bytes) {
      launch.args.push_back(place);
      launch.argBytes.push_back(bytes);
    };
    std::vector<std::pair<package::BufferRef, uint64_t>> derived;
    for (const std::vector<uint8_t> &data : shape.derivedConstants)
      derived.push_back({{package::Region::Weights,
                          appendWeights(manifest, data, lowered[i].kernel.name + ".derived",
                                        weightIndex, /*lasting=*/false)},
                         data.size()});
    for (const Value *input : group.inputs) {
      auto found = layout.location.find(input);
      // A constant stored only in its packed form: the kernel never reads this argument, which
      // points at (and is bounded by) the first derived constant.
      SINTER_ASSERT(found != layout.location.end() || !derived.empty(), "kernel ", lowered[i].kernel.name,
                    " reads '", input->name(), "', which has no storage");
      if (found != layout.location.end())
        add(found->second, valueBytes(input));
      else
        add(derived.front().first, derived.front().second);
    }
    for (const Value *output : group.outputs)
      add(layout.location.at(output), valueBytes(output));
    size_t scratch = 0;
    for (const codegen::BufferParam &buffer : lowered[i].kernel.buffers)
      if (buffer.scratch)
        add({package::Region::Arena, layout.arena.offsets[layout.scratchSlots[i][scratch++]]},
            uint64_t(buffer.elements) * dtypeSize(buffer.dtype));
    for (const auto &[place, bytes] : derived)
      add(place, bytes);
    if (layout.workspaceSlot[i])
      add({package::Region::Arena, layout.arena.offsets[*layout.workspaceSlot[i]]},
          needs[i].workspaceBytes);
    plan.steps.push_back(std::move(launch));
  }
}

/// The signature's inputs, with the symbols they were declared with and their arena slots.
void recordInputs(const Graph &graph, const std::map<std::string, Shape> &declared,
                  const MemoryLayout &layout, package::Plan &plan) {
  for (Value *input : graph.inputs()) {
    package::TensorSignature signature = signatureOf(input, declared.at(input->name()));
    signature.arenaOffset = layout.location.at(input).offset;
    plan.inputs.push_back(std::move(signature));
  }
}

/// The signature's outputs with their arena slots; a constant output is copied into its slot
/// after the last launch.
void recordOutputs(const Graph &graph, const Schedule &schedule, const MemoryLayout &layout,
                   package::Plan &plan) {
  for (Value *output : graph.outputs()) {
    package::TensorSignature signature = signatureOf(output, output->shape());
    uint64_t slot = layout.arena.offsets[schedule.buffers.arenaIndex.at(schedule.buffers.storageOf(output))];
    signature.arenaOffset = output->isConstant() ? slot : layout.location.at(output).offset;
    if (output->isConstant())
      plan.steps.push_back(package::Copy{layout.location.at(output),
                                         {package::Region::Arena, slot},
                                         output->constant().byteSize()});
    plan.outputs.push_back(std::move(signature));
  }
}

/// Stages 1 to 8 for one graph: its plan (signature, arena, steps) into `plan`, its kernels and
/// weights into `manifest`. A bucketed artifact calls it once per plan with one backend, so the
/// backend compiles every plan's kernels together in stage 9.
void buildPlan(Graph &graph, const CompileOptions &options, codegen::Backend &backend,
               const codegen::BackendCapabilities &capabilities, const std::string &kernelSuffix,
               WeightIndex *weightIndex, std::map<std::string, uint32_t> &kernelIndex,
               package::Manifest &manifest, package::Plan &plan, CompileStatistics &stats) {
  const ProgressCallback &progress = options.target.build.progress;
  // The signature keeps the shapes as declared, with their symbols; passes may rewrite inputs.
  std::map<std::string, Shape> declared;
  for (Value *input : graph.inputs())
    declared[input->name()] = input->shape();

  // 1. Passes: graph to graph, before anything is scheduled (they change which nodes exist).
  auto start = Clock::now();
  const bool fuseKernels = runPasses(graph, options, capabilities);
  stats.passSeconds += secondsSince(start);
  const auto planStart = Clock::now(); // stages 2 to 8 less the code generation in them

  // 2. Schedule: kernel groups, then view aliases and lifetimes over the groups' order.
  Schedule schedule = scheduleGraph(graph, fuseKernels, capabilities, kernelSuffix);

  // 3. Lowering, once per group, into what the backend consumes; backends never read the graph.
  //    Before memory planning: a kernel may declare scratch buffers (KernelBuilder::addScratch),
  //    which the arena holds for its step only.
  start = Clock::now();
  std::vector<codegen::LoweredGroup> lowered = lowerGroups(schedule, capabilities, progress);
  double codegenSeconds = secondsSince(start);

  // 4. Kernel needs: what each kernel will need of the arena beyond its buffers (a stream-K
  //    GEMM's partial sums), declared by the backend from the choice it will print. Before memory
  //    planning, so that generation consumes the plan and nothing flows back.
  std::vector<codegen::KernelNeeds> needs = declareNeeds(backend, schedule, lowered);

  // 5. Memory plan: values, then scratch, then workspace, all in one arena.
  MemoryLayout layout = planMemory(schedule, lowered, needs);
  plan.arenaBytes = layout.arena.arenaBytes;
  plan.activationBytes = layout.arena.totalBytes;
  stats.arenaBytes = std::max(stats.arenaBytes, plan.arenaBytes);
  stats.activationBytes = std::max(stats.activationBytes, plan.activationBytes);

  // 6. Backend code generation: each kernel's source and launch shape (kept by the backend until
  //    packaging), from the lowered group alone; the arena's layout reaches kernels as launch
  //    arguments, never as code.
  start = Clock::now();
  GeneratedKernels generated = generateKernels(backend, schedule, lowered, progress);
  codegenSeconds += secondsSince(start);

  // 7. Weights: the graph's constants, in graph order (the derived constants follow in step 8).
  //    After code generation: a constant that kernels replaced by a packed form is not stored.
  locateValues(schedule,
               placeConstants(graph, replacedConstants(graph, schedule, generated), manifest, weightIndex),
               layout);

  // 8. The plan: inputs' slots, one launch per kernel with every argument's place, then the
  //    outputs' slots (and the copies of constant outputs, which run after every launch).
  recordInputs(graph, declared, layout, plan);
  recordLaunches(schedule, lowered, needs, generated, layout, manifest, plan, weightIndex, kernelIndex);
  recordOutputs(graph, schedule, layout, plan);
  stats.codegenSeconds += codegenSeconds;
  stats.planSeconds += secondsSince(planStart) - codegenSeconds;
}

/// Stage 9, packaging: the backend compiles what it kept (NVRTC and ptxas, or LLVM to an
/// object); compileGraph's writer then links model.so.
std::vector<std::string> finishManifest(codegen::Backend &backend, const CompileOptions &options,
                                        const std::string &workDirectory,
                                        package::Manifest &manifest, CompileStatistics &stats) {
  stats.weightBytes = package::weightsSize(manifest); // with the constants backends derived
  stats.kernelCount = launchCount(manifest.steps);
  for (const package::Plan &plan : manifest.additionalPlans)
    stats.kernelCount += launchCount(plan.steps);
  stats.distinctKernelCount = int(manifest.kernels.size());
  auto start = Clock::now();
  const KernelCache *cache = options.target.build.cache.get();
  const KernelCache::Counters before = cache ? cache->counters() : KernelCache::Counters{};
  std::vector<std::string> objectFiles = backend.finish(manifest, workDirectory);
  if (cache) {
    const KernelCache::Counters after = cache->counters();
    stats.cacheHits = after.hits - before.hits;
    stats.cacheMisses = after.misses - before.misses;
    stats.cacheCorrupt = after.corrupt - before.corrupt;
    cache->trim();
  }
  stats.finishSeconds = secondsSince(start);
  return objectFiles;
}

void usePlan(package::Manifest &manifest, package::Plan plan) {
  manifest.inputs = std::move(plan.inputs);
  manifest.outputs = std::move(plan.outputs);
  manifest.arenaBytes = plan.arenaBytes;
  manifest.activationBytes = plan.activationBytes;
  manifest.steps = std::move(plan.steps);
}

/// Writes the manifest and objects to outputPath through a private work folder.
template <typename Build>
CompileStatistics writeArtifactFrom(const std::string &outputPath, Build build) {
  CompileStatistics stats;
  TemporaryFolder work("sinter-compile");
  std::vector<std::string> objects;
  package::Manifest manifest = build(work.path().string(), objects, stats);
  auto writeStart = Clock::now();
  package::writeArtifact(manifest, outputPath, objects);
  stats.writeSeconds = secondsSince(writeStart);
  return stats;
}

/// buildManifest, with the weights blob borrowing the graph's constants: the manifest is valid
/// while `graph` lives unchanged (compileGraph writes it before returning).
package::Manifest buildBorrowingManifest(Graph &graph, const CompileOptions &options,
                                         const std::string &workDirectory,
                                         std::vector<std::string> &objectFiles,
                                         CompileStatistics &stats) {
  stats.sourceNodeCount = graph.numNodes();
  package::Manifest manifest = startManifest(graph, options);

  // 0. The target's backend, first: its capabilities decide what the passes form (fused
  //    attention) and what lowering describes for it.
  std::unique_ptr<codegen::Backend> backend = codegen::createBackend(options.target);
  const codegen::BackendCapabilities capabilities = backend->capabilities();

  // 1 to 8: passes, schedule, lowering, kernel needs, memory plan, code generation, weights,
  //    the plan.
  package::Plan plan;
  std::map<std::string, uint32_t> kernelIndex;
  buildPlan(graph, options, *backend, capabilities, "", nullptr, kernelIndex, manifest, plan, stats);
  usePlan(manifest, std::move(plan));

  // 9. Packaging.
  objectFiles = finishManifest(*backend, options, workDirectory, manifest, stats);
  return manifest;
}

} // namespace

package::Manifest buildManifest(Graph &graph, const CompileOptions &options,
                                const std::string &workDirectory,
                                std::vector<std::string> &objectFiles, CompileStatistics &stats) {
  package::Manifest manifest = buildBorrowingManifest(graph, options, workDirectory, objectFiles, stats);
  package::ownWeights(manifest);
  return manifest;
}

package::Manifest buildBucketedManifest(const GraphImporter &importGraph,
                                        const std::vector<DimBuckets> &symbols,
                                        const CompileOptions &options,
                                        const std::string &workDirectory,
                                        std::vector<std::string> &objectFiles,
                                        CompileStatistics &stats) {
  if (symbols.empty())
    userError("a bucketed compile needs a symbol with buckets");
  size_t planCount = 1;
  for (const DimBuckets &symbol : symbols) {
    if (symbol.buckets.empty())
      userError("--dim ", symbol.symbol, " has no bucket");
    if (symbol.origins.empty())
      userError("--dim names '", symbol.symbol, "', which no graph input's shape uses");
    for (size_t b = 0; b < symbol.buckets.size(); ++b)
      if (symbol.buckets[b] < 1 || (b > 0 && symbol.buckets[b] <= symbol.buckets[b - 1]))
        userError("--dim ", symbol.symbol, ": buckets must be positive and ascending");
    planCount *= symbol.buckets.size();
    if (planCount > kMaxPlans)
      userError("the buckets make more than ", kMaxPlans, " plans (one per combination)");
  }
  std::unique_ptr<codegen::Backend> backend = codegen::createBackend(options.target);
  const codegen::BackendCapabilities capabilities = backend->capabilities();
  package::Manifest manifest;
  WeightIndex weightIndex;
  std::map<std::string, uint32_t> kernelIndex; // one entry per distinct body, across the plans
  std::vector<package::ShapeSymbol> recorded(symbols.size());
  for (size_t s = 0; s < symbols.size(); ++s) {
    recorded[s].name = symbols[s].symbol;
    recorded[s].buckets = symbols[s].buckets;
    recorded[s].paddable = true;
  }
  for (size_t p = 0; p < planCount; ++p) {
    // Plan p's bucket of each symbol: mixed radix, the last symbol fastest (manifest.h).
    std::map<std::string, int64_t> sizes;
    std::vector<size_t> bucketIndex(symbols.size());
    for (size_t s = symbols.size(), rest = p; s-- > 0;) {
      bucketIndex[s] = rest % symbols[s].buckets.size();
      rest /= symbols[s].buckets.size();
      sizes[symbols[s].symbol] = symbols[s].buckets[bucketIndex[s]];
    }
    if (options.target.build.progress)
      options.target.build.progress({"plans", "plans", p, planCount});
    std::unique_ptr<Graph> graph = importGraph(sizes);
    if (p == 0) {
      manifest = startManifest(*graph, options);
      stats.sourceNodeCount = graph->numNodes();
    }
    // The proof reads the graph as imported, before passes rewrite it. Padding never runs into
    // the smallest bucket, so its plan need not pass (a dim of size 1 is ambiguous in views).
    std::vector<std::vector<int>> outputAxes(symbols.size());
    for (size_t s = 0; s < symbols.size(); ++s) {
      DimIndependence proof = proveIndependentDim(*graph, symbols[s].origins);
      if (proof.independent)
        outputAxes[s] = proof.outputAxes;
      else if ((bucketIndex[s] > 0 || symbols[s].buckets.size() == 1) && recorded[s].paddable) {
        recorded[s].paddable = false;
        recorded[s].paddingRefusal = proof.reason;
      }
    }
    package::Plan plan;
    buildPlan(*graph, options, *backend, capabilities, p == 0 ? "" : "_p" + std::to_string(p),
              &weightIndex, kernelIndex, manifest, plan, stats);
    // The signature names the bucketed symbols where they are: the inputs' declared dims, and the
    // outputs' axes the proof followed the dim to.
    for (package::TensorSignature &input : plan.inputs)
      input.dimSymbols.assign(input.dims.size(), "");
    for (package::TensorSignature &output : plan.outputs)
      output.dimSymbols.assign(output.dims.size(), "");
    for (size_t s = 0; s < symbols.size(); ++s) {
      for (const DimOrigin &origin : symbols[s].origins)
        for (package::TensorSignature &input : plan.inputs)
          if (input.name == origin.input)
            input.dimSymbols[origin.axis] = symbols[s].symbol;
      for (size_t o = 0; o < outputAxes[s].size(); ++o)
        if (outputAxes[s][o] >= 0 && plan.outputs[o].dimSymbols[outputAxes[s][o]].empty())
          plan.outputs[o].dimSymbols[outputAxes[s][o]] = symbols[s].symbol;
    }
    for (package::TensorSignature &tensor : plan.outputs)
      if (std::all_of(tensor.dimSymbols.begin(), tensor.dimSymbols.end(),
                      [](const std::string &symbol) { return symbol.empty(); }))
        tensor.dimSymbols.clear();
    if (p == 0)
      usePlan(manifest, std::move(plan));
    else
      manifest.additionalPlans.push_back(std::move(plan));
  }
  if (options.target.build.progress)
    options.target.build.progress({"plans", "plans", planCount, planCount});
  manifest.symbols = std::move(recorded);
  objectFiles = finishManifest(*backend, options, workDirectory, manifest, stats);
  return manifest;
}

CompileStatistics compileGraph(Graph &graph, const CompileOptions &options,
                               const std::string &outputPath) {
  return writeArtifactFrom(outputPath, [&](const std::string &work,
                                           std::vector<std::string> &objects,
                                           CompileStatistics &stats) {
    return buildBorrowingManifest(graph, options, work, objects, stats);
  });
}

CompileStatistics compileBucketedGraphs(const GraphImporter &importGraph,
                                        const std::vector<DimBuckets> &symbols,
                                        const CompileOptions &options,
                                        const std::string &outputPath) {
  return writeArtifactFrom(outputPath, [&](const std::string &work,
                                           std::vector<std::string> &objects,
                                           CompileStatistics &stats) {
    return buildBucketedManifest(importGraph, symbols, options, work, objects, stats);
  });
}

} // namespace sinter
