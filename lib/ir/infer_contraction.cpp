// Inference for contractions: MatMul (numpy matmul: 1-D operands are promoted and the batch dims
// broadcast), Gemm (2-D with optional transposes and a unidirectionally broadcast C) and Einsum
// (equation parsing with "...", implicit and explicit outputs).
#include "infer_rules.h"

#include <algorithm>
#include <map>

namespace sinter::infer {
namespace {

/// Floats and 32/64-bit integers: ONNX's type set for MatMul and Gemm.
bool isGemmType(DType t) {
  return isFloat(t) || t == DType::Int32 || t == DType::Int64 || t == DType::Uint32 ||
         t == DType::Uint64;
}

Types matMul(const InferContext &ctx) {
  ctx.requireDType(0, isGemmType, "a float type or a 32/64-bit integer");
  ctx.requireSameDType(0, 1);
  ctx.requireRankAtLeast(0, 1);
  ctx.requireRankAtLeast(1, 1);
  Shape a = ctx.shape(0), b = ctx.shape(1);
  bool vectorA = a.size() == 1, vectorB = b.size() == 1;
  if (vectorA)
    a.insert(a.begin(), Dim(1));
  if (vectorB)
    b.push_back(Dim(1));
  mergeDims(ctx, a[a.size() - 1], b[b.size() - 2],
            detail::concat("the contracted dims (", ctx.describeInput(0), " last, ",
                           ctx.describeInput(1), vectorB ? " only" : " second to last", ")"));
  Shape batchA(a.begin(), a.end() - 2), batchB(b.begin(), b.end() - 2);
  Shape out = broadcastShapes(ctx, batchA, batchB, "the batch dims of inputs 0 and 1");
  if (!vectorA)
    out.push_back(a[a.size() - 2]);
  if (!vectorB)
    out.push_back(b[b.size() - 1]);
  return {{ctx.dtype(0), out}};
}

Types gemm(const InferContext &ctx) {
  ctx.requireDType(0, isGemmType, "a float type or a 32/64-bit integer");
  ctx.requireSameDType(0, 1);
  ctx.requireRank(0, 2);
  ctx.requireRank(1, 2);
  int64_t transA = ctx.node().attrInt("transA", 0), transB = ctx.node().attrInt("transB", 0);
  if ((transA != 0 && transA != 1) || (transB != 0 && transB != 1))
    ctx.fail("attributes 'transA' and 'transB' must be 0 or 1");
  const Shape &a = ctx.shape(0), &b = ctx.shape(1);
  Dim m = a[transA ? 1 : 0], n = b[transB ? 0 : 1];
  mergeDims(ctx, a[transA ? 0 : 1], b[transB ? 1 : 0],
            detail::concat("the contracted dims of A", transA ? "^T" : "", " and B",
                           transB ? "^T" : ""));
  Shape out = {m, n};
  if (ctx.hasInput(2)) {
    ctx.requireSameDType(0, 2);
    requireUnidirectionalBroadcast(ctx, 2, out);
  }
  return {{ctx.dtype(0), out}};
}

// ---- Einsum ----

bool isLabel(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

/// One operand or result term: its labels in order, with the ellipsis position (or -1).
struct Term {
  std::string labels;
  int ellipsis = -1; ///< index into labels before which "..." stands
};

Term parseTerm(const InferContext &ctx, const std::string &text) {
  Term term;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (isLabel(c)) {
      term.labels += c;
    } else if (c == '.' && text.compare(i, 3, "...") == 0 && term.ellipsis < 0) {
      term.ellipsis = int(term.labels.size());
      i += 2;
    } else {
      ctx.fail("equation term \"", text, "\" has an unexpected '", c, "' (labels are letters, ",
               "with at most one \"...\")");
    }
  }
  return term;
}

Types einsum(const InferContext &ctx) {
  std::string equation;
  for (char c : ctx.node().attrString("equation", ""))
    if (c != ' ')
      equation += c;
  size_t arrow = equation.find("->");
  std::string lhs = equation.substr(0, arrow);
  std::vector<Term> terms;
  for (size_t start = 0;;) {
    size_t comma = lhs.find(',', start);
    terms.push_back(parseTerm(ctx, lhs.substr(start, comma - start)));
    if (comma == std::string::npos)
      break;
    start = comma + 1;
  }
  if (int(terms.size()) != ctx.numInputs())
    ctx.fail("equation \"", equation, "\" has ", terms.size(), " operands but the node has ",
             ctx.numInputs(), " inputs");

  std::map<char, Dim> labelDims;
  std::map<char, int> labelCount;
  Shape ellipsisDims;
  bool anyEllipsis = false;
  for (int i = 0; i < ctx.numInputs(); ++i) {
    if (i > 0)
      ctx.requireSameDType(0, i);
    const Term &term = terms[i];
    const Shape &shape = ctx.shape(i);
    int labels = int(term.labels.size());
    int ellipsisRank = int(shape.size()) - labels;
    if (term.ellipsis < 0 ? ellipsisRank != 0 : ellipsisRank < 0)
      ctx.failInput(i, "has rank ", shape.size(), " but its equation term has ", labels,
                    " labels", term.ellipsis < 0 ? "" : " and \"...\"");
    int dimIndex = 0;
    for (int k = 0; k <= labels; ++k) {
      if (k == term.ellipsis) {
        anyEllipsis = true;
        Shape dims(shape.begin() + dimIndex, shape.begin() + dimIndex + ellipsisRank);
        ellipsisDims = broadcastShapes(ctx, ellipsisDims, dims, "the \"...\" dims of the operands");
        dimIndex += ellipsisRank;
      }
      if (k == labels)
        break;
      char label = term.labels[k];
      const Dim &dim = shape[dimIndex++];
      auto [it, inserted] = labelDims.emplace(label, dim);
      if (!inserted) {
        auto merged = broadcastShapes(ctx, {it->second}, {dim},
                                      detail::concat("the dims labelled '", label, "'").c_str());
        it->second = merged[0];
      }
      ++labelCount[label];
    }
  }

  Term output;
  if (arrow != std::string::npos) {
    output = parseTerm(ctx, equation.substr(arrow + 2));
    for (size_t k = 0; k < output.labels.size(); ++k) {
      char label = output.labels[k];
      if (!labelDims.count(label))
        ctx.fail("equation output label '", label, "' does not appear in any operand");
      if (output.labels.find(label) != k)
        ctx.fail("equation output repeats label '", label, "'");
    }
  } else {
    // Implicit output: "..." first, then the labels used once, in alphabetical order.
    output.ellipsis = anyEllipsis ? 0 : -1;
    for (auto [label, count] : labelCount) // std::map: sorted, 'A'..'Z' before 'a'..'z'
      if (count == 1)
        output.labels += label;
  }
  Shape out;
  for (size_t k = 0; k <= output.labels.size(); ++k) {
    if (int(k) == output.ellipsis)
      out.insert(out.end(), ellipsisDims.begin(), ellipsisDims.end());
    if (k < output.labels.size())
      out.push_back(labelDims.at(output.labels[k]));
  }
  return {{ctx.dtype(0), out}};
}

} // namespace

void registerContractionInference(InferTable &table) {
  table.add(OpKind::MatMul, matMul);
  table.add(OpKind::Gemm, gemm);
  // Det: [..., M, M] -> [...].
  table.add(OpKind::Det, [](const InferContext &ctx) -> Types {
    ctx.requireDType(0, isFloatType, "a float type");
    ctx.requireRankAtLeast(0, 2);
    const Shape &x = ctx.shape(0);
    mergeDims(ctx, x[x.size() - 1], x[x.size() - 2], "the two matrix dims");
    return {{ctx.dtype(0), Shape(x.begin(), x.end() - 2)}};
  });
  table.add(OpKind::Einsum, [](const InferContext &ctx) -> Types {
    ctx.requireDType(0, isNumeric, "a numeric type other than bool"); // bf16 since opset 28
    for (int i = 0; i < ctx.numInputs(); ++i)
      ctx.type(i); // every operand must be present
    return einsum(ctx);
  });
}

} // namespace sinter::infer
