#include "sinter/ir/einsum.h"

#include "sinter/ir/graph.h"
#include "sinter/support/error.h"

#include <algorithm>
#include <cctype>

namespace sinter {

namespace {

constexpr int kEllipsisToken = -1;

/// One term of the equation: letters, and kEllipsisToken where "..." stands.
std::vector<int> parseEinsumTerm(const Node &node, const std::string &term) {
  std::vector<int> tokens;
  for (size_t i = 0; i < term.size(); ++i) {
    char ch = term[i];
    if (std::isalpha(static_cast<unsigned char>(ch))) {
      tokens.push_back(static_cast<unsigned char>(ch));
    } else if (term.compare(i, 3, "...") == 0) {
      if (std::count(tokens.begin(), tokens.end(), kEllipsisToken))
        userError(node.describe(), ": term '", term, "' has more than one ellipsis");
      tokens.push_back(kEllipsisToken);
      i += 2;
    } else {
      userError(node.describe(), ": unexpected character '", ch, "' in equation term '", term, "'");
    }
  }
  return tokens;
}

} // namespace

EinsumPlan planEinsum(const Node &node, const std::vector<std::vector<int64_t>> &inputDims) {
  std::string equation;
  for (char ch : node.attrString("equation", ""))
    if (!std::isspace(static_cast<unsigned char>(ch)))
      equation += ch;
  size_t arrow = equation.find("->");
  std::string left = equation.substr(0, arrow);
  std::vector<std::vector<int>> terms;
  for (size_t start = 0;;) {
    size_t comma = left.find(',', start);
    terms.push_back(parseEinsumTerm(node, left.substr(start, comma - start)));
    if (comma == std::string::npos)
      break;
    start = comma + 1;
  }
  if (terms.size() != inputDims.size())
    userError(node.describe(), ": equation '", equation, "' has ", terms.size(),
              " input terms but the node has ", inputDims.size(), " inputs");

  // The ellipsis of each input covers the dims its letters do not; they broadcast right-aligned.
  std::vector<int64_t> ellipsisRanks(terms.size(), 0);
  int64_t ellipsisRank = 0;
  for (size_t i = 0; i < terms.size(); ++i) {
    const int64_t rank = int64_t(inputDims[i].size());
    bool hasEllipsis = std::count(terms[i].begin(), terms[i].end(), kEllipsisToken) != 0;
    int64_t letters = int64_t(terms[i].size()) - (hasEllipsis ? 1 : 0);
    if (hasEllipsis ? letters > rank : letters != rank)
      userError(node.describe(), ": equation term ", i, " names ", letters, " dims but input ", i,
                " has rank ", rank);
    ellipsisRanks[i] = hasEllipsis ? rank - letters : 0;
    ellipsisRank = std::max(ellipsisRank, ellipsisRanks[i]);
  }

  EinsumPlan plan;
  std::map<int, int> letterCounts;
  for (size_t i = 0; i < terms.size(); ++i) {
    std::vector<int> labels;
    for (int token : terms[i]) {
      if (token == kEllipsisToken) {
        for (int64_t j = 0; j < ellipsisRanks[i]; ++j)
          labels.push_back(kEllipsisLabel + int(ellipsisRank - ellipsisRanks[i] + j));
      } else {
        labels.push_back(token);
        ++letterCounts[token];
      }
    }
    for (size_t d = 0; d < labels.size(); ++d) {
      int64_t extent = inputDims[i][d];
      auto [entry, inserted] = plan.sizes.emplace(labels[d], extent);
      if (inserted || entry->second == extent || extent == 1)
        continue;
      if (entry->second != 1)
        userError(node.describe(), ": dimension '",
                  labels[d] < kEllipsisLabel ? std::string(1, char(labels[d])) : "...",
                  "' has extent ", extent, " in input ", i, " but ", entry->second, " elsewhere");
      entry->second = extent;
    }
    plan.inputLabels.push_back(std::move(labels));
  }

  if (arrow != std::string::npos) {
    for (int token : parseEinsumTerm(node, equation.substr(arrow + 2))) {
      if (token == kEllipsisToken) {
        for (int64_t j = 0; j < ellipsisRank; ++j)
          plan.outputLabels.push_back(kEllipsisLabel + int(j));
        continue;
      }
      if (!letterCounts.count(token))
        userError(node.describe(), ": output label '", char(token), "' is not in any input");
      if (std::count(plan.outputLabels.begin(), plan.outputLabels.end(), token))
        userError(node.describe(), ": output label '", char(token), "' appears twice");
      plan.outputLabels.push_back(token);
    }
  } else {
    // Implicit output: the ellipsis dims, then the letters used once, in character order.
    for (int64_t j = 0; j < ellipsisRank; ++j)
      plan.outputLabels.push_back(kEllipsisLabel + int(j));
    for (auto [letter, count] : letterCounts)
      if (count == 1)
        plan.outputLabels.push_back(letter);
  }
  return plan;
}

} // namespace sinter
