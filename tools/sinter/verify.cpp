// `sinter verify MODEL.onnx [ARTIFACT.so]`: runs a compiled artifact and a truth on the same
// inputs and compares every output (docs/cli.md, "sinter verify").
//
// The steps: choose the inputs (--input files, --test-data sets, --random sets, or a golden
// folder's), fix the model's input shapes to theirs, compile the model with the compile flags
// unless an artifact is given, run the artifact on each input set, get the truth's outputs (the
// reference evaluator, onnxruntime or a command, the test data's or the golden folder's outputs),
// compare each output within its tolerance, and report (table, --json, --junit). On divergence
// --bisect names the first diverging node (verify_bisect.h); on success --write-golden stores the
// inputs and the truth's outputs. Exit status: 0 within tolerance, 3 outputs diverge, 1 user
// errors, 2 internal errors.
#include "artifact_file.h"
#include "artifact_runner.h"
#include "commands.h"
#include "compile_flags.h"
#include "options.h"
#include "sinter/support/sha256.h"
#include "verify_bisect.h"
#include "verify_golden.h"
#include "verify_inputs.h"
#include "verify_report.h"
#include "verify_truth.h"

#include "sinter/frontend/onnx.h"
#include "sinter/io/npy.h"
#include "sinter/reference/evaluator.h"
#include "sinter/support/error.h"
#include "sinter/support/temporary_folder.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <set>

#include <unistd.h>

#ifndef SINTER_VERSION
#define SINTER_VERSION "unknown"
#endif

namespace sinter::cli {
namespace {

namespace fs = std::filesystem;
using Ports = std::vector<onnx::ModelSummary::Port>;

struct VerifyFlags {
  std::string model;
  std::string artifact;
  std::string against;
  std::string againstCommand;
  std::string truthModel;
  std::string golden;
  std::string writeGolden;
  std::string testData;
  std::vector<std::string> inputs;
  int random = -1; ///< -1: not given
  uint64_t seed = 0;
  std::vector<std::string> rtol, atol;
  bool json = false;
  std::string junit;
  bool bisect = false;
  std::string output;
  bool force = false;
  int threads = 0;
  CompileFlags compile;
};

/// The compile flags verify passes on: when an artifact is given, the target, CPU level and
/// storage precision it was compiled with (for --bisect's compiles), unless given; given ones
/// must agree with it.
CompileFlags effectiveCompileFlags(const VerifyFlags &flags, const CLI::App &command,
                                   const package::Manifest *manifest) {
  CompileFlags compile = flags.compile;
  if (!manifest)
    return compile;
  auto given = [&](const char *name) { return command.get_option(name)->count() > 0; };
  auto agree = [&](const char *name, std::string &value, const std::string &recorded) {
    if (!given(name))
      value = recorded;
    else if (value != recorded)
      userError(flags.artifact, " was compiled with ", name, " ", recorded, ", not ", value,
                "; give the flags it was compiled with (or none of these)");
  };
  agree("--target", compile.target, manifest->target == package::Target::Cpu ? "cpu" : "cuda");
  if (manifest->target == package::Target::Cpu)
    agree("--cpu", compile.cpu, package::joinedCpuLevels(manifest->cpuLevels));
  else {
    std::string archs;
    for (const std::string &arch : manifest->cudaArchs)
      archs += (archs.empty() ? "" : ",") + arch;
    agree("--arch", compile.archs, archs);
  }
  std::string precision = manifest->storagePrecision == DType::Float16    ? "fp16"
                          : manifest->storagePrecision == DType::BFloat16 ? "bf16"
                                                                          : "fp32";
  if (!(given("--precision") && compile.precision == "tf32" && precision == "fp32"))
    agree("--precision", compile.precision, precision);
  return compile;
}

std::string portNames(const Ports &ports) {
  std::string names;
  for (const auto &port : ports)
    names += (names.empty() ? "" : ", ") + port.name;
  return names.empty() ? "none" : names;
}

/// Checks a case's inputs against the ports' types (and one size per symbol).
void checkCase(const VerifyCase &data, const Ports &ports, const std::string &origin) {
  std::map<std::string, std::pair<int64_t, std::string>> symbols;
  for (size_t k = 0; k < ports.size(); ++k)
    checkInputAgainstType({ports[k].name, origin + "/" + data.name + " input " + std::to_string(k), origin},
                          data.inputs[k], ports[k].type, symbols);
}

/// The input sets, from wherever the flags say.
std::vector<VerifyCase> collectCases(const VerifyFlags &flags, const Ports &ports, const Ports &outputs,
                                     const onnx::ImportOptions &importOptions, const rt::Model *artifact,
                                     const GoldenRecord *golden, std::string &description) {
  std::vector<VerifyCase> cases;
  if (golden) {
    cases = golden->cases;
    description = "golden " + flags.golden;
    for (const VerifyCase &data : cases)
      checkCase(data, ports, flags.golden);
    return cases;
  }
  if (!flags.inputs.empty()) {
    VerifyCase data;
    data.name = "inputs";
    std::map<std::string, std::pair<int64_t, std::string>> symbols;
    for (const auto &[symbol, size] : importOptions.dimBindings)
      symbols[symbol] = {size, "--dim " + symbol + "=" + std::to_string(size)};
    for (const InputFile &file : pairInputFiles(ports, flags.inputs, {})) {
      Tensor tensor = loadTensorFile(file.path);
      for (const auto &port : ports)
        if (port.name == file.name)
          checkInputAgainstType(file, tensor, port.type, symbols);
      data.inputs.push_back(std::move(tensor));
    }
    description = "--input files";
    return {data};
  }
  if (!flags.testData.empty()) {
    cases = readTestDataSets(flags.testData, ports.size(), outputs.size());
    for (const VerifyCase &data : cases)
      checkCase(data, ports, flags.testData);
    description = "test data " + flags.testData + " (" + std::to_string(cases.size()) + " set" +
                  (cases.size() == 1 ? ")" : "s)");
    return cases;
  }
  // Random inputs: shapes from the artifact, or from the model with --shape/--dim applied.
  int count = flags.random < 0 ? 1 : flags.random;
  if (count < 1)
    userError("--random ", flags.random, ": give at least one input set");
  onnx::ImportOptions options = importOptions;
  if (artifact)
    for (const sinter_tensor_info &info : artifact->inputs())
      options.inputShapes[info.name] = std::vector<int64_t>(info.dims, info.dims + info.rank);
  std::unique_ptr<Graph> graph = onnx::importModel(flags.model, options);
  for (int c = 0; c < count; ++c) {
    VerifyCase data;
    data.name = "random_" + std::to_string(c);
    for (size_t k = 0; k < graph->inputs().size(); ++k) {
      const Value &input = *graph->inputs()[k];
      if (!isStatic(input.shape()))
        userError("input '", input.name(), "' has type ", input.type().str(),
                  ": random inputs need every dim; fix them with --dim SYMBOL=N or --shape ", input.name(), "=DIMS");
      int64_t high = indexBound(input).value_or(2);
      data.inputs.push_back(randomTensor(input.dtype(), staticDims(input.shape()), flags.seed, uint64_t(c), k, high,
                                         "input '" + input.name() + "'"));
    }
    cases.push_back(std::move(data));
  }
  description = "random " + std::to_string(count) + " (seed " + std::to_string(flags.seed) + ")";
  return cases;
}

/// One output's truth by name, or a UserError listing the truth's outputs.
const Tensor &truthOf(const std::string &name, const std::vector<std::string> &names,
                      const std::vector<Tensor> &values, const std::string &truth) {
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == name)
      return values[i];
  std::string list;
  for (const std::string &other : names)
    list += (list.empty() ? "" : ", ") + other;
  userError("the truth (", truth, ") has no output '", name, "'; its outputs: ", list);
}

std::string storageName(DType precision) {
  return precision == DType::Float16 ? "fp16" : precision == DType::BFloat16 ? "bf16" : "fp32";
}

void runVerify(const VerifyFlags &flags, const CLI::App &command) {
  auto start = std::chrono::steady_clock::now();
  if (classifyModelFile(flags.model) != ModelKind::Onnx)
    userError("'", flags.model, "' is a compiled artifact; verify takes the ONNX model first: sinter verify "
              "MODEL.onnx [ARTIFACT.so]");
  if (!flags.artifact.empty() && classifyModelFile(flags.artifact) != ModelKind::Artifact)
    userError("'", flags.artifact, "' is not a compiled artifact (.so); sinter verify MODEL.onnx [ARTIFACT.so]");
  int truths = !flags.against.empty() + !flags.againstCommand.empty() + !flags.golden.empty();
  if (truths > 1)
    userError("--against, --against-command and --golden each choose the truth; give one of them");
  std::string against = flags.against.empty() ? "reference" : flags.against;
  if (against != "reference" && against != "onnxruntime" && against != "test-data")
    userError("unknown --against '", against, "'; use reference, onnxruntime or test-data");
  int sources = !flags.inputs.empty() + !flags.testData.empty() + (flags.random >= 0) + !flags.golden.empty();
  if (sources > 1)
    userError("give the inputs one way: --input, --test-data, --random, or --golden (which holds its own)");
  if (against == "test-data" && flags.testData.empty())
    userError("--against test-data compares with the output_K.pb files of --test-data DIR; give --test-data");
  if (!flags.golden.empty() && !flags.writeGolden.empty())
    userError("--golden compares with a golden folder and --write-golden writes one; give one of them");
  if (!flags.golden.empty() && !flags.truthModel.empty())
    userError("--truth-model names the model the truth runs; a golden folder holds the truth's outputs already");
  if (!flags.writeGolden.empty() && fs::exists(flags.writeGolden) && !flags.force)
    userError("--write-golden: '", flags.writeGolden, "' exists; pass --force to replace it");
  if (!flags.output.empty() && !flags.artifact.empty())
    userError("-o keeps the artifact verify compiles, but ", flags.artifact, " is given and nothing is compiled");
  if (!flags.output.empty() && fs::exists(flags.output) && !flags.force)
    userError(flags.output, " exists; pass --force to replace it");
  const std::string truthModel = flags.truthModel.empty() ? flags.model : flags.truthModel;
  if (!flags.truthModel.empty() && classifyModelFile(flags.truthModel) != ModelKind::Onnx)
    userError("--truth-model '", flags.truthModel, "' is not an ONNX model");

  ToleranceSettings tolerances = ToleranceSettings::parse(flags.rtol, flags.atol);
  // A truth command is found (and onnxruntime checked) before any work.
  std::vector<std::string> truthCommand;
  if (!flags.againstCommand.empty())
    truthCommand = shellCommand(flags.againstCommand);
  else if (against == "onnxruntime")
    truthCommand = onnxruntimeCommand();
  std::string modelHash = sha256Hex(io::readFileBytes(flags.model));
  std::unique_ptr<ArtifactFile> artifactFile;
  std::unique_ptr<rt::Model> artifact;
  if (!flags.artifact.empty()) {
    artifactFile = readArtifactFile(flags.artifact);
    artifact = std::make_unique<rt::Model>(loadArtifact(flags.artifact));
  }
  CompileFlags compileFlags =
      effectiveCompileFlags(flags, command, artifactFile ? &artifactFile->manifest() : nullptr);
  onnx::ImportOptions importOptions = parseShapeFlags(compileFlags.shapes);
  parseBindFlags(compileFlags.bindings, importOptions);
  onnx::ModelSummary summary = onnx::summarizeModel(flags.model);
  Ports ports = unboundPorts(summary.inputs, importOptions);
  if (artifact) {
    Ports artifactInputs = artifactPorts(*artifact, true);
    bool same = artifactInputs.size() == ports.size();
    for (size_t i = 0; same && i < ports.size(); ++i)
      same = artifactInputs[i].name == ports[i].name;
    if (!same)
      userError(flags.artifact, "'s inputs (", portNames(artifactInputs), ") are not ", flags.model, "'s (",
                portNames(ports), "): was it compiled from another model, or with other --bind-input?");
    ports = artifactInputs; // static types, to check the input files against
  }

  std::unique_ptr<GoldenRecord> golden;
  if (!flags.golden.empty()) {
    golden = std::make_unique<GoldenRecord>(readGolden(flags.golden));
    if (golden->modelSha256 != modelHash)
      userError("golden folder '", flags.golden, "' was written for a model with SHA-256 ", golden->modelSha256,
                " (", golden->modelFile, "), but ", flags.model, " has SHA-256 ", modelHash,
                "; give the model it was written for, or write a new golden folder with --write-golden DIR");
    bool same = golden->inputs.size() == ports.size();
    for (size_t i = 0; same && i < ports.size(); ++i)
      same = golden->inputs[i].name == ports[i].name;
    if (!same)
      userError("golden folder '", flags.golden, "' holds inputs ", portNames(golden->inputs), " but the model takes ",
                portNames(ports));
  }

  VerifyReport report;
  report.model = flags.model;
  std::vector<VerifyCase> cases =
      collectCases(flags, ports, summary.outputs, importOptions, artifact.get(), golden.get(), report.inputs);
  if (against == "test-data")
    for (const VerifyCase &data : cases)
      if (data.outputs.empty())
        userError("--against test-data: test data set '", data.name, "' has no output_K.pb files");
  // The artifact is specialised to one shape: every input set must have the first one's.
  for (size_t k = 0; k < ports.size(); ++k) {
    for (const VerifyCase &data : cases)
      if (data.inputs[k].dims() != cases[0].inputs[k].dims())
        userError("input '", ports[k].name, "' is ", shapeStr(shapeOf(cases[0].inputs[k].dims())), " in '",
                  cases[0].name, "' but ", shapeStr(shapeOf(data.inputs[k].dims())), " in '", data.name,
                  "'; an artifact has static shapes, so verify input sets of one shape at a time");
    importOptions.inputShapes[ports[k].name] = cases[0].inputs[k].dims();
  }

  // The artifact: the given one, or the model compiled now for the inputs' shapes.
  TemporaryFolder work("sinter-verify");
  std::unique_ptr<Graph> imported = onnx::importModel(flags.model, importOptions);
  std::unique_ptr<Graph> compiledGraph;
  CompileOptions compileOptions = compileOptionsFrom(compileFlags);
  for (const auto &[name, bound] : importOptions.boundInputs)
    compileOptions.boundInputs.emplace(name, bound.value);
  std::string artifactPath = flags.artifact;
  if (!artifact) {
    artifactPath = flags.output.empty() ? (work.path() / "model.so").string() : flags.output;
    compiledGraph = imported->clone();
    auto compileStart = std::chrono::steady_clock::now();
    CompileStatistics stats = compileGraph(*compiledGraph, compileOptions, artifactPath);
    spdlog::info("compiled {} for {}: {} kernels from {} nodes ({:.2f} s)", flags.model, compileFlags.target,
                 stats.kernelCount, stats.sourceNodeCount,
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - compileStart).count());
    artifactFile = readArtifactFile(artifactPath);
    artifact = std::make_unique<rt::Model>(loadArtifact(artifactPath));
  }
  const package::Manifest &manifest = artifactFile->manifest();
  report.artifact = flags.artifact.empty() ? (flags.output.empty() ? "(compiled now)" : flags.output) : flags.artifact;
  report.target = manifest.target == package::Target::Cpu ? "cpu" : "cuda";
  if (manifest.target == package::Target::Cpu)
    report.cpuLevel = package::joinedCpuLevels(manifest.cpuLevels);
  report.storagePrecision = storageName(manifest.storagePrecision);
  Ports artifactOutputs = artifactPorts(*artifact, false);

  for (const std::string &name : tolerances.outputNames()) {
    bool known = false;
    for (const auto &port : artifactOutputs)
      known |= port.name == name;
    if (!known)
      userError("--rtol/--atol name output '", name, "', which the model lacks; its outputs: ",
                portNames(artifactOutputs));
  }

  // The truth.
  std::unique_ptr<Graph> truthGraph;
  std::vector<std::string> truthNames;
  onnx::ModelSummary truthSummary = flags.truthModel.empty() ? summary : onnx::summarizeModel(truthModel);
  if (golden) {
    report.truth = "golden " + flags.golden + " (" + golden->truth + ")";
    for (const auto &port : golden->outputs)
      truthNames.push_back(port.name);
  } else if (against == "test-data") {
    report.truth = "test data outputs";
    for (const auto &port : summary.outputs)
      truthNames.push_back(port.name);
  } else {
    for (const auto &port : truthSummary.outputs)
      truthNames.push_back(port.name);
    if (against == "reference" && flags.againstCommand.empty()) {
      report.truth = "reference evaluator";
      truthGraph = onnx::importModel(truthModel, importOptions);
    } else if (!flags.againstCommand.empty()) {
      report.truth = "command: " + flags.againstCommand;
    } else {
      report.truth = "onnxruntime (CPU)";
    }
    if (!flags.truthModel.empty())
      report.truth += " on " + flags.truthModel;
  }

  auto namedInputs = [&](const VerifyCase &data) {
    std::map<std::string, const Tensor *> byName;
    for (size_t k = 0; k < ports.size(); ++k)
      byName[ports[k].name] = &data.inputs[k];
    return byName;
  };
  auto truthFor = [&](VerifyCase &data) -> std::vector<Tensor> {
    if (golden || against == "test-data")
      return data.outputs;
    std::map<std::string, const Tensor *> byName = namedInputs(data);
    if (truthGraph) {
      std::vector<Tensor> inputs;
      for (const Value *input : truthGraph->inputs()) {
        auto found = byName.find(input->name());
        if (found == byName.end())
          userError("--truth-model ", truthModel, " takes input '", input->name(), "', which ", flags.model,
                    " does not; the two models need the same inputs");
        inputs.push_back(*found->second);
      }
      return reference::evaluate(*truthGraph, inputs);
    }
    std::vector<const Tensor *> inputs;
    for (const auto &port : truthSummary.inputs) {
      auto bound = importOptions.boundInputs.find(port.name);
      if (bound != importOptions.boundInputs.end()) {
        inputs.push_back(&bound->second.value);
        continue;
      }
      auto found = byName.find(port.name);
      if (found == byName.end())
        userError(truthModel, " takes input '", port.name, "', which ", flags.model, " does not");
      inputs.push_back(found->second);
    }
    return runTruthCommand(truthCommand, truthModel, inputs, truthSummary.outputs.size(), report.truth);
  };

  // Run and compare each input set.
  std::vector<std::vector<Tensor>> truthValues;
  for (VerifyCase &data : cases) {
    std::vector<const Tensor *> inputs;
    for (const Tensor &tensor : data.inputs)
      inputs.push_back(&tensor);
    std::vector<Tensor> actual = runArtifactOnce(*artifact, inputs, flags.threads);
    std::vector<Tensor> expected = truthFor(data);
    SINTER_ASSERT(expected.size() == truthNames.size(), "the truth gave ", expected.size(), " outputs for ",
                  truthNames.size(), " names");
    CaseResult result;
    result.name = data.name;
    for (size_t i = 0; i < artifactOutputs.size(); ++i) {
      const std::string &name = artifactOutputs[i].name;
      const Tensor &truth = truthOf(name, truthNames, expected, report.truth);
      Tolerance fallback = defaultTolerance(manifest.storagePrecision, truth);
      if (golden && golden->tolerances.count(name))
        fallback = golden->tolerances.at(name);
      result.comparisons.push_back(compareTensors(name, actual[i], truth, tolerances.forOutput(name, fallback)));
    }
    report.cases.push_back(std::move(result));
    truthValues.push_back(std::move(expected));
  }

  // Bisect the first diverging input set.
  if (!report.passed() && flags.bisect) {
    size_t caseIndex = 0;
    std::string diverging;
    for (size_t c = 0; c < report.cases.size() && diverging.empty(); ++c)
      for (const Comparison &comparison : report.cases[c].comparisons)
        if (!comparison.passed() && diverging.empty()) {
          caseIndex = c;
          diverging = comparison.output;
        }
    BisectRequest request;
    request.imported = imported.get();
    request.options = compileOptions;
    request.options.target.build.progress = nullptr;
    // Bisection's compiles write no sources and print no IR: those were for the artifact verified.
    request.options.target.emitSourceDirectory.clear();
    request.options.pipeline.dumpAfter.clear();
    request.caseName = cases[caseIndex].name;
    request.divergingOutput = diverging;
    request.opset = summary.opset;
    request.threads = flags.threads;
    DType storage = manifest.storagePrecision;
    request.toleranceFor = [&tolerances, storage](const Tensor &truth) {
      return tolerances.global(defaultTolerance(storage, truth));
    };
    std::unique_ptr<Graph> reference = truthGraph ? nullptr : onnx::importModel(truthModel, importOptions);
    const Graph &referenceGraph = truthGraph ? *truthGraph : *reference;
    std::map<std::string, const Tensor *> byName = namedInputs(cases[caseIndex]);
    std::vector<Tensor> referenceInputs;
    for (const Value *input : referenceGraph.inputs()) {
      auto found = byName.find(input->name());
      if (found == byName.end())
        userError("--bisect: ", truthModel, " takes input '", input->name(), "', which ", flags.model, " does not");
      referenceInputs.push_back(*found->second);
    }
    reference::evaluate(referenceGraph, referenceInputs, [&](const Node &node, const std::vector<Tensor> &outputs) {
      for (int i = 0; i < node.numOutputs() && i < int(outputs.size()); ++i)
        request.truth.emplace(node.output(i)->name(), outputs[i]);
    });
    for (const Value *input : referenceGraph.inputs())
      request.truth.emplace(input->name(), *byName.at(input->name()));
    for (const Value *input : imported->inputs())
      request.inputs.push_back(byName.at(input->name()));
    if (!compiledGraph) {
      // A given artifact: compile the model once as it would be, for the kernel names.
      compiledGraph = imported->clone();
      compileGraph(*compiledGraph, request.options, (work.path() / "as_compiled.so").string());
    }
    request.compiled = compiledGraph.get();
    report.bisect = bisectDivergence(request);
  }

  if (!flags.writeGolden.empty()) {
    if (!report.passed()) {
      spdlog::error("not writing golden folder {}: the artifact's outputs diverge from the truth", flags.writeGolden);
    } else {
      GoldenRecord record;
      record.modelFile = fs::path(flags.model).filename().string();
      record.modelSha256 = modelHash;
      record.sinterVersion = SINTER_VERSION;
      record.truth = report.truth;
      record.target = report.target;
      record.cpuLevel = report.cpuLevel;
      record.storagePrecision = report.storagePrecision;
      record.compileFlags = describeCompileFlags(compileFlags);
      for (const std::string &entry : compileFlags.bindings) {
        std::string name = entry.substr(0, entry.find('='));
        record.boundInputs.emplace_back(name, sha256Hex(io::readFileBytes(entry.substr(entry.find('=') + 1))));
      }
      record.inputs = ports;
      record.outputs = artifactOutputs;
      for (const Comparison &comparison : report.cases[0].comparisons)
        record.tolerances[comparison.output] = comparison.tolerance;
      for (size_t c = 0; c < cases.size(); ++c) {
        VerifyCase data;
        data.name = "test_data_set_" + std::to_string(c);
        data.inputs = cases[c].inputs;
        for (const auto &port : artifactOutputs)
          data.outputs.push_back(truthOf(port.name, truthNames, truthValues[c], report.truth));
        record.cases.push_back(std::move(data));
      }
      writeGolden(flags.writeGolden, record, flags.force);
      report.goldenWritten = flags.writeGolden;
    }
  }

  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!flags.junit.empty())
    io::writeFileBytes(flags.junit, formatJunit(report));
  std::cout << (flags.json ? formatJson(report) : formatTable(report));
  std::cout.flush();
  if (!report.passed())
    throw ChecksFailed("verify: " + std::to_string(report.divergingCount()) + " of " +
                       std::to_string(report.outputCount()) + " outputs diverge from the truth");
}

} // namespace

Command addVerifyCommand(CLI::App &parent) {
  auto flags = std::make_shared<VerifyFlags>();
  CLI::App *command = parent.add_subcommand(
      "verify", "Check a compiled artifact's outputs against a truth (reference, onnxruntime, golden files)");
  command->add_option("model", flags->model, "The ONNX model")->required()->type_name("MODEL.onnx");
  command->add_option("artifact", flags->artifact, "A compiled artifact of it (default: compile it now)")
      ->type_name("ARTIFACT.so");
  command->add_option("--against", flags->against,
                      "The truth: reference (the reference evaluator, the default), onnxruntime (Python's "
                      "onnxruntime on the CPU) or test-data (the output_K.pb of --test-data)");
  command->add_option("--against-command", flags->againstCommand,
                      "The truth is this command, run as CMD MODEL INPUT_DIR OUTPUT_DIR (input_K.npy in, "
                      "output_K.npy out)")
      ->type_name("CMD");
  command->add_option("--truth-model", flags->truthModel,
                      "Run the truth on this ONNX model instead of MODEL (e.g. the original of an edited "
                      "model); outputs and intermediate values compare by name")
      ->type_name("ORIGINAL.onnx");
  command->add_option("--golden", flags->golden, "Compare with a golden folder (its inputs and outputs)")
      ->type_name("DIR");
  command->add_option("--write-golden", flags->writeGolden,
                      "When every output is within tolerance, store the inputs, the truth's outputs and a "
                      "manifest here")
      ->type_name("DIR");
  addRepeatableOption(*command, "-i,--input", flags->inputs, "An input: NAME=FILE (.npy or TensorProto .pb)",
                      "NAME=FILE");
  command->add_option("--test-data", flags->testData, "A folder of ONNX test data sets (test_data_set_N/input_K.pb)")
      ->type_name("DIR");
  command->add_option("--random", flags->random, "N input sets of deterministic random values (default: 1)")
      ->type_name("N");
  command->add_option("--seed", flags->seed, "The seed of --random (default 0)")->type_name("S");
  addRepeatableOption(*command, "--rtol", flags->rtol,
                      "Relative tolerance, for every output (1e-3) or one (NAME=1e-3); repeatable", "[NAME=]X");
  addRepeatableOption(*command, "--atol", flags->atol,
                      "Absolute tolerance, for every output (1e-5) or one (NAME=1e-5); repeatable", "[NAME=]X");
  command->add_flag("--json", flags->json, "Print the results as one JSON object");
  command->add_option("--junit", flags->junit, "Also write the results as JUnit XML")->type_name("FILE");
  command->add_flag("--bisect", flags->bisect,
                    "On divergence, find the first node whose output diverges (compiles with intermediates exposed)");
  command->add_option("-o,--output", flags->output, "Keep the artifact verify compiles here")->type_name("MODEL.so");
  command->add_flag("--force", flags->force, "Replace an existing -o file or --write-golden folder");
  command->add_option("--threads", flags->threads, "CPU artifacts: worker threads (0: one per core)")
      ->check(CLI::NonNegativeNumber);
  addCompileFlags(*command, flags->compile);
  return {command, [flags, command] { runVerify(*flags, *command); }};
}

} // namespace sinter::cli
