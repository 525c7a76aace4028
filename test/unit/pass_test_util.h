// Pass tests: text IR in, one pass run to a fixed point (verifying after every change, as the
// pipeline does), text IR out; and a numeric check that the rewritten graph computes what the
// original did, both run by the reference evaluator on the same deterministic random inputs.
#pragma once

#include "sinter/ir/graph.h"
#include "sinter/ir/parser.h"
#include "sinter/ir/printer.h"
#include "sinter/ir/verifier.h"
#include "sinter/passes/pipeline.h"
#include "sinter/reference/evaluator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>

namespace sinter::testing {

/// Runs the named pass on `graph` until it reports no change; returns whether it changed it.
inline bool runPassToFixedPoint(const std::string &name, Graph &graph) {
  bool changed = false;
  for (int iteration = 0; iteration < 32; ++iteration) {
    std::unique_ptr<Pass> pass = createPass(name);
    EXPECT_TRUE(pass) << "no pass named " << name;
    if (!pass || !pass->run(graph))
      return changed;
    verifyGraph(graph, name);
    changed = true;
  }
  ADD_FAILURE() << name << " did not reach a fixed point in 32 runs";
  return changed;
}

/// Deterministic inputs: floats uniform in [-2, 2], integers in [0, 3), bools half true.
inline std::vector<Tensor> randomInputs(const Graph &graph, unsigned seed = 7) {
  std::mt19937 generator(seed);
  std::uniform_real_distribution<double> real(-2.0, 2.0);
  std::vector<Tensor> inputs;
  for (const Value *input : graph.inputs()) {
    Tensor tensor(input->dtype(), staticDims(input->shape()));
    for (int64_t i = 0; i < tensor.elementCount(); ++i)
      tensor.setDouble(i, isFloat(input->dtype()) ? real(generator) : double(generator() % 3));
    inputs.push_back(std::move(tensor));
  }
  return inputs;
}

/// max |a - b| / max |b| over each output, which must not exceed `tolerance`.
inline void expectSameResults(const Graph &before, const Graph &after, double tolerance = 1e-6) {
  std::vector<Tensor> inputs = randomInputs(before);
  std::vector<Tensor> expected = reference::evaluate(before, inputs);
  std::vector<Tensor> actual = reference::evaluate(after, inputs);
  ASSERT_EQ(expected.size(), actual.size());
  for (size_t o = 0; o < expected.size(); ++o) {
    ASSERT_EQ(expected[o].dims(), actual[o].dims()) << "output " << o;
    ASSERT_EQ(expected[o].dtype(), actual[o].dtype()) << "output " << o;
    double largest = 0, error = 0;
    for (int64_t i = 0; i < expected[o].elementCount(); ++i) {
      largest = std::max(largest, std::fabs(expected[o].getDouble(i)));
      error = std::max(error, std::fabs(expected[o].getDouble(i) - actual[o].getDouble(i)));
    }
    EXPECT_LE(error, tolerance * std::max(largest, 1e-30)) << "output " << o;
  }
}

/// Parses `text`, runs the pass, checks the numbers still agree; returns the printed result.
inline std::string rewrite(const std::string &name, const std::string &text, bool *changed = nullptr,
                           double tolerance = 1e-6) {
  std::unique_ptr<Graph> before = parseGraph(text);
  verifyGraph(*before, "the test's input");
  std::unique_ptr<Graph> after = before->clone();
  bool didChange = runPassToFixedPoint(name, *after);
  if (changed)
    *changed = didChange;
  expectSameResults(*before, *after, tolerance);
  return printGraph(*after);
}

/// The pass must leave the graph exactly as it was (and say so).
inline void expectUnchanged(const std::string &name, const std::string &text) {
  bool changed = true;
  std::string result = rewrite(name, text, &changed);
  EXPECT_FALSE(changed) << name << " said it changed:\n" << result;
  EXPECT_EQ(result, printGraph(*parseGraph(text)));
}

} // namespace sinter::testing
