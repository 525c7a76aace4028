// Validation of a manifest as a whole (findManifestProblem): what the decoder cannot check field
// by field. The runtime relies on it: after a manifest passes, every offset the plan uses lies
// inside its region, so running the plan cannot touch memory outside the arena and the weights.
// Like format.cpp, this file is compiled into libsinter_rt.
#include "sinter/package/format.h"

#include "sinter/runtime.h"
#include "sinter/support/error.h"

#include <algorithm>

namespace sinter::package {
namespace {

bool isIdentifier(const std::string &name) {
  if (name.empty() || name.size() > 1024 || (name[0] >= '0' && name[0] <= '9'))
    return false;
  for (char c : name)
    if (!(c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')))
      return false;
  return true;
}

/// "sm_90", "sm_90a", "compute_90": the prefix for the kind, then digits, then an optional 'a'.
bool isCudaArch(const std::string &arch, bool isPtx) {
  std::string prefix = isPtx ? "compute_" : "sm_";
  if (arch.compare(0, prefix.size(), prefix) != 0)
    return false;
  std::string rest = arch.substr(prefix.size());
  if (!rest.empty() && (rest.back() == 'a' || rest.back() == 'f'))
    rest.pop_back();
  if (rest.size() < 2 || rest.size() > 3)
    return false;
  for (char c : rest)
    if (c < '0' || c > '9')
      return false;
  return true;
}

/// True when [offset, offset + bytes) lies within [0, regionBytes).
bool fits(uint64_t offset, uint64_t bytes, uint64_t regionBytes) {
  return offset <= regionBytes && bytes <= regionBytes - offset;
}

const char *regionName(Region region) { return region == Region::Arena ? "arena" : "weights"; }

// CUDA's limits on a launch (every architecture the compiler targets, sm_70 and up).
constexpr uint64_t kCudaMaxGridX = (uint64_t(1) << 31) - 1;
constexpr uint64_t kCudaMaxGridYZ = 65535;
constexpr uint64_t kCudaMaxBlockThreads = 1024;
constexpr uint64_t kCudaMaxBlockZ = 64;
constexpr uint64_t kCudaMaxSharedBytes = 227 * 1024; // the largest opt-in of any architecture
/// More arguments than any kernel the compiler emits (a fused group's inputs, outputs, scratch,
/// derived constants and workspace); the runtime builds an argument array of this length.
constexpr size_t kMaxLaunchArguments = 4096;

/// The grid, block, shared memory and parallel extent of a launch against what the target can
/// run and what the plan can mean, or "". Every point of a launch's parallel extent writes at
/// least one byte of the arena (its outputs live there; elements take one byte or more), so an
/// extent beyond the arena's bytes is corrupt: it would make a CPU kernel run past its buffers.
std::string findLaunchShapeProblem(const Manifest &manifest, uint64_t arenaBytes,
                                   const Launch &launch) {
  if (launch.parallelExtent < 0)
    return "has a negative parallel extent";
  if (uint64_t(launch.parallelExtent) > std::max<uint64_t>(arenaBytes, 1))
    return detail::concat("has a parallel extent of ", launch.parallelExtent,
                          ", more than the arena's ", arenaBytes,
                          " bytes (each point writes at least one)");
  if (manifest.target == Target::Cpu) {
    for (int axis = 0; axis < 3; ++axis)
      if (launch.grid[axis] != 1 || launch.block[axis] != 1)
        return "is a CPU launch with a CUDA grid or block";
    if (launch.sharedBytes != 0)
      return "is a CPU launch with shared memory";
    return "";
  }
  if (launch.grid[0] > kCudaMaxGridX || launch.grid[1] > kCudaMaxGridYZ ||
      launch.grid[2] > kCudaMaxGridYZ)
    return detail::concat("has a grid of ", launch.grid[0], "x", launch.grid[1], "x",
                          launch.grid[2], ", beyond CUDA's limits");
  uint64_t threads = uint64_t(launch.block[0]) * launch.block[1] * launch.block[2];
  if (threads > kCudaMaxBlockThreads || launch.block[2] > kCudaMaxBlockZ)
    return detail::concat("has a block of ", launch.block[0], "x", launch.block[1], "x",
                          launch.block[2], ", beyond CUDA's ", kCudaMaxBlockThreads,
                          " threads");
  if (launch.sharedBytes > kCudaMaxSharedBytes)
    return detail::concat("asks for ", launch.sharedBytes,
                          " bytes of shared memory, beyond any GPU's ", kCudaMaxSharedBytes);
  return "";
}

/// A plan's fields, for the checks every plan gets (the manifest's own is plan 0).
struct PlanFields {
  const std::vector<TensorSignature> &inputs, &outputs;
  uint64_t arenaBytes;
  const std::vector<Step> &steps;
  std::string name; ///< "" for plan 0, "plan 3 " for the others (a prefix of messages)
};

std::string findStepProblem(const Manifest &manifest, const PlanFields &plan, size_t index,
                            uint64_t weightsBytes) {
  const uint64_t arenaBytes = plan.arenaBytes;
  auto regionBytes = [&](Region region) {
    return region == Region::Arena ? arenaBytes : weightsBytes;
  };
  std::string where = detail::concat(plan.name, "step ", index);
  if (const auto *launch = std::get_if<Launch>(&plan.steps[index])) {
    if (launch->kernel >= manifest.kernels.size())
      return detail::concat(where, " launches kernel ", launch->kernel, " of ",
                            manifest.kernels.size());
    where += detail::concat(" (", manifest.kernels[launch->kernel].name, ")");
    for (int axis = 0; axis < 3; ++axis)
      if (launch->grid[axis] == 0 || launch->block[axis] == 0)
        return detail::concat(where, " has an empty grid or block");
    std::string launchProblem = findLaunchShapeProblem(manifest, arenaBytes, *launch);
    if (!launchProblem.empty())
      return detail::concat(where, " ", launchProblem);
    if (launch->args.size() > kMaxLaunchArguments)
      return detail::concat(where, " has ", launch->args.size(), " arguments (at most ",
                            kMaxLaunchArguments, ")");
    // Every argument's size is recorded (the compiler writes them all), so a launch without
    // them is damaged or was stripped to escape this check.
    if (launch->argBytes.empty() && !launch->args.empty())
      return detail::concat(where, " records no sizes for its ", launch->args.size(),
                            " arguments (made by a sinter from before they were recorded, or "
                            "edited: compile the model again)");
    if (launch->argBytes.size() != launch->args.size())
      return detail::concat(where, " records the sizes of ", launch->argBytes.size(), " of its ",
                            launch->args.size(), " arguments");
    for (size_t arg = 0; arg < launch->args.size(); ++arg) {
      const BufferRef &ref = launch->args[arg];
      if (!fits(ref.offset, 0, regionBytes(ref.region)))
        return detail::concat(where, " argument ", arg, " is past the end of the ",
                              regionName(ref.region));
      if (!fits(ref.offset, launch->argBytes[arg], regionBytes(ref.region)))
        return detail::concat(where, " argument ", arg, " (", launch->argBytes[arg],
                              " bytes at ", ref.offset, ") runs past the end of the ",
                              regionBytes(ref.region), "-byte ", regionName(ref.region));
    }
    return "";
  }
  const Copy &copy = std::get<Copy>(plan.steps[index]);
  if (copy.destination.region != Region::Arena)
    return detail::concat(where, " copies into the read-only weights");
  if (!fits(copy.source.offset, copy.bytes, regionBytes(copy.source.region)))
    return detail::concat(where, " copies from outside the ", regionName(copy.source.region));
  if (!fits(copy.destination.offset, copy.bytes, arenaBytes))
    return detail::concat(where, " copies to outside the arena");
  // A copy onto itself is a no-op (the runtime skips it); a partial overlap is a planner bug.
  if (copy.source.region == Region::Arena && copy.bytes > 0 &&
      copy.source.offset != copy.destination.offset &&
      copy.source.offset < copy.destination.offset + copy.bytes &&
      copy.destination.offset < copy.source.offset + copy.bytes)
    return detail::concat(where, " copies between overlapping arena ranges");
  return "";
}

std::string findSignatureProblem(const PlanFields &plan) {
  for (const auto *list : {&plan.inputs, &plan.outputs}) {
    const char *kind = list == &plan.inputs ? "input" : "output";
    for (size_t i = 0; i < list->size(); ++i) {
      const TensorSignature &tensor = (*list)[i];
      std::string where = detail::concat(plan.name, kind, " ", i, " ('", tensor.name, "')");
      if (tensor.name.empty())
        return detail::concat(plan.name, kind, " ", i, " has no name");
      if (static_cast<int>(tensor.dtype) >= kNumDTypes)
        return where + " has an unknown dtype";
      if (tensor.dims.size() > SINTER_MAX_RANK)
        return detail::concat(where, " has rank ", tensor.dims.size(), " (at most ",
                              SINTER_MAX_RANK, ")");
      if (!tensor.dimSymbols.empty() && tensor.dimSymbols.size() != tensor.dims.size())
        return where + " has dim symbols for some dims only";
      uint64_t bytes = tensorByteSize(tensor.dtype, tensor.dims);
      if (bytes == UINT64_MAX)
        return where + " has a negative dim or a size that overflows";
      if (!fits(tensor.arenaOffset, bytes, plan.arenaBytes))
        return detail::concat(where, " (", bytes, " bytes at ", tensor.arenaOffset,
                              ") lies outside the ", plan.arenaBytes, "-byte arena");
    }
  }
  return "";
}

/// The plan of each bucket combination has the plan 0 signature's names, dtypes and ranks, and
/// its bucket at every dim that names a bucketed symbol.
std::string findBucketProblem(const Manifest &manifest) {
  size_t planCount = 1;
  for (size_t s = 0; s < manifest.symbols.size(); ++s) {
    const ShapeSymbol &symbol = manifest.symbols[s];
    if (symbol.name.empty())
      return "a shape symbol has no name";
    for (size_t t = 0; t < s; ++t)
      if (manifest.symbols[t].name == symbol.name)
        return detail::concat("shape symbol '", symbol.name, "' is listed twice");
    if (symbol.buckets.empty() || symbol.buckets.size() > 4096)
      return detail::concat("shape symbol '", symbol.name, "' has ", symbol.buckets.size(),
                            " buckets");
    for (size_t b = 0; b < symbol.buckets.size(); ++b)
      if (symbol.buckets[b] < 1 || (b > 0 && symbol.buckets[b] <= symbol.buckets[b - 1]))
        return detail::concat("shape symbol '", symbol.name,
                              "' has buckets that are not positive and ascending");
    planCount *= symbol.buckets.size();
    if (planCount > 4096)
      return "more than 4096 plans";
  }
  if (manifest.symbols.empty() && !manifest.additionalPlans.empty())
    return "additional plans without shape symbols";
  if (!manifest.symbols.empty() && planCount != manifest.additionalPlans.size() + 1)
    return detail::concat("the shape symbols make ", planCount, " plans but the artifact has ",
                          manifest.additionalPlans.size() + 1);
  for (size_t p = 0; p < planCount && !manifest.symbols.empty(); ++p) {
    // Plan p's bucket of each symbol: mixed radix, the last symbol fastest.
    std::vector<int64_t> sizes(manifest.symbols.size());
    size_t rest = p;
    for (size_t s = manifest.symbols.size(); s-- > 0;) {
      sizes[s] = manifest.symbols[s].buckets[rest % manifest.symbols[s].buckets.size()];
      rest /= manifest.symbols[s].buckets.size();
    }
    const Plan *plan = p == 0 ? nullptr : &manifest.additionalPlans[p - 1];
    for (int kind = 0; kind < 2; ++kind) {
      const auto &first = kind == 0 ? manifest.inputs : manifest.outputs;
      const auto &list = plan ? (kind == 0 ? plan->inputs : plan->outputs) : first;
      if (list.size() != first.size())
        return detail::concat("plan ", p, " has ", list.size(), kind == 0 ? " inputs" : " outputs",
                              " where plan 0 has ", first.size());
      for (size_t i = 0; i < list.size(); ++i) {
        const TensorSignature &tensor = list[i];
        if (tensor.name != first[i].name || tensor.dtype != first[i].dtype ||
            tensor.dims.size() != first[i].dims.size())
          return detail::concat("plan ", p, "'s ", kind == 0 ? "input " : "output ", i,
                                " is not plan 0's (name, dtype or rank)");
        for (size_t axis = 0; axis < tensor.dimSymbols.size(); ++axis)
          for (size_t s = 0; s < manifest.symbols.size(); ++s)
            if (tensor.dimSymbols[axis] == manifest.symbols[s].name && tensor.dims[axis] != sizes[s])
              return detail::concat("plan ", p, "'s ", kind == 0 ? "input " : "output ", i,
                                    " has dim ", tensor.dims[axis], " at axis ", axis,
                                    " where its bucket of '", manifest.symbols[s].name, "' is ",
                                    sizes[s]);
      }
    }
  }
  return "";
}

} // namespace

uint64_t tensorByteSize(DType dtype, const std::vector<int64_t> &dims) {
  uint64_t bytes = static_cast<uint64_t>(dtypeSize(dtype));
  for (int64_t dim : dims) {
    if (dim < 0)
      return UINT64_MAX;
    if (dim != 0 && bytes > UINT64_MAX / static_cast<uint64_t>(dim))
      return UINT64_MAX;
    bytes *= static_cast<uint64_t>(dim);
  }
  return bytes;
}

std::string findManifestProblem(const Manifest &manifest, uint64_t weightsBytes) {
  if (manifest.target != Target::Cpu && manifest.target != Target::Cuda)
    return detail::concat("unknown target ", static_cast<uint32_t>(manifest.target));
  if (manifest.target == Target::Cpu) {
    for (size_t i = 0; i < manifest.cpuLevels.size(); ++i) {
      const std::string &level = manifest.cpuLevels[i];
      if (level.empty() || level.size() > 64 || level.find_first_of(" .,") != std::string::npos)
        return detail::concat("CPU level ", i, " ('", level, "') is not a level's name");
      if (i > 0 && !(manifest.cpuLevels[i - 1] < level))
        return detail::concat("the CPU levels are not ascending and distinct at '", level, "'");
    }
  } else if (!manifest.cpuLevels.empty()) {
    return "a CUDA artifact names a CPU level";
  }
  std::vector<PlanFields> plans = {
      {manifest.inputs, manifest.outputs, manifest.arenaBytes, manifest.steps, ""}};
  for (size_t p = 0; p < manifest.additionalPlans.size(); ++p) {
    const Plan &plan = manifest.additionalPlans[p];
    plans.push_back({plan.inputs, plan.outputs, plan.arenaBytes, plan.steps,
                     detail::concat("plan ", p + 1, " ")});
  }
  for (const PlanFields &plan : plans) {
    std::string problem = findSignatureProblem(plan);
    if (!problem.empty())
      return problem;
  }
  std::string bucketProblem = findBucketProblem(manifest);
  if (!bucketProblem.empty())
    return bucketProblem;
  for (const BoundInput &bound : manifest.boundInputs) {
    std::string where = "bound input '" + bound.name + "'";
    if (bound.name.empty())
      return "a bound input has no name";
    if (static_cast<int>(bound.dtype) >= kNumDTypes)
      return where + " has an unknown dtype";
    if (bound.dims.size() > SINTER_MAX_RANK)
      return detail::concat(where, " has rank ", bound.dims.size(), " (at most ", SINTER_MAX_RANK,
                            ")");
    uint64_t bytes = tensorByteSize(bound.dtype, bound.dims);
    if (bytes == UINT64_MAX)
      return where + " has a negative dim or a size that overflows";
    if (!bound.value.empty() && bound.value.size() != bytes)
      return detail::concat(where, " records ", bound.value.size(), " value bytes for a ", bytes,
                            "-byte tensor");
  }
  for (const WeightEntry &entry : manifest.weightTable) {
    if (entry.offset % kWeightAlignment != 0)
      return detail::concat("weight '", entry.name, "' is not aligned to ", kWeightAlignment);
    if (!fits(entry.offset, entry.bytes, weightsBytes))
      return detail::concat("weight '", entry.name, "' lies outside the weights blob");
  }
  for (size_t i = 0; i < manifest.kernels.size(); ++i) {
    const Kernel &kernel = manifest.kernels[i];
    if (!isIdentifier(kernel.name) || kernel.name.rfind("sinter_", 0) == 0)
      return detail::concat("kernel ", i, " has the name '", kernel.name,
                            "', which is not a C identifier outside the sinter_ prefix");
    for (size_t j = 0; j < i; ++j)
      if (manifest.kernels[j].name == kernel.name)
        return detail::concat("two kernels are named '", kernel.name, "'");
    if (manifest.target == Target::Cuda && kernel.cudaModule >= manifest.cudaModules.size())
      return detail::concat("CUDA kernel '", kernel.name, "' is in module ", kernel.cudaModule,
                            " of ", manifest.cudaModules.size());
  }
  for (size_t i = 0; i < manifest.cudaModules.size(); ++i) {
    const CudaModule &module = manifest.cudaModules[i];
    if (module.binaries.empty())
      return detail::concat("CUDA module ", i, " has no binary");
    for (const CudaBinary &binary : module.binaries) {
      if (!isCudaArch(binary.arch, binary.isPtx))
        return detail::concat("CUDA module ", i, " has a ", binary.isPtx ? "PTX" : "cubin",
                              " for the malformed architecture '", binary.arch, "'");
      if (binary.bytes.empty())
        return detail::concat("CUDA module ", i, " has an empty binary for ", binary.arch);
    }
  }
  // Kernels are first launched in the order they are declared (the compiler adds each kernel
  // with its launch), so a step that names another existing kernel is caught too. A kernel may
  // be launched by no step (an artifact can export a function its plan does not call).
  // The plans' steps are checked in plan order, as one sequence: a later plan may launch the
  // kernels of an earlier one.
  size_t nextKernel = 0;
  for (const PlanFields &plan : plans) {
    for (size_t i = 0; i < plan.steps.size(); ++i) {
      std::string problem = findStepProblem(manifest, plan, i, weightsBytes);
      if (!problem.empty())
        return problem;
      if (const auto *launch = std::get_if<Launch>(&plan.steps[i])) {
        if (launch->kernel > nextKernel)
          return detail::concat(plan.name, "step ", i, " launches kernel ", launch->kernel, " ('",
                                manifest.kernels[launch->kernel].name, "') before kernel ",
                                nextKernel, " ('", manifest.kernels[nextKernel].name,
                                "') was launched: kernels are launched in declaration order");
        if (launch->kernel == nextKernel)
          ++nextKernel;
      }
    }
  }
  return "";
}

} // namespace sinter::package
