// `sinter verify`'s results and their three forms: the table on stdout, one JSON object
// (--json), and a JUnit XML file (--junit FILE) that CI systems show as test results.
#pragma once

#include "verify_compare.h"

#include <optional>
#include <string>
#include <vector>

namespace sinter::cli {

/// The results of one input set.
struct CaseResult {
  std::string name;
  std::vector<Comparison> comparisons; ///< one per output, in output order
};

/// What --bisect found.
struct BisectResult {
  bool found = false;      ///< a node diverges while every input it reads agrees
  std::string node;        ///< the node's name (or its description when it has none)
  std::string opType;
  int64_t opset = 0;       ///< the model's ai.onnx opset
  std::string value;       ///< the value compared (the node's output)
  std::string kernel;      ///< the fused kernel of the verified artifact that computes it
  std::vector<std::string> kernelOps;
  Comparison error;        ///< the node's output against the reference
  std::string caseName;    ///< the input set bisected
  int compiles = 0;        ///< compiles with intermediates exposed
  int position = 0, nodeCount = 0; ///< its place in topological order
  std::string summary;     ///< one paragraph for a person
  std::vector<std::string> suggestions;
};

struct VerifyReport {
  std::string model, artifact;
  std::string target, cpuLevel, storagePrecision;
  std::string truth;       ///< "reference", "onnxruntime", "command: CMD", "golden DIR", "test data"
  std::string inputs;      ///< "random 2 (seed 0)", "--input", "test data DIR", "golden DIR"
  std::vector<CaseResult> cases;
  std::optional<BisectResult> bisect;
  std::string goldenWritten; ///< the folder written by --write-golden, or ""
  double seconds = 0;

  bool passed() const;
  int outputCount() const;
  int divergingCount() const;
};

/// The table (and the bisection, when there is one) for a person.
std::string formatTable(const VerifyReport &report);
std::string formatJson(const VerifyReport &report);
/// JUnit XML: <testsuites> with one <testsuite> per input set and one <testcase> per output,
/// a <failure> for each output out of tolerance (with the bisection's finding, when there is one).
std::string formatJunit(const VerifyReport &report);

} // namespace sinter::cli
