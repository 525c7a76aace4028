// Lowering of Attention and the losses (NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss) as
// kernel rules. The semantics are those of lib/reference/attention.cpp and loss.cpp.
//
// Attention: one parallel index per query row (batch, head, query). The row's logits are
// recomputed in each of three passes over the keys (maximum, sum of exponentials, then per value
// dim the weighted sum), so no row-sized scratch is needed: a straightforward kernel, not a fast
// one. The thread of query 0 of each of the first kv_heads heads also writes present_key and
// present_value for its (batch, head).
//
// Losses: with reduction "none" one parallel index per target position; with "sum" or "mean" a
// single index loops over every position and accumulates the loss and the weights.
#include "lowering_rules.h"

#include "sinter/support/error.h"

#include <cmath>
#include <limits>

namespace sinter::codegen {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

ExprRef clampTo(ExprRef index, int64_t size) {
  index = binary(BinaryOp::Max, index, intConstant(0));
  return binary(BinaryOp::Min, index, intConstant(std::max<int64_t>(size - 1, 0)));
}

ExprRef logicalAnd(ExprRef a, ExprRef b) { return binary(BinaryOp::LogicalAnd, a, b); }

void attentionRule(const RuleContext &ctx) {
  const Node &node = ctx.node();
  KernelBuilder &b = ctx.builder();
  DType type = ctx.outputType(0);
  std::vector<int64_t> qDims = ctx.inputDims(0), kDims = ctx.inputDims(1), vDims = ctx.inputDims(2);
  bool packed = qDims.size() == 3;
  int64_t batch = qDims[0], qHeads, kvHeads, qLen, kvLen, headSize, vHeadSize;
  if (packed) {
    qHeads = node.attrInt("q_num_heads", 0);
    kvHeads = node.attrInt("kv_num_heads", 0);
    qLen = qDims[1];
    kvLen = kDims[1];
    headSize = kDims[2] / kvHeads;
    vHeadSize = vDims[2] / kvHeads;
  } else {
    qHeads = qDims[1];
    kvHeads = kDims[1];
    qLen = qDims[2];
    kvLen = kDims[2];
    headSize = kDims[3];
    vHeadSize = vDims[3];
  }
  bool hasMask = ctx.hasInput(3), hasPast = ctx.hasInput(4), hasNonpad = ctx.hasInput(6);
  int64_t pastLength = hasPast ? ctx.inputDims(4)[2] : 0;
  int64_t total = pastLength + kvLen;
  int64_t repeat = qHeads / kvHeads;
  double scale = node.hasAttr("scale") ? double(node.attrFloat("scale", 1.0f)) : 1.0 / std::sqrt(double(headSize));
  ExprRef rootScale = typedConstant(type, std::sqrt(scale));
  double softcap = node.attrFloat("softcap", 0.0f);
  bool causal = node.attrInt("is_causal", 0) != 0;
  int64_t left = node.attrInt("left_window_size", -1), right = node.attrInt("right_window_size", -1);
  int64_t mode = node.attrInt("qk_matmul_output_mode", 0);

  b.setParallelExtent(batch * qHeads * qLen);
  ExprRef row = b.gid();
  ExprRef bIndex = div(row, qHeads * qLen), hIndex = rem(div(row, qLen), qHeads), iIndex = rem(row, qLen);
  ExprRef kvHead = div(hIndex, repeat);

  auto qAt = [&](ExprRef d) {
    ExprRef value = packed ? ctx.input(0)({bIndex, iIndex, add(mul(hIndex, headSize), d)})
                           : ctx.input(0)({bIndex, hIndex, iIndex, d});
    return cast(value, type);
  };
  // Key or value j of the present cache (past first, then the new ones), head `head`.
  auto cacheAt = [&](int input, int pastInput, int64_t size, ExprRef head, ExprRef j, ExprRef d) {
    ExprRef fresh = sub(j, intConstant(pastLength));
    ExprRef current = packed ? ctx.input(input)({bIndex, clampTo(fresh, kvLen), add(mul(head, size), d)})
                             : ctx.input(input)({bIndex, head, clampTo(fresh, kvLen), d});
    current = cast(current, type);
    if (!hasPast)
      return current;
    ExprRef past = cast(ctx.input(pastInput)({bIndex, head, clampTo(j, pastLength), d}), type);
    return select(binary(BinaryOp::Lt, j, intConstant(pastLength)), past, current);
  };

  ExprRef validKeys = intConstant(total), offset = intConstant(pastLength);
  if (hasNonpad) {
    validKeys = cast(ctx.input(6)({bIndex}), DType::Int64);
    if (!hasPast)
      offset = sub(validKeys, intConstant(qLen));
  }
  ExprRef position = add(offset, iIndex);
  // The additive bias of key j, and whether it is -inf (the key is not visible).
  auto visible = [&](ExprRef j) {
    ExprRef ok = binary(BinaryOp::Lt, j, validKeys);
    if (causal)
      ok = logicalAnd(ok, binary(BinaryOp::Le, j, position));
    if (left >= 0)
      ok = logicalAnd(ok, binary(BinaryOp::Le, sub(position, j), intConstant(left)));
    if (right >= 0)
      ok = logicalAnd(ok, binary(BinaryOp::Le, sub(j, position), intConstant(right)));
    return ok;
  };
  std::vector<int64_t> maskDims = hasMask ? ctx.inputDims(3) : std::vector<int64_t>{};
  bool boolMask = hasMask && node.input(3)->dtype() == DType::Bool;
  auto bias = [&](ExprRef j) {
    ExprRef negInf = typedConstant(type, -kInf), zero = typedConstant(type, 0);
    ExprRef value = zero;
    if (hasMask) {
      std::vector<int64_t> aligned(4, 1);
      std::copy(maskDims.begin(), maskDims.end(), aligned.begin() + (4 - maskDims.size()));
      int64_t maskLength = aligned[3];
      std::vector<ExprRef> full = {bIndex, hIndex, iIndex, clampTo(j, maskLength)};
      std::vector<ExprRef> index;
      for (size_t k = 4 - maskDims.size(); k < 4; ++k)
        index.push_back(aligned[k] == 1 ? intConstant(0) : full[k]);
      ExprRef raw = ctx.input(3)(index);
      value = boolMask ? select(raw, zero, negInf) : cast(raw, type);
      value = select(binary(BinaryOp::Lt, j, intConstant(maskLength)), value, negInf);
    }
    return select(visible(j), value, negInf);
  };

  int dotVar = b.addVariable("dot", type), d = b.addVariable("d", DType::Int64);
  ExprRef dv = var(d, DType::Int64);
  // Statements leaving the raw logit of key j in `dot`.
  auto emitDot = [&](ExprRef j) {
    ExprRef term = binary(BinaryOp::Mul, binary(BinaryOp::Mul, qAt(dv), rootScale),
                          binary(BinaryOp::Mul, cacheAt(1, 4, headSize, kvHead, j, dv), rootScale));
    return std::vector<StmtRef>{assign(dotVar, typedConstant(type, 0)),
                                forLoop(d, intConstant(headSize), {assign(dotVar, binary(BinaryOp::Add, var(dotVar, type), term))})};
  };
  ExprRef dot = var(dotVar, type);
  ExprRef capped = softcap > 0 ? binary(BinaryOp::Mul, typedConstant(type, softcap),
                                        unary(UnaryOp::Tanh, binary(BinaryOp::Div, dot, typedConstant(type, softcap))))
                               : dot;
  auto logitOf = [&](ExprRef j) { return binary(BinaryOp::Add, capped, bias(j)); };

  int peak = b.addVariable("peak", type), sum = b.addVariable("sum", type), anyVisible = b.addVariable("any", DType::Bool);
  int j1 = b.addVariable("j", DType::Int64), j2 = b.addVariable("j2", DType::Int64), j3 = b.addVariable("j3", DType::Int64);
  ExprRef peakValue = var(peak, type), sumValue = var(sum, type), anyValue = var(anyVisible, DType::Bool);
  bool qkOutput = ctx.hasOutput(3);

  // Pass 1: the maximum logit, whether any key is visible, and qk_matmul_output modes 0 to 2.
  b.emit(assign(peak, typedConstant(type, -kInf)));
  b.emit(assign(anyVisible, boolConstant(false)));
  {
    ExprRef j = var(j1, DType::Int64);
    std::vector<StmtRef> body = emitDot(j);
    ExprRef logit = logitOf(j);
    body.push_back(assign(peak, binary(BinaryOp::Max, peakValue, logit)));
    body.push_back(assign(anyVisible, binary(BinaryOp::LogicalOr, anyValue,
                                             binary(BinaryOp::Ne, bias(j), typedConstant(type, -kInf)))));
    if (qkOutput && mode != 3)
      body.push_back(ctx.store(3, add(mul(row, total), j), mode == 0 ? dot : mode == 1 ? capped : logit));
    b.emit(forLoop(j1, intConstant(total), body));
  }
  // The probability of key j once `peak` and `sum` are known; 0 for a row with no visible key.
  ExprRef usable = logicalAnd(anyValue, binary(BinaryOp::Ne, peakValue, typedConstant(type, -kInf)));
  auto weightOf = [&](ExprRef j) {
    ExprRef e = unary(UnaryOp::Exp, binary(BinaryOp::Sub, logitOf(j), peakValue));
    return select(usable, e, typedConstant(type, 0));
  };
  // Pass 2: the sum of exponentials.
  b.emit(assign(sum, typedConstant(type, 0)));
  {
    ExprRef j = var(j2, DType::Int64);
    std::vector<StmtRef> body = emitDot(j);
    body.push_back(assign(sum, binary(BinaryOp::Add, sumValue, weightOf(j))));
    b.emit(forLoop(j2, intConstant(total), body));
  }
  ExprRef safeSum = select(binary(BinaryOp::Eq, sumValue, typedConstant(type, 0)), typedConstant(type, 1), sumValue);
  if (qkOutput && mode == 3) {
    ExprRef j = var(j3, DType::Int64);
    std::vector<StmtRef> body = emitDot(j);
    body.push_back(ctx.store(3, add(mul(row, total), j), binary(BinaryOp::Div, weightOf(j), safeSum)));
    b.emit(forLoop(j3, intConstant(total), body));
  }
  // Pass 3: per value dim, the probability-weighted sum of the values.
  int e = b.addVariable("e", DType::Int64), j4 = b.addVariable("j4", DType::Int64), acc = b.addVariable("acc", type);
  {
    ExprRef ev = var(e, DType::Int64), j = var(j4, DType::Int64);
    std::vector<StmtRef> inner = emitDot(j);
    ExprRef p = binary(BinaryOp::Div, weightOf(j), safeSum);
    inner.push_back(assign(acc, binary(BinaryOp::Add, var(acc, type),
                                       binary(BinaryOp::Mul, p, cacheAt(2, 5, vHeadSize, kvHead, j, ev)))));
    // Y is [b, h, i, e] (4-D) or [b, i, h * vHeadSize + e] (3-D).
    ExprRef out = packed ? add(mul(add(mul(bIndex, qLen), iIndex), qHeads * vHeadSize), add(mul(hIndex, vHeadSize), ev))
                         : add(mul(row, vHeadSize), ev);
    b.emit(forLoop(e, intConstant(vHeadSize),
                   {assign(acc, typedConstant(type, 0)), forLoop(j4, intConstant(total), inner), ctx.store(0, out, var(acc, type))}));
  }
  // present_key / present_value: written by query 0 of heads [0, kv_heads).
  for (int output : {1, 2}) {
    if (!ctx.hasOutput(output))
      continue;
    int64_t size = output == 1 ? headSize : vHeadSize;
    int s = b.addVariable("s", DType::Int64), c = b.addVariable("c", DType::Int64);
    ExprRef sv = var(s, DType::Int64), cv = var(c, DType::Int64);
    ExprRef flat = add(mul(add(mul(add(mul(bIndex, kvHeads), hIndex), total), sv), size), cv);
    ExprRef value = cacheAt(output, output + 3, size, hIndex, sv, cv);
    ExprRef writer = logicalAnd(binary(BinaryOp::Eq, iIndex, intConstant(0)), binary(BinaryOp::Lt, hIndex, intConstant(kvHeads)));
    b.emit(ifThen(writer, {forLoop(s, intConstant(total), {forLoop(c, intConstant(size), {ctx.store(output, flat, value)})})}));
  }
}

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
  ExprRef safeLabel = clampTo(label, classes);
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

void registerAttentionLowering(LoweringTable &table) {
  table.addKernel(OpKind::Attention, attentionRule);
  table.addKernel(OpKind::NegativeLogLikelihoodLoss, lossRule);
  table.addKernel(OpKind::SoftmaxCrossEntropyLoss, lossRule);
}

} // namespace sinter::codegen
