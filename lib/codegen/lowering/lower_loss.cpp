// Lowering of the training losses NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss as kernel
// rules, with the semantics of lib/reference/loss.cpp: with reduction "none" one parallel index
// per target position; with "sum" or "mean" a single index loops over every position and
// accumulates the loss and the weights.
#include "lowering_rules.h"

#include "sinter/support/error.h"

#include <limits>

namespace sinter::codegen {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

void lossRule(const RuleContext &ctx) {
  const Node &node = ctx.node();
  KernelBuilder &b = ctx.builder();
  DType type = ctx.outputType(0);
  std::vector<int64_t> dims = ctx.inputDims(0), targetDims = ctx.inputDims(1);
  int64_t n = dims[0], classes = dims[1], rest = productOf(dims, 2);
  int64_t positions = n * rest;
  std::string reduction = node.attrString("reduction", "mean");
  bool softmax = node.kind() == OpKind::SoftmaxCrossEntropyLoss;
  bool perPosition = reduction == "none";
  bool hasIgnore = node.hasAttr("ignore_index");
  int64_t ignore = node.attrInt("ignore_index", 0);

  int p = b.addVariable("p", DType::Int64);
  b.setParallelExtent(perPosition ? positions : 1);
  ExprRef position = perPosition ? b.gid() : var(p, DType::Int64);
  ExprRef sample = div(position, rest), inner = rem(position, rest);
  auto score = [&](ExprRef c) {
    return cast(ctx.input(0)(unravelIndex(add(mul(add(mul(sample, classes), c), rest), inner), dims)), type);
  };
  ExprRef label = cast(ctx.input(1)(unravelIndex(position, targetDims)), DType::Int64);
  ExprRef safeLabel = clampIndex(label, classes);
  ExprRef counts = hasIgnore ? binary(BinaryOp::Ne, label, intConstant(ignore)) : boolConstant(true);
  ExprRef weight = ctx.hasInput(2) ? cast(ctx.input(2)({safeLabel}), type) : typedConstant(type, 1);
  weight = select(counts, weight, typedConstant(type, 0));

  std::vector<StmtRef> body;
  int peak = b.addVariable("peak", type), sum = b.addVariable("sum", type), c = b.addVariable("c", DType::Int64);
  int c2 = b.addVariable("c2", DType::Int64), c3 = b.addVariable("c3", DType::Int64);
  ExprRef logSum = typedConstant(type, 0);
  if (softmax) {
    ExprRef peakValue = var(peak, type), sumValue = var(sum, type);
    body.push_back(assign(peak, typedConstant(type, -kInf)));
    body.push_back(forLoop(c, intConstant(classes), {assign(peak, binary(BinaryOp::Max, peakValue, score(var(c, DType::Int64))))}));
    body.push_back(assign(sum, typedConstant(type, 0)));
    body.push_back(forLoop(c2, intConstant(classes),
                           {assign(sum, binary(BinaryOp::Add, sumValue,
                                               unary(UnaryOp::Exp, binary(BinaryOp::Sub, score(var(c2, DType::Int64)), peakValue))))}));
    logSum = binary(BinaryOp::Add, peakValue, unary(UnaryOp::Log, sumValue));
    if (ctx.hasOutput(1)) {
      ExprRef cv = var(c3, DType::Int64);
      ExprRef flat = add(mul(add(mul(sample, classes), cv), rest), inner);
      body.push_back(forLoop(c3, intConstant(classes), {ctx.store(1, flat, binary(BinaryOp::Sub, score(cv), logSum))}));
    }
  }
  ExprRef logProbability = binary(BinaryOp::Sub, score(safeLabel), logSum);
  ExprRef loss = select(counts, binary(BinaryOp::Mul, unary(UnaryOp::Neg, logProbability), weight), typedConstant(type, 0));
  if (perPosition) {
    body.push_back(ctx.store(0, position, loss));
    for (const StmtRef &statement : body)
      b.emit(statement);
    return;
  }
  int lossSum = b.addVariable("loss_sum", type), weightSum = b.addVariable("weight_sum", type);
  body.push_back(assign(lossSum, binary(BinaryOp::Add, var(lossSum, type), loss)));
  body.push_back(assign(weightSum, binary(BinaryOp::Add, var(weightSum, type), weight)));
  b.emit(assign(lossSum, typedConstant(type, 0)));
  b.emit(assign(weightSum, typedConstant(type, 0)));
  b.emit(forLoop(p, intConstant(positions), body));
  ExprRef result = reduction == "sum" ? var(lossSum, type) : binary(BinaryOp::Div, var(lossSum, type), var(weightSum, type));
  b.emit(ctx.store(0, intConstant(0), result));
}

} // namespace

void registerLossLowering(LoweringTable &table) {
  table.addKernel(OpKind::NegativeLogLikelihoodLoss, lossRule);
  table.addKernel(OpKind::SoftmaxCrossEntropyLoss, lossRule);
}

} // namespace sinter::codegen
