// `sinter run`: runs a model on input files and writes or summarises its outputs.
//
// An ONNX model runs on the reference evaluator (`--reference`); a compiled artifact (model.so)
// runs through libsinter_rt, on the target it was compiled for. For ONNX models the steps: pair the input files with the model's inputs (by --input NAME=FILE or
// by position), load and check them against the model's declared types, import the model with
// each input's shape fixed (so symbolic dims such as `batch` bind to what was given), evaluate,
// then write the outputs (.npz, a folder of .npy or .pb files) or print a summary of each. Output
// paths are checked before anything runs, so an existing file stops the run early.
#include "artifact_runner.h"
#include "commands.h"
#include "options.h"

#include "sinter/frontend/onnx.h"
#include "sinter/io/npy.h"
#include "sinter/reference/evaluator.h"
#include "sinter/runtime.hpp"
#include "sinter/support/error.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <set>

namespace sinter::cli {
namespace {

namespace fs = std::filesystem;

struct RunFlags {
  std::string model;
  std::vector<std::string> positionalInputs;
  std::vector<std::string> namedInputs;
  bool reference = false;
  std::string outputFile;
  std::string outputDir;
  std::string outputFormat = "npy";
  bool force = false;
  int threads = 0; ///< CPU artifacts: worker threads, 0 = one per core
  ShapeFlags shapes;
  BindFlags bindings;
};

/// Where the outputs go: one archive, or one file per output, or nowhere (print a summary).
struct OutputPlan {
  std::vector<std::string> names; ///< output names (archive keys)
  std::vector<std::string> paths; ///< files to write (one for -o, one per output for a folder)
};

/// A file name for a tensor name: characters other than [A-Za-z0-9._-] become '_', a leading
/// '.' gets a '_' before it (no hidden files, no ".."), and the result is at most 200 bytes.
std::string sanitizeFileStem(const std::string &name) {
  std::string stem;
  for (char c : name) {
    bool safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                c == '.' || c == '_' || c == '-';
    stem += safe ? c : '_';
  }
  if (stem.empty())
    stem = "output";
  if (stem[0] == '.')
    stem = "_" + stem;
  if (stem.size() > 200)
    stem.resize(200);
  return stem;
}

/// Makes each stem unique, ignoring case (case-insensitive file systems): "y", "y_2", "y_3".
std::vector<std::string> uniqueStems(const std::vector<std::string> &stems) {
  std::set<std::string> taken;
  auto lower = [](std::string text) {
    for (char &c : text)
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return text;
  };
  std::vector<std::string> unique;
  for (const std::string &stem : stems) {
    std::string candidate = stem;
    for (int suffix = 2; taken.count(lower(candidate)); ++suffix)
      candidate = stem + "_" + std::to_string(suffix);
    taken.insert(lower(candidate));
    unique.push_back(candidate);
  }
  return unique;
}

OutputPlan planOutputs(const RunFlags &flags, const std::vector<std::string> &outputNames) {
  OutputPlan plan;
  if (!flags.outputFile.empty()) {
    // Archive keys need no sanitising, only uniqueness (an output name listed twice).
    std::set<std::string> seen;
    for (const std::string &name : outputNames) {
      std::string key = name;
      for (int suffix = 2; seen.count(key); ++suffix)
        key = name + "_" + std::to_string(suffix);
      seen.insert(key);
      plan.names.push_back(key);
    }
    plan.paths.push_back(flags.outputFile);
    fs::path parent = fs::path(flags.outputFile).parent_path();
    std::error_code error;
    if (!parent.empty() && !fs::is_directory(parent, error))
      userError("cannot write '", flags.outputFile, "': folder '", parent.string(),
                "' does not exist");
  } else if (!flags.outputDir.empty()) {
    plan.names = outputNames;
    std::vector<std::string> stems;
    for (size_t i = 0; i < outputNames.size(); ++i)
      stems.push_back(flags.outputFormat == "pb" ? "output_" + std::to_string(i)
                                                 : sanitizeFileStem(outputNames[i]));
    stems = uniqueStems(stems);
    for (size_t i = 0; i < stems.size(); ++i) {
      plan.paths.push_back((fs::path(flags.outputDir) / (stems[i] + "." + flags.outputFormat))
                               .string());
      if (flags.outputFormat == "npy" && stems[i] != outputNames[i])
        spdlog::info("output '{}' is written as {}", outputNames[i], plan.paths.back());
    }
  }
  std::error_code error;
  if (!flags.outputDir.empty() && fs::exists(flags.outputDir, error) &&
      !fs::is_directory(flags.outputDir, error))
    userError("--output-dir '", flags.outputDir, "' exists and is not a directory");
  for (const std::string &path : plan.paths) {
    if (fs::is_directory(path, error))
      userError("output '", path, "' is a directory");
    if (fs::exists(path, error) && !flags.force)
      userError("output file '", path, "' already exists; pass --force to overwrite it");
  }
  return plan;
}

void writeOutputs(const RunFlags &flags, const OutputPlan &plan, std::vector<Tensor> &outputs) {
  if (!flags.outputFile.empty()) {
    std::vector<io::NamedTensor> entries;
    for (size_t i = 0; i < outputs.size(); ++i)
      entries.emplace_back(plan.names[i], std::move(outputs[i]));
    io::writeNpz(flags.outputFile, entries);
    spdlog::info("wrote {} output{} to {}", entries.size(), entries.size() == 1 ? "" : "s",
                 flags.outputFile);
    return;
  }
  std::error_code error;
  fs::create_directories(flags.outputDir, error);
  if (error)
    userError("cannot create --output-dir '", flags.outputDir, "': ", error.message());
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (flags.outputFormat == "pb")
      onnx::writeTensorProtoFile(plan.paths[i], outputs[i]);
    else
      io::writeNpy(plan.paths[i], outputs[i]);
  }
  spdlog::info("wrote {} output{} to {}", outputs.size(), outputs.size() == 1 ? "" : "s",
               flags.outputDir);
}

std::string formatValue(const Tensor &tensor, int64_t i) {
  char buffer[48];
  if (isFloat(tensor.dtype()) || isLowPrecisionFloat(tensor.dtype()))
    std::snprintf(buffer, sizeof buffer, "%.6g", tensor.getDouble(i));
  else if (tensor.dtype() == DType::Bool)
    return tensor.getInt(i) ? "true" : "false";
  else if (tensor.dtype() == DType::Uint64)
    std::snprintf(buffer, sizeof buffer, "%llu",
                  static_cast<unsigned long long>(tensor.getInt(i)));
  else
    std::snprintf(buffer, sizeof buffer, "%lld", static_cast<long long>(tensor.getInt(i)));
  return buffer;
}

/// "y: f32[2,3]  min -1  max 2.5  mean 0.25" and the first values.
void printSummary(const std::string &name, const Tensor &tensor) {
  std::printf("%s: %s", name.c_str(), tensor.type().str().c_str());
  int64_t count = tensor.elementCount();
  if (count == 0) {
    std::printf("  (empty)\n");
    return;
  }
  double minimum = INFINITY, maximum = -INFINITY, sum = 0;
  int64_t nans = 0, minIndex = -1, maxIndex = -1;
  for (int64_t i = 0; i < count; ++i) {
    double value = tensor.getDouble(i);
    if (std::isnan(value)) {
      ++nans;
      continue;
    }
    sum += value;
    if (minIndex < 0 || value < minimum)
      minimum = value, minIndex = i;
    if (maxIndex < 0 || value > maximum)
      maximum = value, maxIndex = i;
  }
  if (minIndex >= 0)
    std::printf("  min %s  max %s  mean %.6g", formatValue(tensor, minIndex).c_str(),
                formatValue(tensor, maxIndex).c_str(), sum / double(count - nans));
  if (nans)
    std::printf("  nan %lld", static_cast<long long>(nans));
  std::printf("\n  [");
  constexpr int64_t kShown = 8;
  for (int64_t i = 0; i < std::min(count, kShown); ++i)
    std::printf("%s%s", i ? ", " : "", formatValue(tensor, i).c_str());
  std::printf("%s]\n", count > kShown ? ", ..." : "");
}

void runReference(const RunFlags &flags) {
  onnx::ImportOptions options = parseShapeFlags(flags.shapes);
  parseBindFlags(flags.bindings, options);
  onnx::ModelSummary summary = onnx::summarizeModel(flags.model);
  // Bound inputs are constants of the imported model; the files feed the others, in order.
  summary.inputs = unboundPorts(summary.inputs, options);
  std::vector<InputFile> files =
      pairInputFiles(summary.inputs, flags.namedInputs, flags.positionalInputs);

  // Load the inputs and check them against the declared types before importing.
  std::map<std::string, Tensor> inputs;
  std::map<std::string, std::pair<int64_t, std::string>> symbols;
  for (const auto &[symbol, size] : options.dimBindings)
    symbols[symbol] = {size, "--dim " + symbol + "=" + std::to_string(size)};
  for (const InputFile &file : files) {
    spdlog::debug("reading input '{}' from {}", file.name, file.path);
    Tensor tensor = loadTensorFile(file.path);
    for (const auto &port : summary.inputs)
      if (port.name == file.name)
        checkInputAgainstType(file, tensor, port.type, symbols);
    auto shape = options.inputShapes.find(file.name);
    if (shape != options.inputShapes.end() && shape->second != tensor.dims())
      userError("--shape gives input '", file.name, "' the shape ",
                shapeStr(shapeOf(shape->second)), " but ", file.path, " has shape ",
                shapeStr(shapeOf(tensor.dims())));
    options.inputShapes[file.name] = tensor.dims();
    inputs.emplace(file.name, std::move(tensor));
  }

  // Output names are the model's; check where they go before the work starts.
  std::vector<std::string> outputNames;
  for (const auto &port : summary.outputs)
    outputNames.push_back(port.name);
  OutputPlan plan = planOutputs(flags, outputNames);

  auto start = std::chrono::steady_clock::now();
  std::unique_ptr<Graph> graph = onnx::importModel(flags.model, options);
  std::vector<Tensor> ordered;
  for (const Value *input : graph->inputs()) {
    auto found = inputs.find(input->name());
    if (found == inputs.end())
      userError("missing input '", input->name(), "': ", input->type().str(), "; ",
                describeExpectedInputs(summary.inputs));
    ordered.push_back(std::move(found->second));
  }
  SINTER_ASSERT(graph->outputs().size() == outputNames.size(), "the imported graph has ",
                graph->outputs().size(), " outputs but the model lists ", outputNames.size());
  auto imported = std::chrono::steady_clock::now();
  spdlog::debug("imported {} nodes in {:.1f} ms", graph->numNodes(),
                std::chrono::duration<double, std::milli>(imported - start).count());

  std::vector<Tensor> outputs = reference::evaluate(*graph, ordered);
  spdlog::debug("reference evaluation took {:.1f} ms",
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() -
                                                          imported)
                    .count());
  SINTER_ASSERT(outputs.size() == outputNames.size(), "the evaluator returned ", outputs.size(),
                " outputs for ", outputNames.size());

  if (plan.paths.empty()) {
    for (size_t i = 0; i < outputs.size(); ++i)
      printSummary(outputNames[i], outputs[i]);
    std::fflush(stdout);
  } else {
    writeOutputs(flags, plan, outputs);
  }
}

void runArtifact(const RunFlags &flags) {
  if (flags.reference)
    userError("--reference runs ONNX models; '", flags.model, "' is a compiled artifact");
  if (!flags.shapes.shapes.empty() || !flags.shapes.dims.empty())
    userError("--shape and --dim are fixed when compiling; the artifact's shapes are static");
  if (!flags.bindings.empty())
    userError("--bind-input binds an input when compiling (sinter compile --bind-input); '",
              flags.model, "' is compiled already: feed its inputs with --input NAME=FILE");
  rt::Model model = loadArtifact(flags.model);
  std::vector<onnx::ModelSummary::Port> inputPorts = artifactPorts(model, true);
  std::vector<onnx::ModelSummary::Port> outputPorts = artifactPorts(model, false);
  std::vector<InputFile> files = pairInputFiles(inputPorts, flags.namedInputs, flags.positionalInputs);
  std::vector<std::string> outputNames;
  for (const auto &port : outputPorts)
    outputNames.push_back(port.name);
  OutputPlan plan = planOutputs(flags, outputNames);

  std::map<std::string, std::pair<int64_t, std::string>> symbols;
  std::map<std::string, Tensor> loaded;
  for (const InputFile &file : files) {
    Tensor tensor = loadTensorFile(file.path);
    for (const auto &port : inputPorts)
      if (port.name == file.name)
        checkInputAgainstType(file, tensor, port.type, symbols);
    loaded.emplace(file.name, std::move(tensor));
  }
  std::vector<const Tensor *> inputs;
  for (const auto &port : inputPorts)
    inputs.push_back(&loaded.at(port.name));
  std::vector<Tensor> results = runArtifactOnce(model, inputs, flags.threads);
  if (plan.paths.empty()) {
    for (size_t i = 0; i < results.size(); ++i)
      printSummary(outputNames[i], results[i]);
    std::fflush(stdout);
  } else {
    writeOutputs(flags, plan, results);
  }
}

void runModel(const RunFlags &flags) {
  if (flags.outputFormat == "pb" && !flags.outputFile.empty())
    userError("--output-format pb writes one file per output: use it with --output-dir, not -o");
  if (flags.outputFormat != "npy" && flags.outputFormat != "pb")
    userError("--output-format must be npy or pb, not '", flags.outputFormat, "'");
  switch (classifyModelFile(flags.model)) {
  case ModelKind::Artifact:
    runArtifact(flags);
    return;
  case ModelKind::Onnx:
    if (!flags.reference)
      userError("'", flags.model, "' is an ONNX model: use --reference or compile the model first");
    runReference(flags);
    return;
  }
}

} // namespace

Command addRunCommand(CLI::App &parent) {
  auto flags = std::make_shared<RunFlags>();
  CLI::App *command = parent.add_subcommand("run", "Run a model on input tensors");
  command->add_option("model", flags->model, "The model: a compiled artifact (.so) or an ONNX model (with --reference)")->required();
  command->add_option("inputs", flags->positionalInputs,
                      "Input files (.npy or .pb) in the model's input order");
  addRepeatableOption(*command, "-i,--input", flags->namedInputs,
                      "An input by name: NAME=FILE, FILE .npy or TensorProto .pb (repeatable)",
                      "NAME=FILE");
  command->add_flag("--reference", flags->reference,
                    "Run an ONNX model with the reference evaluator");
  CLI::Option *output = command->add_option("-o,--output", flags->outputFile,
                                            "Write all outputs to one .npz, keyed by output name");
  CLI::Option *outputDir = command->add_option(
      "--output-dir", flags->outputDir, "Write one file per output into this folder");
  output->excludes(outputDir);
  outputDir->excludes(output);
  command->add_option("--output-format", flags->outputFormat,
                      "With --output-dir: npy (NAME.npy per output, the default) or pb "
                      "(output_<i>.pb per output, ONNX TensorProto)");
  command->add_flag("-f,--force", flags->force, "Overwrite existing output files");
  command->add_option("--threads", flags->threads, "CPU artifacts: worker threads (0: one per core)")
      ->check(CLI::NonNegativeNumber);
  addShapeFlags(*command, flags->shapes);
  addBindFlags(*command, flags->bindings);
  return {command, [flags] { runModel(*flags); }};
}

} // namespace sinter::cli
