#include "verify_bisect.h"

#include "artifact_runner.h"

#include "sinter/codegen/schedule/fusion.h"
#include "sinter/support/error.h"
#include "sinter/support/temporary_folder.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <sstream>

#include <unistd.h>

namespace sinter::cli {
namespace {

namespace fs = std::filesystem;

constexpr int kProbesPerRound = 8;
constexpr int kMostCompiles = 24;

/// The ancestors of `value`'s producer (itself included) that have a truth to compare with, as
/// positions in graph.nodes(), in topological order.
std::vector<int> comparableAncestors(const Graph &graph, const Value &value,
                                     const std::map<std::string, Tensor> &truth) {
  std::map<const Node *, int> position;
  for (int i = 0; i < graph.numNodes(); ++i)
    position[graph.nodes()[i].get()] = i;
  std::set<int> seen;
  std::vector<const Node *> stack;
  if (value.producer())
    stack.push_back(value.producer());
  while (!stack.empty()) {
    const Node *node = stack.back();
    stack.pop_back();
    if (!seen.insert(position.at(node)).second)
      continue;
    for (const Value *input : node->inputs())
      if (input && input->producer())
        stack.push_back(input->producer());
  }
  std::vector<int> positions;
  for (int i : seen) {
    const Node &node = *graph.nodes()[i];
    for (const Value *output : node.outputs())
      if (truth.count(output->name())) {
        positions.push_back(i);
        break;
      }
  }
  return positions; // std::set iterates in order
}

std::string nodeLabel(const Node &node) { return node.name().empty() ? node.describe() : node.name(); }

class Bisector {
public:
  explicit Bisector(const BisectRequest &request) : request_(request), folder_("sinter-bisect") {}

  /// Compiles the graph with the outputs of these nodes exposed and compares each with the truth.
  /// Returns one comparison per node (its first output that diverges, else its first compared).
  std::map<int, Comparison> probe(const std::vector<int> &positions) {
    ++compiles_;
    std::unique_ptr<Graph> copy = request_.imported->clone();
    std::vector<std::pair<int, std::string>> exposed; // node position, value name
    std::map<std::string, int> outputIndex;
    for (int i = 0; i < int(copy->outputs().size()); ++i)
      outputIndex.emplace(copy->outputs()[i]->name(), i);
    for (int position : positions) {
      const Node &original = *request_.imported->nodes()[position];
      for (const Value *output : original.outputs()) {
        if (!request_.truth.count(output->name()))
          continue;
        Value *value = copy->findValue(output->name());
        SINTER_ASSERT(value, "the copy of the graph lacks value '", output->name(), "'");
        if (!outputIndex.count(value->name())) {
          outputIndex[value->name()] = int(copy->outputs().size());
          copy->addOutput(value);
        }
        exposed.emplace_back(position, value->name());
      }
    }
    // The diverging graph output is compared too: exposing must not make it agree.
    exposed.emplace_back(-1, request_.divergingOutput);
    std::string path = (folder_.path() / ("probe_" + std::to_string(compiles_) + ".so")).string();
    spdlog::info("bisect: compile {} with {} node{} exposed", compiles_, positions.size(),
                 positions.size() == 1 ? "" : "s");
    compileGraph(*copy, request_.options, path);
    std::vector<Tensor> outputs;
    {
      rt::Model model = loadArtifact(path);
      outputs = runArtifactOnce(model, request_.inputs, request_.threads);
    }
    fs::remove(path);
    std::map<int, Comparison> results;
    for (const auto &[position, name] : exposed) {
      const Tensor &truth = request_.truth.at(name);
      Comparison comparison = compareTensors(name, outputs.at(outputIndex.at(name)), truth, request_.toleranceFor(truth));
      if (position < 0) {
        outputStillDiverges_ = !comparison.passed();
        continue;
      }
      auto [it, inserted] = results.emplace(position, comparison);
      if (!inserted && it->second.passed() && !comparison.passed())
        it->second = comparison;
    }
    return results;
  }

  /// Compiles the graph as imported (nothing exposed) with other options and says whether the
  /// diverging output still diverges.
  bool outputDivergesWith(const CompileOptions &options) {
    ++compiles_;
    std::unique_ptr<Graph> copy = request_.imported->clone();
    int index = -1;
    for (int i = 0; i < int(copy->outputs().size()); ++i)
      if (copy->outputs()[i]->name() == request_.divergingOutput)
        index = i;
    SINTER_ASSERT(index >= 0, "output '", request_.divergingOutput, "' is not an output of the graph");
    std::string path = (folder_.path() / ("variant_" + std::to_string(compiles_) + ".so")).string();
    compileGraph(*copy, options, path);
    std::vector<Tensor> outputs;
    {
      rt::Model model = loadArtifact(path);
      outputs = runArtifactOnce(model, request_.inputs, request_.threads);
    }
    fs::remove(path);
    const Tensor &truth = request_.truth.at(request_.divergingOutput);
    return !compareTensors(request_.divergingOutput, outputs.at(size_t(index)), truth, request_.toleranceFor(truth)).passed();
  }

  int compiles() const { return compiles_; }
  bool outputStillDiverges() const { return outputStillDiverges_; }

private:
  const BisectRequest &request_;
  TemporaryFolder folder_;
  int compiles_ = 0;
  bool outputStillDiverges_ = true;
};

/// The kernel of the verified artifact that computes `node`'s output: the group (fusion.h) of the
/// compiled graph holding a node that produces a value of the same name.
void findKernel(const BisectRequest &request, const Node &node, BisectResult &result) {
  if (!request.compiled)
    return;
  bool fuse = !request.options.pipeline.disabled.count(std::string(kFuseKernels));
  std::vector<codegen::KernelGroup> groups = codegen::formKernelGroups(*request.compiled, fuse);
  std::set<std::string> names;
  for (const Value *output : node.outputs())
    names.insert(output->name());
  for (const codegen::KernelGroup &group : groups)
    for (const Node *member : group.nodes) {
      bool produces = false;
      for (const Value *output : member->outputs())
        produces |= names.count(output->name()) > 0;
      if (!produces && !(member->name() == node.name() && !node.name().empty() && member->kind() == node.kind()))
        continue;
      result.kernel = group.name;
      for (const Node *fused : group.nodes)
        result.kernelOps.push_back(std::string(fused->opName()));
      return;
    }
}

} // namespace

BisectResult bisectDivergence(const BisectRequest &request) {
  BisectResult result;
  result.caseName = request.caseName;
  const Graph &graph = *request.imported;
  result.nodeCount = graph.numNodes();
  const Value *output = graph.findValue(request.divergingOutput);
  if (!output || !output->producer() || !request.truth.count(request.divergingOutput)) {
    result.summary = "output '" + request.divergingOutput +
                     "' is not computed by a node the reference evaluator also evaluates; nothing to bisect";
    return result;
  }
  // Is it the compiled code at all? With another truth (golden, onnxruntime) the reference may
  // agree with the artifact, and then no node of it diverges.
  std::vector<int> candidates = comparableAncestors(graph, *output, request.truth);
  Bisector bisector(request);
  int good = -1;                              // index in candidates known to agree (-1: none)
  int bad = int(candidates.size()) - 1;       // index known to diverge: the output's producer
  std::map<int, Comparison> known;            // by node position
  std::string failure;
  try {
    // The producer of the output: is it diverging from the reference too?
    std::map<int, Comparison> first = bisector.probe({candidates[bad]});
    known.insert(first.begin(), first.end());
    if (known.at(candidates[bad]).passed()) {
      result.summary = "output '" + request.divergingOutput +
                       "' agrees with the reference evaluator when compiled again for bisection: the reference "
                       "agrees with the artifact (so the truth differs from the reference, or the artifact was not "
                       "compiled from this model with these flags), or the divergence depends on how it is compiled";
      result.suggestions.push_back("sinter verify MODEL.onnx --against reference   (the compiled code against the reference)");
      result.compiles = bisector.compiles();
      return result;
    }
    while (bisector.compiles() < kMostCompiles) {
      if (bad - good > 1) {
        // Probe up to eight nodes spread evenly over (good, bad).
        std::vector<int> probes;
        int span = bad - good - 1;
        int count = std::min(span, kProbesPerRound);
        for (int j = 1; j <= count; ++j) {
          int index = good + int((int64_t(span) * j + count) / (count + 1));
          index = std::clamp(index, good + 1, bad - 1);
          if (probes.empty() || probes.back() != index)
            probes.push_back(index);
        }
        std::vector<int> positions;
        for (int index : probes)
          positions.push_back(candidates[index]);
        std::map<int, Comparison> round = bisector.probe(positions);
        for (const auto &[position, comparison] : round)
          known[position] = comparison;
        if (!bisector.outputStillDiverges()) {
          failure = "exposing intermediate values made output '" + request.divergingOutput +
                    "' agree: the divergence depends on how nodes are fused";
          break;
        }
        int newBad = bad;
        for (int index : probes)
          if (!round.at(candidates[index]).passed()) {
            newBad = index;
            break;
          }
        for (int index : probes)
          if (index < newBad && round.at(candidates[index]).passed())
            good = std::max(good, index);
        bad = newBad;
        continue;
      }
      // Confirm: the node's inputs must agree when it diverges.
      const Node &node = *graph.nodes()[candidates[bad]];
      std::vector<int> positions = {candidates[bad]};
      std::map<int, int> indexOf;
      for (size_t i = 0; i < candidates.size(); ++i)
        indexOf[candidates[i]] = int(i);
      for (const Value *input : node.inputs())
        if (input && input->producer()) {
          int position = graph.indexOf(input->producer());
          if (indexOf.count(position))
            positions.push_back(position);
        }
      std::map<int, Comparison> round = bisector.probe(positions);
      int divergingInput = -1;
      for (size_t i = 1; i < positions.size(); ++i)
        if (!round.at(positions[i]).passed())
          divergingInput = std::max(divergingInput, indexOf.at(positions[i]));
      if (!round.at(candidates[bad]).passed() && divergingInput < 0) {
        result.found = true;
        result.node = nodeLabel(node);
        result.opType = std::string(node.opName());
        result.opset = request.opset;
        result.error = round.at(candidates[bad]);
        result.value = result.error.output;
        result.position = candidates[bad];
        break;
      }
      if (divergingInput < 0) {
        failure = "node " + nodeLabel(node) + " diverges only in some compiles: the divergence depends on how "
                  "nodes are fused";
        break;
      }
      // An input diverges: the first divergence is before it. Search again below that input.
      bad = divergingInput;
      good = -1;
    }
    if (!result.found && failure.empty())
      failure = "gave up after " + std::to_string(bisector.compiles()) + " compiles";
  } catch (const UserError &error) {
    failure = std::string("a compile with intermediate values exposed failed: ") + error.what();
  }
  result.compiles = bisector.compiles();

  std::ostringstream summary;
  if (result.found) {
    const Node &node = *graph.nodes()[result.position];
    findKernel(request, node, result);
    const Comparison &error = result.error;
    summary << "first diverging node (" << result.position + 1 << " of " << result.nodeCount
            << " in topological order, input set " << result.caseName << "): '" << result.node << "' " << result.opType
            << " (ai.onnx opset " << result.opset << "), output '" << result.value << "' "
            << error.type << ": " << error.mismatched << " of " << error.elements
            << " elements out of tolerance (rtol " << formatNumber(error.tolerance.rtol) << ", atol "
            << formatNumber(error.tolerance.atol) << "), max abs " << formatNumber(error.maxAbs) << ", max rel "
            << formatNumber(error.maxRel) << ", relative L2 " << formatNumber(error.relativeL2)
            << "; every input it reads agrees with the reference. ";
    if (!result.kernel.empty()) {
      summary << "Kernel: " << result.kernel << " (";
      for (size_t i = 0; i < result.kernelOps.size(); ++i)
        summary << (i ? " " : "") << result.kernelOps[i];
      summary << ")";
    } else {
      summary << "No kernel of the artifact computes it under that name (a pass rewrote it, or it is a view)";
    }
    summary << ". " << result.compiles << " compiles with intermediates exposed.";
    // Two variants a person would try first, tried here: one kernel per node, and fp32 storage.
    try {
      CompileOptions unfused = request.options;
      unfused.pipeline.disabled.insert(std::string(kFuseKernels));
      bool diverges = bisector.outputDivergesWith(unfused);
      summary << " With --disable-pass fuse-kernels (one kernel per node) output '" << request.divergingOutput
              << (diverges ? "' still diverges: the fault is not in how nodes are fused."
                           : "' agrees: the fault is in how this node is fused.");
      if (!diverges)
        result.suggestions.push_back("sinter verify ... --disable-pass fuse-kernels   (agrees: fusion is the cause)");
      if (request.options.pipeline.precision != DType::Float32) {
        CompileOptions wide = request.options;
        wide.pipeline.precision = DType::Float32;
        wide.pipeline.pinNormalizationInputs = true;
        bool wideDiverges = bisector.outputDivergesWith(wide);
        summary << " With --precision fp32 it " << (wideDiverges ? "still diverges." : "agrees: 16-bit storage is the cause.");
        result.suggestions.push_back(std::string("sinter verify ... --precision fp32   (") +
                                     (wideDiverges ? "still diverges" : "agrees: the 16-bit storage is the cause") + ")");
      }
    } catch (const UserError &error) {
      summary << " (A compile to try variants failed: " << error.what() << ")";
    }
    result.compiles = bisector.compiles();
    result.suggestions.push_back("sinter verify ... --disable-pass PASS   (sinter compile --print-pipeline lists the "
                                 "passes that may have rewritten this " + result.opType + ")");
    result.suggestions.push_back("sinter inspect ARTIFACT.so --plan   (what " +
                                 (result.kernel.empty() ? std::string("each kernel") : result.kernel) + " fuses)");
  } else {
    summary << "no single diverging node found: " << failure << " (" << result.compiles << " compiles).";
    result.suggestions.push_back("sinter verify ... --disable-pass fuse-kernels   (one kernel per node)");
    if (request.options.pipeline.precision != DType::Float32)
      result.suggestions.push_back("sinter verify ... --precision fp32");
  }
  result.summary = summary.str();
  return result;
}

} // namespace sinter::cli
