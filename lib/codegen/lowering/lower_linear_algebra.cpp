// Lowering of Einsum and Det as kernel rules, with the semantics of lib/reference/contraction.cpp.
//
// Einsum: a generic sum of products. One parallel index per output element loops over every
// combination of the summed labels and adds the product of the inputs there; a label repeated in
// one input walks its diagonal, an input dim of extent 1 broadcasts. Straightforward, not tiled:
// an Einsum that is a plain matrix product is faster written as MatMul.
//
// Det: one parallel index per matrix copies it into a scratch buffer (double) and runs LU
// decomposition with partial pivoting there; the determinant is the product of the pivots, negated
// once per row swap, and 0 as soon as a column has no nonzero pivot.
#include "lowering_rules.h"

#include "sinter/support/error.h"

#include <algorithm>
#include <cctype>
#include <map>

namespace sinter::codegen {
namespace {

// ---- Einsum ---------------------------------------------------------------------------------

// A letter is its character code; dim j of the broadcast ellipsis is kEllipsisLabel + j.
constexpr int kEllipsisLabel = 256;
constexpr int kEllipsisToken = -1;

std::vector<int> parseTerm(const Node &node, const std::string &term) {
  std::vector<int> tokens;
  for (size_t i = 0; i < term.size(); ++i) {
    char ch = term[i];
    if (std::isalpha(static_cast<unsigned char>(ch))) {
      tokens.push_back(static_cast<unsigned char>(ch));
    } else if (term.compare(i, 3, "...") == 0 && !std::count(tokens.begin(), tokens.end(), kEllipsisToken)) {
      tokens.push_back(kEllipsisToken);
      i += 2;
    } else {
      userError(node.describe(), ": cannot read equation term '", term, "'");
    }
  }
  return tokens;
}

struct EinsumPlan {
  std::vector<std::vector<int>> inputLabels; ///< one label per input dim
  std::vector<int> outputLabels;
  std::map<int, int64_t> sizes;
};

EinsumPlan planEinsum(const RuleContext &ctx) {
  const Node &node = ctx.node();
  std::string equation;
  for (char ch : node.attrString("equation", ""))
    if (!std::isspace(static_cast<unsigned char>(ch)))
      equation += ch;
  size_t arrow = equation.find("->");
  std::string left = equation.substr(0, arrow);
  std::vector<std::vector<int>> terms;
  for (size_t start = 0;;) {
    size_t comma = left.find(',', start);
    terms.push_back(parseTerm(node, left.substr(start, comma - start)));
    if (comma == std::string::npos)
      break;
    start = comma + 1;
  }
  if (int(terms.size()) != node.numInputs())
    userError(node.describe(), ": equation '", equation, "' has ", terms.size(), " input terms for ",
              node.numInputs(), " inputs");
  std::vector<int64_t> ellipsisRanks(terms.size(), 0);
  int64_t ellipsisRank = 0;
  for (size_t i = 0; i < terms.size(); ++i) {
    int64_t rank = int64_t(ctx.inputDims(int(i)).size());
    bool hasEllipsis = std::count(terms[i].begin(), terms[i].end(), kEllipsisToken) != 0;
    int64_t letters = int64_t(terms[i].size()) - (hasEllipsis ? 1 : 0);
    if (hasEllipsis ? letters > rank : letters != rank)
      userError(node.describe(), ": equation term ", i, " names ", letters, " dims but input ", i, " has rank ", rank);
    ellipsisRanks[i] = hasEllipsis ? rank - letters : 0;
    ellipsisRank = std::max(ellipsisRank, ellipsisRanks[i]);
  }
  EinsumPlan plan;
  std::map<int, int> letterCounts;
  for (size_t i = 0; i < terms.size(); ++i) {
    std::vector<int64_t> dims = ctx.inputDims(int(i));
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
      auto [entry, inserted] = plan.sizes.emplace(labels[d], dims[d]);
      if (inserted || entry->second == dims[d] || dims[d] == 1)
        continue;
      if (entry->second != 1)
        userError(node.describe(), ": an equation label has extents ", entry->second, " and ", dims[d]);
      entry->second = dims[d];
    }
    plan.inputLabels.push_back(std::move(labels));
  }
  if (arrow != std::string::npos) {
    for (int token : parseTerm(node, equation.substr(arrow + 2))) {
      if (token == kEllipsisToken) {
        for (int64_t j = 0; j < ellipsisRank; ++j)
          plan.outputLabels.push_back(kEllipsisLabel + int(j));
      } else if (!letterCounts.count(token) ||
                 std::count(plan.outputLabels.begin(), plan.outputLabels.end(), token)) {
        userError(node.describe(), ": output label '", char(token), "' is not in any input or appears twice");
      } else {
        plan.outputLabels.push_back(token);
      }
    }
  } else {
    for (int64_t j = 0; j < ellipsisRank; ++j)
      plan.outputLabels.push_back(kEllipsisLabel + int(j));
    for (auto [letter, count] : letterCounts)
      if (count == 1)
        plan.outputLabels.push_back(letter);
  }
  return plan;
}

void einsumRule(const RuleContext &ctx) {
  KernelBuilder &b = ctx.builder();
  EinsumPlan plan = planEinsum(ctx);
  std::vector<int> summed;
  std::vector<int64_t> sumDims;
  for (auto [label, extent] : plan.sizes)
    if (!std::count(plan.outputLabels.begin(), plan.outputLabels.end(), label)) {
      summed.push_back(label);
      sumDims.push_back(extent);
    }
  std::vector<int64_t> outDims = ctx.outputDims(0);
  DType type = ctx.outputType(0);
  b.setParallelExtent(productOf(outDims));
  std::vector<ExprRef> outAt = unravelIndex(b.gid(), outDims);
  int r = b.addVariable("r", DType::Int64), sum = b.addVariable("sum", type);
  std::vector<ExprRef> sumAt = unravelIndex(var(r, DType::Int64), sumDims);
  std::map<int, ExprRef> coordinate;
  for (size_t j = 0; j < plan.outputLabels.size(); ++j)
    coordinate[plan.outputLabels[j]] = outAt[j];
  for (size_t j = 0; j < summed.size(); ++j)
    coordinate[summed[j]] = sumAt[j];
  ExprRef product;
  for (int i = 0; i < ctx.node().numInputs(); ++i) {
    std::vector<int64_t> dims = ctx.inputDims(i);
    std::vector<ExprRef> at;
    for (size_t d = 0; d < dims.size(); ++d)
      at.push_back(dims[d] == 1 ? intConstant(0) : coordinate.at(plan.inputLabels[i][d]));
    ExprRef value = cast(ctx.input(i)(at), type);
    product = product ? binary(BinaryOp::Mul, product, value) : value;
  }
  b.emit(assign(sum, typedConstant(type, 0)));
  int64_t combinations = productOf(sumDims);
  if (combinations > 0)
    b.emit(forLoop(r, intConstant(combinations), {assign(sum, binary(BinaryOp::Add, var(sum, type), product))}));
  b.emit(ctx.store(0, b.gid(), var(sum, type)));
  b.kernel().flops = 2 * productOf(outDims) * combinations * ctx.node().numInputs();
}

// ---- Det ------------------------------------------------------------------------------------

void detRule(const RuleContext &ctx) {
  const Node &node = ctx.node();
  KernelBuilder &b = ctx.builder();
  std::vector<int64_t> dims = ctx.inputDims(0);
  if (dims.size() < 2 || dims[dims.size() - 1] != dims[dims.size() - 2])
    userError(node.describe(), ": the input must be [..., M, M]");
  int64_t m = dims.back(), matrices = productOf(dims, 0, dims.size() - 2);
  const DType f64 = DType::Float64;
  b.setParallelExtent(matrices);
  int a = b.addScratch("lu", f64, matrices * m * m);
  ExprRef base = mul(b.gid(), m * m);
  auto element = [&](ExprRef row, ExprRef column) { return add(base, add(mul(row, m), column)); };
  auto at = [&](ExprRef row, ExprRef column) { return load(a, f64, element(row, column)); };
  auto number = [&](double v) { return constant(f64, v); };
  auto i64 = [](int id) { return var(id, DType::Int64); };

  int e = b.addVariable("e", DType::Int64);
  std::vector<ExprRef> matrixAt = unravelIndex(add(base, i64(e)), dims);
  b.emit(forLoop(e, intConstant(m * m), {store(a, add(base, i64(e)), cast(ctx.input(0)(matrixAt), f64))}));

  int det = b.addVariable("det", f64), col = b.addVariable("col", DType::Int64);
  int row = b.addVariable("row", DType::Int64), j = b.addVariable("j", DType::Int64);
  int pivot = b.addVariable("pivot", DType::Int64), best = b.addVariable("best", f64);
  int factor = b.addVariable("factor", f64), held = b.addVariable("held", f64);
  ExprRef c = i64(col), rv = i64(row), jv = i64(j), detValue = var(det, f64);
  b.emit(assign(det, number(1)));
  std::vector<StmtRef> column;
  // The pivot: the largest magnitude at or below the diagonal (the first of equals).
  column.push_back(assign(pivot, c));
  column.push_back(assign(best, unary(UnaryOp::Abs, at(c, c))));
  column.push_back(forLoop(row, intConstant(m),
                           {ifThen(binary(BinaryOp::LogicalAnd, binary(BinaryOp::Gt, rv, c),
                                          binary(BinaryOp::Gt, unary(UnaryOp::Abs, at(rv, c)), var(best, f64))),
                                   {assign(pivot, rv), assign(best, unary(UnaryOp::Abs, at(rv, c)))})}));
  std::vector<StmtRef> eliminate;
  ExprRef p = i64(pivot);
  eliminate.push_back(ifThen(binary(BinaryOp::Ne, p, c),
                             {forLoop(j, intConstant(m),
                                      {assign(held, at(p, jv)), store(a, element(p, jv), at(c, jv)),
                                       store(a, element(c, jv), var(held, f64))}),
                              assign(det, unary(UnaryOp::Neg, detValue))}));
  eliminate.push_back(assign(det, binary(BinaryOp::Mul, detValue, at(c, c))));
  int j2 = b.addVariable("j", DType::Int64);
  ExprRef j2v = i64(j2);
  eliminate.push_back(forLoop(
      row, intConstant(m),
      {ifThen(binary(BinaryOp::Gt, rv, c),
              {assign(factor, binary(BinaryOp::Div, at(rv, c), at(c, c))),
               forLoop(j2, intConstant(m),
                       {ifThen(binary(BinaryOp::Ge, j2v, c),
                               {store(a, element(rv, j2v),
                                      binary(BinaryOp::Sub, at(rv, j2v),
                                             binary(BinaryOp::Mul, var(factor, f64), at(c, j2v))))})})})}));
  column.push_back(ifThen(binary(BinaryOp::Eq, var(best, f64), number(0)), {assign(det, number(0))}, eliminate));
  b.emit(forLoop(col, intConstant(m), {ifThen(binary(BinaryOp::Ne, detValue, number(0)), column)}));
  b.emit(ctx.store(0, b.gid(), cast(detValue, ctx.outputType(0))));
}

} // namespace

void registerLinearAlgebraLowering(LoweringTable &table) {
  table.addKernel(OpKind::Einsum, einsumRule);
  table.addKernel(OpKind::Det, detRule);
}

} // namespace sinter::codegen
