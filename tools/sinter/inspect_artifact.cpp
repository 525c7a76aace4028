// `sinter inspect model.so [--json] [--plan]`: the artifact's manifest, read from the file
// without loading it (artifact_file.h), as text for a person or one JSON object for a script.
// docs/cli.md shows both forms.
#include "inspect_artifact.h"

#include "artifact_file.h"
#include "options.h"

#include "sinter/io/json.h"
#include "sinter/ir/dtype.h"
#include "sinter/ir/tensor.h"
#include "sinter/package/format.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <optional>

namespace sinter::cli {
namespace {

using package::Manifest;
using package::tensorByteSize;

const char *targetName(package::Target target) {
  return target == package::Target::Cuda ? "cuda" : "cpu";
}

const char *regionName(package::Region region) {
  return region == package::Region::Weights ? "weights" : "arena";
}

/// "f32[1,3,224,224]", with the symbol a dim came from: "f32[batch=1,3,224,224]".
std::string typeText(const package::TensorSignature &tensor) {
  std::string text = std::string(dtypeName(tensor.dtype)) + "[";
  for (size_t axis = 0; axis < tensor.dims.size(); ++axis) {
    if (axis)
      text += ",";
    if (axis < tensor.dimSymbols.size() && !tensor.dimSymbols[axis].empty())
      text += tensor.dimSymbols[axis] + "=";
    text += std::to_string(tensor.dims[axis]);
  }
  return text + "]";
}

std::string joined(const std::vector<std::string> &items, const char *separator = ", ") {
  std::string text;
  for (const std::string &item : items)
    text += (text.empty() ? "" : separator) + item;
  return text;
}

std::string dims3(const uint32_t (&dims)[3]) {
  return std::to_string(dims[0]) + "x" + std::to_string(dims[1]) + "x" + std::to_string(dims[2]);
}

/// Arena size over the sum of all activations (1 without reuse); 0 when there are none.
double arenaRatio(const Manifest &manifest) {
  return manifest.activationBytes ? static_cast<double>(manifest.arenaBytes) /
                                        static_cast<double>(manifest.activationBytes)
                                  : 0.0;
}

size_t launchCount(const Manifest &manifest) {
  return static_cast<size_t>(
      std::count_if(manifest.steps.begin(), manifest.steps.end(), [](const package::Step &step) {
        return std::holds_alternative<package::Launch>(step);
      }));
}

std::string binaryText(const package::CudaBinary &binary) {
  return std::string(binary.isPtx ? "PTX " : "cubin ") + binary.arch + " " +
         humanBytes(static_cast<int64_t>(binary.bytes.size()));
}

std::string flopsText(double flops) { return humanCount(static_cast<int64_t>(flops)) + " FLOP"; }

std::string bytesText(double bytes) { return humanBytes(static_cast<int64_t>(bytes)); }

/// " (2.5 FLOP/B)": arithmetic intensity, which says whether a kernel is bound by memory or by
/// arithmetic; empty when there is nothing to divide.
std::string intensityText(double flops, double bytes) {
  if (flops <= 0 || bytes <= 0)
    return "";
  char text[48];
  std::snprintf(text, sizeof text, " (%.2f FLOP/B)", flops / bytes);
  return text;
}

void printSignature(const char *title, const std::vector<package::TensorSignature> &tensors) {
  std::printf("%s:\n", title);
  if (tensors.empty())
    std::printf("  (none)\n");
  size_t width = 0;
  for (const auto &tensor : tensors)
    width = std::max(width, std::min<size_t>(tensor.name.size(), 40));
  for (const auto &tensor : tensors)
    std::printf("  %-*s  %s\n", static_cast<int>(width), tensor.name.c_str(),
                typeText(tensor).c_str());
}

/// A bound input's value when the artifact recorded it (small values only).
std::optional<Tensor> boundValue(const package::BoundInput &bound) {
  if (bound.value.size() != tensorByteSize(bound.dtype, bound.dims))
    return std::nullopt;
  Tensor tensor(bound.dtype, bound.dims);
  std::copy(bound.value.begin(), bound.value.end(), reinterpret_cast<uint8_t *>(tensor.data()));
  return tensor;
}

std::string elementText(const Tensor &tensor, int64_t i) {
  char buffer[48];
  if (isFloat(tensor.dtype()))
    std::snprintf(buffer, sizeof buffer, "%.9g", tensor.getDouble(i));
  else if (tensor.dtype() == DType::Uint64)
    std::snprintf(buffer, sizeof buffer, "%llu", static_cast<unsigned long long>(tensor.getInt(i)));
  else
    std::snprintf(buffer, sizeof buffer, "%lld", static_cast<long long>(tensor.getInt(i)));
  return buffer;
}

std::string hashText(uint64_t hash) {
  char buffer[24];
  std::snprintf(buffer, sizeof buffer, "%016" PRIx64, hash);
  return buffer;
}

/// "k  i64[1] = [2]  hash 0123456789abcdef" per bound input; nothing when there are none.
void printBoundInputs(const Manifest &manifest) {
  if (manifest.boundInputs.empty())
    return;
  std::printf("bound inputs (constants since compile time):\n");
  size_t width = 0;
  for (const auto &bound : manifest.boundInputs)
    width = std::max(width, std::min<size_t>(bound.name.size(), 40));
  for (const auto &bound : manifest.boundInputs) {
    std::string type = std::string(dtypeName(bound.dtype)) + shapeStr(shapeOf(bound.dims));
    std::string text;
    if (std::optional<Tensor> value = boundValue(bound)) {
      constexpr int64_t kShown = 8;
      std::vector<std::string> shown;
      for (int64_t i = 0; i < std::min(value->elementCount(), kShown); ++i)
        shown.push_back(elementText(*value, i));
      text = "[" + joined(shown) + (value->elementCount() > kShown ? ", ..." : "") + "]";
    } else {
      text = "(" + humanBytes(int64_t(tensorByteSize(bound.dtype, bound.dims))) + ", not recorded)";
    }
    std::printf("  %-*s  %s = %s  hash %s\n", static_cast<int>(width), bound.name.c_str(),
                type.c_str(), text.c_str(), hashText(bound.valueHash).c_str());
  }
}

/// Calls visit(kernel) once per launch: kernels of identical code share an entry, so totals
/// over the work the plan does go by launch, not by entry.
template <typename Visit> void forEachLaunchedKernel(const Manifest &manifest, Visit visit) {
  for (const package::Step &step : manifest.steps)
    if (const auto *launch = std::get_if<package::Launch>(&step))
      visit(manifest.kernels[launch->kernel]);
}

void printPlan(const Manifest &manifest) {
  double flops = 0, bytes = 0;
  forEachLaunchedKernel(manifest, [&](const package::Kernel &kernel) {
    flops += kernel.flops;
    bytes += kernel.bytesMoved;
  });
  size_t launches = launchCount(manifest);
  std::printf("plan: %zu steps (%zu launches, %zu copies); %s, %s moved by kernels\n",
              manifest.steps.size(), launches, manifest.steps.size() - launches,
              flopsText(flops).c_str(), bytesText(bytes).c_str());
  for (size_t index = 0; index < manifest.steps.size(); ++index) {
    const package::Step &step = manifest.steps[index];
    if (const auto *launch = std::get_if<package::Launch>(&step)) {
      const package::Kernel &kernel = manifest.kernels[launch->kernel];
      std::string shape =
          manifest.target == package::Target::Cuda
              ? "grid " + dims3(launch->grid) + " x block " + dims3(launch->block) +
                    (launch->sharedBytes ? ", shared " + humanBytes(launch->sharedBytes) : "")
              : "extent " + std::to_string(launch->parallelExtent);
      std::printf("  [%zu] %s (%s): %s; %s moved, %s%s\n", index, kernel.name.c_str(),
                  joined(kernel.ops).c_str(), shape.c_str(), bytesText(kernel.bytesMoved).c_str(),
                  flopsText(kernel.flops).c_str(), intensityText(kernel.flops, kernel.bytesMoved).c_str());
    } else {
      const auto &copy = std::get<package::Copy>(step);
      std::printf("  [%zu] copy %s+%" PRIu64 " -> %s+%" PRIu64 ", %s\n", index,
                  regionName(copy.source.region), copy.source.offset,
                  regionName(copy.destination.region), copy.destination.offset,
                  humanBytes(static_cast<int64_t>(copy.bytes)).c_str());
    }
  }
}

/// What fusion and the graph passes did, and what memory reuse saved, after the steps.
void printPlanSummary(const Manifest &manifest) {
  size_t ops = 0, kernels = 0;
  double flops = 0, bytes = 0;
  forEachLaunchedKernel(manifest, [&](const package::Kernel &kernel) {
    ops += kernel.ops.size();
    flops += kernel.flops;
    bytes += kernel.bytesMoved;
    ++kernels;
  });
  std::printf("fusion: %" PRId64 " source nodes -> %zu ops in kernels after the graph passes -> "
              "%zu kernels",
              manifest.sourceNodeCount, ops, kernels);
  if (kernels)
    std::printf(" (%.1f ops per kernel)", static_cast<double>(ops) / static_cast<double>(kernels));
  if (kernels != manifest.kernels.size())
    std::printf(", %zu distinct", manifest.kernels.size());
  std::printf("\nmemory: arena %s for %s of activations (ratio %.3f); views share their source's "
              "bytes\n",
              humanBytes(static_cast<int64_t>(manifest.arenaBytes)).c_str(),
              humanBytes(static_cast<int64_t>(manifest.activationBytes)).c_str(), arenaRatio(manifest));
  std::printf("work: %s over %s moved by kernels%s\n", flopsText(flops).c_str(), bytesText(bytes).c_str(),
              intensityText(flops, bytes).c_str());
}

/// The sizes of each bucketed symbol in plan `index` ("batch=4, seq=32").
std::string planLabel(const Manifest &manifest, size_t index) {
  std::string label;
  for (size_t s = manifest.symbols.size(); s-- > 0;) {
    const package::ShapeSymbol &symbol = manifest.symbols[s];
    label = symbol.name + "=" + std::to_string(symbol.buckets[index % symbol.buckets.size()]) +
            (label.empty() ? "" : ", ") + label;
    index /= symbol.buckets.size();
  }
  return label;
}

/// The shape buckets: each symbol's sizes and whether it may be padded, then one line per plan.
void printBuckets(const Manifest &manifest) {
  if (manifest.symbols.empty())
    return;
  std::printf("shape buckets: %zu plans sharing the weights; inputs above are plan 0's\n",
              manifest.additionalPlans.size() + 1);
  for (const package::ShapeSymbol &symbol : manifest.symbols) {
    std::vector<std::string> sizes;
    for (int64_t bucket : symbol.buckets)
      sizes.push_back(std::to_string(bucket));
    std::printf("  %s: %s; %s%s\n", symbol.name.c_str(), joined(sizes).c_str(),
                symbol.paddable ? "may be padded (a size between buckets runs in the next one up)"
                                : "exact sizes only",
                symbol.paddable || symbol.paddingRefusal.empty()
                    ? ""
                    : (": not proved independent, " + symbol.paddingRefusal).c_str());
  }
  for (size_t p = 0; p <= manifest.additionalPlans.size(); ++p) {
    uint64_t arena = p == 0 ? manifest.arenaBytes : manifest.additionalPlans[p - 1].arenaBytes;
    size_t steps = p == 0 ? manifest.steps.size() : manifest.additionalPlans[p - 1].steps.size();
    std::printf("  plan %zu  %s  arena %s, %zu steps\n", p, planLabel(manifest, p).c_str(),
                humanBytes(static_cast<int64_t>(arena)).c_str(), steps);
  }
}

void printText(const std::string &path, const ArtifactFile &file, bool plan) {
  const Manifest &manifest = file.manifest();
  std::printf("artifact: %s (%s)\n", path.c_str(),
              humanBytes(static_cast<int64_t>(file.fileBytes())).c_str());
  if (manifest.target == package::Target::Cuda) {
    std::vector<std::string> ptx; // every PTX version some module carries, first seen first
    for (const package::CudaModule &module : manifest.cudaModules)
      for (const package::CudaBinary &binary : module.binaries)
        if (binary.isPtx && std::find(ptx.begin(), ptx.end(), binary.arch) == ptx.end())
          ptx.push_back(binary.arch);
    std::printf("target: cuda, %s%s\n", joined(manifest.cudaArchs).c_str(),
                ptx.empty() ? "" : (" + PTX " + joined(ptx)).c_str());
  } else {
    std::printf("target: cpu, %s%s\n", joined(manifest.cpuLevels).c_str(),
                manifest.cpuLevels.size() > 1 ? " (the runtime runs the highest this CPU has)" : "");
  }
  std::printf("producer: %s\n", manifest.producer.c_str());
  std::printf("abi version: %u\n", file.view().header.abiVersion);
  if (manifest.storagePrecision != DType::Float32)
    std::printf("precision: float32 weights and activations stored as %s, computed in f32\n",
                std::string(dtypeName(manifest.storagePrecision)).c_str());
  printSignature("inputs", manifest.inputs);
  printSignature("outputs", manifest.outputs);
  printBoundInputs(manifest);
  printBuckets(manifest);
  std::printf("arena: %s for %s of activations (ratio %.3f)\n",
              humanBytes(static_cast<int64_t>(manifest.arenaBytes)).c_str(),
              humanBytes(static_cast<int64_t>(manifest.activationBytes)).c_str(),
              arenaRatio(manifest));
  std::printf("weights: %s (%" PRIu64 " bytes) in %zu tensors\n",
              humanBytes(static_cast<int64_t>(file.view().header.weightsBytes)).c_str(),
              file.view().header.weightsBytes, manifest.weightTable.size());
  if (manifest.target == package::Target::Cuda) {
    std::printf("cuda modules: %zu\n", manifest.cudaModules.size());
    for (size_t index = 0; index < manifest.cudaModules.size(); ++index) {
      size_t kernels = static_cast<size_t>(
          std::count_if(manifest.kernels.begin(), manifest.kernels.end(),
                        [&](const package::Kernel &kernel) { return kernel.cudaModule == index; }));
      std::vector<std::string> binaries;
      for (const package::CudaBinary &binary : manifest.cudaModules[index].binaries)
        binaries.push_back(binaryText(binary));
      std::printf("  module %zu (%zu kernels): %s\n", index, kernels, joined(binaries).c_str());
    }
  }
  std::printf("kernels: %zu from %" PRId64 " source nodes\n", manifest.kernels.size(),
              manifest.sourceNodeCount);
  size_t width = 0;
  for (const package::Kernel &kernel : manifest.kernels)
    width = std::max(width, std::min<size_t>(kernel.name.size(), 60));
  int indexWidth = static_cast<int>(std::to_string(manifest.kernels.size()).size());
  for (size_t index = 0; index < manifest.kernels.size(); ++index) {
    const package::Kernel &kernel = manifest.kernels[index];
    std::printf("  %*zu  %-*s  %s", indexWidth, index, static_cast<int>(width), kernel.name.c_str(),
                kernel.generator.c_str());
    if (manifest.target == package::Target::Cuda)
      std::printf("  module %u", kernel.cudaModule);
    std::printf("\n");
  }
  if (plan) {
    printPlan(manifest);
    printPlanSummary(manifest);
  }
}

void writeSignature(io::JsonWriter &json, const std::vector<package::TensorSignature> &tensors) {
  json.beginArray();
  for (const package::TensorSignature &tensor : tensors) {
    json.beginObject();
    json.key("name").value(tensor.name);
    json.key("dtype").value(std::string(dtypeName(tensor.dtype)));
    json.key("dims").beginArray();
    for (int64_t dim : tensor.dims)
      json.value(dim);
    json.endArray();
    json.key("dim_symbols").beginArray();
    for (size_t axis = 0; axis < tensor.dims.size(); ++axis)
      json.value(axis < tensor.dimSymbols.size() ? tensor.dimSymbols[axis] : std::string());
    json.endArray();
    json.key("type").value(typeText(tensor));
    json.endObject();
  }
  json.endArray();
}

void writeDims(io::JsonWriter &json, const uint32_t (&dims)[3]) {
  json.beginArray();
  for (uint32_t dim : dims)
    json.value(static_cast<int64_t>(dim));
  json.endArray();
}

void writeBuffer(io::JsonWriter &json, const package::BufferRef &ref) {
  json.beginObject()
      .key("region")
      .value(regionName(ref.region))
      .key("offset")
      .value(static_cast<int64_t>(ref.offset))
      .endObject();
}

void writeStrings(io::JsonWriter &json, const std::vector<std::string> &items) {
  json.beginArray();
  for (const std::string &item : items)
    json.value(item);
  json.endArray();
}

void writePlan(io::JsonWriter &json, const Manifest &manifest) {
  json.beginArray();
  for (size_t index = 0; index < manifest.steps.size(); ++index) {
    const package::Step &step = manifest.steps[index];
    json.beginObject();
    json.key("step").value(static_cast<int64_t>(index));
    if (const auto *launch = std::get_if<package::Launch>(&step)) {
      const package::Kernel &kernel = manifest.kernels[launch->kernel];
      json.key("kind").value("launch");
      json.key("kernel").value(kernel.name);
      json.key("kernel_index").value(static_cast<int64_t>(launch->kernel));
      json.key("ops");
      writeStrings(json, kernel.ops);
      json.key("grid");
      writeDims(json, launch->grid);
      json.key("block");
      writeDims(json, launch->block);
      json.key("shared_bytes").value(static_cast<int64_t>(launch->sharedBytes));
      json.key("parallel_extent").value(launch->parallelExtent);
      json.key("flops").value(kernel.flops);
      json.key("bytes_moved").value(kernel.bytesMoved);
      json.key("args").beginArray();
      for (const package::BufferRef &arg : launch->args)
        writeBuffer(json, arg);
      json.endArray();
    } else {
      const auto &copy = std::get<package::Copy>(step);
      json.key("kind").value("copy");
      json.key("source");
      writeBuffer(json, copy.source);
      json.key("destination");
      writeBuffer(json, copy.destination);
      json.key("bytes").value(static_cast<int64_t>(copy.bytes));
    }
    json.endObject();
  }
  json.endArray();
}

void printJson(const std::string &path, const ArtifactFile &file, bool plan) {
  const Manifest &manifest = file.manifest();
  io::JsonWriter json;
  json.beginObject();
  json.key("model").value(path);
  json.key("format").value("sinter-artifact");
  json.key("file_bytes").value(static_cast<int64_t>(file.fileBytes()));
  json.key("target").value(targetName(manifest.target));
  json.key("producer").value(manifest.producer);
  json.key("abi_version").value(static_cast<int64_t>(file.view().header.abiVersion));
  json.key("storage_precision").value(std::string(dtypeName(manifest.storagePrecision)));
  if (manifest.target == package::Target::Cpu)
    json.key("cpu_level").value(package::joinedCpuLevels(manifest.cpuLevels));
  else
    json.key("cpu_level").null();
  json.key("cpu_levels");
  writeStrings(json, manifest.cpuLevels);
  json.key("cuda_archs");
  writeStrings(json, manifest.cudaArchs);
  json.key("cuda_modules").beginArray();
  for (size_t index = 0; index < manifest.cudaModules.size(); ++index) {
    json.beginObject();
    json.key("index").value(static_cast<int64_t>(index));
    json.key("binaries").beginArray();
    for (const package::CudaBinary &binary : manifest.cudaModules[index].binaries)
      json.beginObject()
          .key("kind")
          .value(binary.isPtx ? "ptx" : "cubin")
          .key("arch")
          .value(binary.arch)
          .key("bytes")
          .value(static_cast<int64_t>(binary.bytes.size()))
          .endObject();
    json.endArray();
    json.endObject();
  }
  json.endArray();
  json.key("inputs");
  writeSignature(json, manifest.inputs);
  json.key("outputs");
  writeSignature(json, manifest.outputs);
  json.key("bound_inputs").beginArray();
  for (const package::BoundInput &bound : manifest.boundInputs) {
    json.beginObject();
    json.key("name").value(bound.name);
    json.key("dtype").value(std::string(dtypeName(bound.dtype)));
    json.key("dims").beginArray();
    for (int64_t dim : bound.dims)
      json.value(dim);
    json.endArray();
    json.key("hash").value(hashText(bound.valueHash));
    json.key("values");
    if (std::optional<Tensor> value = boundValue(bound)) {
      json.beginArray();
      for (int64_t i = 0; i < value->elementCount(); ++i) {
        if (isFloat(value->dtype()))
          json.value(value->getDouble(i));
        else
          json.value(value->getInt(i));
      }
      json.endArray();
    } else {
      json.null();
    }
    json.endObject();
  }
  json.endArray();
  json.key("shape_buckets").beginArray();
  for (const package::ShapeSymbol &symbol : manifest.symbols) {
    json.beginObject();
    json.key("symbol").value(symbol.name);
    json.key("buckets").beginArray();
    for (int64_t bucket : symbol.buckets)
      json.value(bucket);
    json.endArray();
    json.key("paddable").value(symbol.paddable);
    json.key("padding_refusal").value(symbol.paddingRefusal);
    json.endObject();
  }
  json.endArray();
  json.key("plans").beginArray();
  for (size_t p = 0; p <= manifest.additionalPlans.size(); ++p) {
    const package::Plan *extra = p == 0 ? nullptr : &manifest.additionalPlans[p - 1];
    json.beginObject();
    json.key("label").value(planLabel(manifest, p));
    json.key("inputs");
    writeSignature(json, extra ? extra->inputs : manifest.inputs);
    json.key("outputs");
    writeSignature(json, extra ? extra->outputs : manifest.outputs);
    json.key("arena_bytes").value(static_cast<int64_t>(extra ? extra->arenaBytes : manifest.arenaBytes));
    json.key("steps").value(static_cast<int64_t>(extra ? extra->steps.size() : manifest.steps.size()));
    // The work of one run, by launch (a kernel launched by several steps counts each time).
    double flops = 0, bytes = 0;
    for (const package::Step &step : extra ? extra->steps : manifest.steps)
      if (const auto *launch = std::get_if<package::Launch>(&step)) {
        flops += manifest.kernels[launch->kernel].flops;
        bytes += manifest.kernels[launch->kernel].bytesMoved;
      }
    json.key("flops").value(flops);
    json.key("bytes_moved").value(bytes);
    json.endObject();
  }
  json.endArray();
  json.key("arena_bytes").value(static_cast<int64_t>(manifest.arenaBytes));
  json.key("activation_bytes").value(static_cast<int64_t>(manifest.activationBytes));
  json.key("arena_ratio").value(arenaRatio(manifest));
  json.key("weight_bytes").value(static_cast<int64_t>(file.view().header.weightsBytes));
  json.key("weight_tensors").value(static_cast<int64_t>(manifest.weightTable.size()));
  json.key("kernel_count").value(static_cast<int64_t>(manifest.kernels.size()));
  json.key("source_node_count").value(manifest.sourceNodeCount);
  json.key("step_count").value(static_cast<int64_t>(manifest.steps.size()));
  json.key("launch_count").value(static_cast<int64_t>(launchCount(manifest)));
  json.key("kernels").beginArray();
  for (size_t index = 0; index < manifest.kernels.size(); ++index) {
    const package::Kernel &kernel = manifest.kernels[index];
    json.beginObject();
    json.key("index").value(static_cast<int64_t>(index));
    json.key("name").value(kernel.name);
    json.key("generator").value(kernel.generator);
    json.key("ops");
    writeStrings(json, kernel.ops);
    if (manifest.target == package::Target::Cuda)
      json.key("cuda_module").value(static_cast<int64_t>(kernel.cudaModule));
    json.key("flops").value(kernel.flops);
    json.key("bytes_moved").value(kernel.bytesMoved);
    json.endObject();
  }
  json.endArray();
  if (plan) {
    json.key("plan");
    writePlan(json, manifest);
  }
  json.endObject();
  std::printf("%s\n", json.str().c_str());
}

} // namespace

void inspectArtifact(const std::string &path, bool json, bool plan) {
  std::unique_ptr<ArtifactFile> file = readArtifactFile(path);
  if (json)
    printJson(path, *file, plan);
  else
    printText(path, *file, plan);
}

} // namespace sinter::cli
