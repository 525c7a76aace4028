// Lowering of TfIdfVectorizer (semantics in lib/reference/counting_tfidf.cpp): one parallel index per
// (row, output column). The pool is known when compiling, so each column's n-grams are written
// into the kernel as constants: for each, loops over the skip distances and start positions
// count the places where every token matches. Code grows with the pool; fine for the small
// vocabularies this op is used with.
#include "lowering_rules.h"

#include "sinter/ir/op_attributes.h"
#include "sinter/support/error.h"

#include <algorithm>
#include <map>

namespace sinter::codegen {
namespace {

void tfIdfRule(const RuleContext &ctx) {
  const Node &node = ctx.node();
  KernelBuilder &b = ctx.builder();
  std::vector<int64_t> in = ctx.inputDims(0), out = ctx.outputDims(0);
  const TfIdfAttributes attributes = tfIdfAttributes(node);
  const int64_t minGram = attributes.minGram, maxGram = attributes.maxGram, maxSkip = attributes.maxSkip;
  int64_t width = out.back(), length = in.back();
  // Output column -> its n-grams (place in the pool, tokens).
  std::map<int64_t, std::vector<std::pair<size_t, std::vector<int64_t>>>> grams;
  for (size_t place = 0; place < attributes.grams.size(); ++place)
    grams[attributes.grams[place].column].push_back({place, attributes.grams[place].tokens});

  b.setParallelExtent(productOf(out));
  ExprRef row = div(b.gid(), width), column = rem(b.gid(), width);
  DType tokenType = ctx.inputType(0);
  int count = b.addVariable("count", DType::Int64);
  // Skip distance d = step + 1.
  int step = b.addVariable("step", DType::Int64), start = b.addVariable("start", DType::Int64);
  ExprRef dv = add(var(step, DType::Int64), 1), sv = var(start, DType::Int64);
  auto token = [&](ExprRef position) {
    ExprRef clamped = binary(BinaryOp::Min, position, intConstant(length - 1));
    return in.size() == 2 ? ctx.input(0)({row, clamped}) : ctx.input(0)({clamped});
  };
  DType f32 = DType::Float32;
  int total = b.addVariable("total", f32);
  b.emit(assign(total, constant(f32, 0)));
  for (const auto &[target, list] : grams) {
    std::vector<StmtRef> perColumn;
    for (const auto &[place, gram] : list) {
      int64_t n = int64_t(gram.size());
      if (n < minGram || n > maxGram)
        continue;
      ExprRef last = add(sv, mul(dv, n - 1));
      ExprRef match = binary(BinaryOp::Lt, last, intConstant(length));
      for (int64_t k = 0; k < n; ++k)
        match = binary(BinaryOp::LogicalAnd, match,
                       binary(BinaryOp::Eq, token(add(sv, mul(dv, k))), typedConstant(tokenType, double(gram[size_t(k)]))));
      // 1-grams count once, not once per skip distance.
      int64_t distances = n == 1 ? 1 : maxSkip + 1;
      perColumn.push_back(assign(count, intConstant(0)));
      perColumn.push_back(forLoop(step, intConstant(distances),
          {forLoop(start, intConstant(length), {ifThen(match, {assign(count, add(var(count, DType::Int64), 1))})})}));
      // TF the count, IDF the weight where the count is positive, TFIDF weight * count.
      ExprRef frequency = cast(var(count, DType::Int64), f32);
      ExprRef weight = constant(f32, attributes.grams[place].weight);
      ExprRef value = attributes.mode == TfIdfMode::Idf     ? select(binary(BinaryOp::Gt, frequency, constant(f32, 0)), weight, constant(f32, 0))
                      : attributes.mode == TfIdfMode::TfIdf ? binary(BinaryOp::Mul, frequency, weight)
                                                            : frequency;
      perColumn.push_back(assign(total, binary(BinaryOp::Add, var(total, f32), value)));
    }
    if (!perColumn.empty())
      b.emit(ifThen(binary(BinaryOp::Eq, column, intConstant(target)), perColumn));
  }
  b.emit(ctx.store(0, b.gid(), var(total, f32)));
}

} // namespace

void registerCountingLowering(LoweringTable &table) { table.addKernel(OpKind::TfIdfVectorizer, tfIdfRule); }

} // namespace sinter::codegen
