// `sinter inspect`: what a model file holds, as text for a person or JSON for a script.
//
// For an ONNX model it reports the summary the importer gives without importing (so models with
// unsupported ops can still be inspected): versions, producer, inputs and outputs with types, the
// op histogram, parameter totals and unsupported ops. Then it validates what it summarised by
// importing the model as `compile` does: a model that will not import (a cycle, an undefined
// value, external data outside the model's folder, a short initializer, a shape too large,
// unsupported ops) gets compile's own message and exit 1, after the summary. `--ir` prints the
// imported text IR. Compiled artifacts (model.so) are the other branch, in inspect_artifact.cpp.
#include "commands.h"
#include "inspect_artifact.h"
#include "options.h"

#include "sinter/frontend/onnx.h"
#include "sinter/io/json.h"
#include "sinter/ir/printer.h"
#include "sinter/support/error.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>

namespace sinter::cli {
namespace {

struct InspectFlags {
  std::string model;
  bool json = false;
  bool ir = false;
  bool fullConstants = false;
  bool plan = false;
  ShapeFlags shapes;
  BindFlags bindings;
};

/// Constants above this many bytes print as "dense<elided N bytes>" unless --full-constants.
constexpr size_t kElideConstantsAbove = 64;

/// (name, count) sorted by count, most first, then by name.
std::vector<std::pair<std::string, int64_t>> byCount(const std::map<std::string, int64_t> &counts) {
  std::vector<std::pair<std::string, int64_t>> sorted(counts.begin(), counts.end());
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto &a, const auto &b) { return a.second > b.second; });
  return sorted; // std::map gave name order; the stable sort keeps it within equal counts
}

int64_t total(const std::map<std::string, int64_t> &counts) {
  int64_t sum = 0;
  for (const auto &entry : counts)
    sum += entry.second;
  return sum;
}

/// The model imported as `compile` imports it: its text IR when --ir asks for it, and why it will
/// not import (the importer's message, the one `compile` gives) when it will not.
struct ImportCheck {
  std::string ir;
  std::optional<std::string> error;
};

ImportCheck checkImport(const InspectFlags &flags) {
  ImportCheck check;
  try {
    onnx::ImportOptions importOptions = parseShapeFlags(flags.shapes);
    parseBindFlags(flags.bindings, importOptions);
    std::unique_ptr<Graph> graph = onnx::importModel(flags.model, importOptions);
    if (flags.ir) {
      PrintOptions options;
      options.elideConstantsAbove = flags.fullConstants ? 0 : kElideConstantsAbove;
      check.ir = printGraph(*graph, options);
    }
  } catch (const UserError &error) {
    check.error = error.what();
  }
  return check;
}

void printPorts(const char *title, const std::vector<onnx::ModelSummary::Port> &ports) {
  std::printf("%s:\n", title);
  if (ports.empty())
    std::printf("  (none)\n");
  size_t width = 0;
  for (const auto &port : ports)
    width = std::max(width, std::min<size_t>(port.name.size(), 40));
  for (const auto &port : ports)
    std::printf("  %-*s  %s\n", static_cast<int>(width), port.name.c_str(), port.type.c_str());
}

void printCounts(const std::vector<std::pair<std::string, int64_t>> &counts) {
  size_t width = 0;
  for (const auto &[name, count] : counts)
    width = std::max(width, std::min<size_t>(name.size(), 40));
  for (const auto &[name, count] : counts)
    std::printf("  %-*s  %lld\n", static_cast<int>(width), name.c_str(),
                static_cast<long long>(count));
}

void printOnnxText(const InspectFlags &flags, const onnx::ModelSummary &summary) {
  std::printf("model: %s\n", flags.model.c_str());
  std::printf("format: ONNX, IR version %lld, opset %lld\n",
              static_cast<long long>(summary.irVersion), static_cast<long long>(summary.opset));
  std::printf("producer: %s\n", summary.producer.empty() ? "(unknown)" : summary.producer.c_str());
  printPorts("inputs", summary.inputs);
  printPorts("outputs", summary.outputs);
  std::printf("ops: %lld nodes, %zu op types\n", static_cast<long long>(total(summary.opHistogram)),
              summary.opHistogram.size());
  printCounts(byCount(summary.opHistogram));
  std::printf("parameters: %lld (%s), %lld bytes (%s)\n",
              static_cast<long long>(summary.parameterCount),
              humanCount(summary.parameterCount).c_str(),
              static_cast<long long>(summary.parameterBytes),
              humanBytes(summary.parameterBytes).c_str());
  if (summary.unsupportedOps.empty()) {
    std::printf("unsupported ops: none\n");
  } else {
    std::printf("unsupported ops: %lld nodes, %zu op types\n",
                static_cast<long long>(total(summary.unsupportedOps)),
                summary.unsupportedOps.size());
    printCounts(byCount(summary.unsupportedOps));
  }
  std::fflush(stdout);
  ImportCheck check = checkImport(flags);
  if (check.error) {
    std::printf("imports: no (the model will not compile; the reason follows on stderr)\n");
    std::fflush(stdout);
    userError(*check.error);
  }
  std::printf("imports: yes\n");
  if (flags.ir) {
    std::printf("\n%s", check.ir.c_str());
    if (!check.ir.empty() && check.ir.back() != '\n')
      std::printf("\n");
  }
}

void writePorts(io::JsonWriter &json, const std::vector<onnx::ModelSummary::Port> &ports) {
  json.beginArray();
  for (const auto &port : ports)
    json.beginObject().key("name").value(port.name).key("type").value(port.type).endObject();
  json.endArray();
}

void writeCounts(io::JsonWriter &json, const std::map<std::string, int64_t> &counts) {
  json.beginArray();
  for (const auto &[name, count] : byCount(counts))
    json.beginObject().key("op").value(name).key("count").value(count).endObject();
  json.endArray();
}

void printOnnxJson(const InspectFlags &flags, const onnx::ModelSummary &summary) {
  // Import before writing anything: the document says whether the model imports, and why not.
  ImportCheck check = checkImport(flags);
  io::JsonWriter json;
  json.beginObject();
  json.key("model").value(flags.model);
  json.key("format").value("onnx");
  json.key("ir_version").value(summary.irVersion);
  json.key("opset").value(summary.opset);
  json.key("producer").value(summary.producer);
  json.key("inputs");
  writePorts(json, summary.inputs);
  json.key("outputs");
  writePorts(json, summary.outputs);
  json.key("node_count").value(total(summary.opHistogram));
  json.key("ops");
  writeCounts(json, summary.opHistogram);
  json.key("parameters").beginObject();
  json.key("count").value(summary.parameterCount);
  json.key("bytes").value(summary.parameterBytes);
  json.key("count_human").value(humanCount(summary.parameterCount));
  json.key("bytes_human").value(humanBytes(summary.parameterBytes));
  json.endObject();
  json.key("unsupported_ops");
  writeCounts(json, summary.unsupportedOps);
  json.key("imports").value(!check.error);
  if (check.error)
    json.key("import_error").value(*check.error);
  else if (flags.ir)
    json.key("ir").value(check.ir);
  json.endObject();
  std::printf("%s\n", json.str().c_str());
  std::fflush(stdout);
  if (check.error)
    userError(*check.error);
}

void inspectOnnx(const InspectFlags &flags) {
  spdlog::debug("reading the ONNX model '{}'", flags.model);
  onnx::ModelSummary summary = onnx::summarizeModel(flags.model);
  if (flags.json)
    printOnnxJson(flags, summary);
  else
    printOnnxText(flags, summary);
}

void runInspect(const InspectFlags &flags) {
  switch (classifyModelFile(flags.model)) {
  case ModelKind::Onnx:
    if (flags.plan)
      userError("--plan lists the steps of a compiled artifact (model.so); '", flags.model,
                "' is an ONNX model");
    inspectOnnx(flags);
    return;
  case ModelKind::Artifact:
    if (flags.ir || flags.fullConstants || !flags.shapes.shapes.empty() ||
        !flags.shapes.dims.empty() || !flags.bindings.empty())
      userError("--ir, --full-constants, --shape, --dim and --bind-input apply to ONNX models; '",
                flags.model,
                "' is a compiled artifact (its shapes were fixed when it was compiled)");
    inspectArtifact(flags.model, flags.json, flags.plan);
    return;
  }
}

} // namespace

Command addInspectCommand(CLI::App &parent) {
  auto flags = std::make_shared<InspectFlags>();
  CLI::App *command = parent.add_subcommand(
      "inspect", "Show what an ONNX model or a compiled artifact (model.so) holds");
  command->add_option("model", flags->model, "The model file (.onnx, or .so from sinter compile)")
      ->required();
  command->add_flag("--json", flags->json, "Print one JSON object instead of text");
  command->add_flag("--plan", flags->plan,
                    "For an artifact, also list every step of its plan: kernel, fused ops, launch "
                    "shape, bytes moved and flops, and copies");
  command->add_flag("--ir", flags->ir, "Also import the model and print its text IR");
  command->add_flag("--full-constants", flags->fullConstants,
                    "With --ir, print every constant in full (by default constants over 64 "
                    "bytes are elided)");
  addShapeFlags(*command, flags->shapes);
  addBindFlags(*command, flags->bindings);
  return {command, [flags] { runInspect(*flags); }};
}

} // namespace sinter::cli
