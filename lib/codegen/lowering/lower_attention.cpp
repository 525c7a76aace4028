// Lowering of Attention (a kernel rule) and RotaryEmbedding (an injective rule). The semantics
// are those of lib/reference/attention.cpp.
//
// Attention: one parallel index per query row (batch, head, query). The row's logits are
// recomputed in each of three passes over the keys (maximum, sum of exponentials, then per value
// dim the weighted sum), so no row-sized scratch is needed: a straightforward kernel, not a fast
// one. The thread of query 0 of each of the first kv_heads heads also writes present_key and
// present_value for its (batch, head).
#include "lowering_rules.h"

#include "sinter/support/error.h"

#include <cmath>
#include <limits>

namespace sinter::codegen {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

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
    ExprRef current = packed ? ctx.input(input)({bIndex, clampIndex(fresh, kvLen), add(mul(head, size), d)})
                             : ctx.input(input)({bIndex, head, clampIndex(fresh, kvLen), d});
    current = cast(current, type);
    if (!hasPast)
      return current;
    ExprRef past = cast(ctx.input(pastInput)({bIndex, head, clampIndex(j, pastLength), d}), type);
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
      std::vector<ExprRef> full = {bIndex, hIndex, iIndex, clampIndex(j, maskLength)};
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

// ---- RotaryEmbedding ------------------------------------------------------------------------
// X is [batch, heads, sequence, head_size] or [batch, sequence, heads * head_size]. Element d of a
// head (d < rotary_embedding_dim) pairs with d +- dim/2 (or its neighbour when interleaved) and
// rotates by the angle of its position: first of a pair cos*x1 - sin*x2, second sin*x1 + cos*x2.
ExprRef rotaryEmbeddingRule(const RuleContext &ctx, int, const std::vector<ExprRef> &index) {
  const Node &node = ctx.node();
  std::vector<int64_t> dims = ctx.inputDims(0), cacheDims = ctx.inputDims(1);
  bool packed = dims.size() == 3;
  if (dims.size() != 3 && dims.size() != 4)
    userError(node.describe(), ": the input must be 3-D or 4-D");
  int64_t heads = node.attrInt("num_heads", 0);
  if (packed && (heads <= 0 || dims[2] % heads != 0))
    userError(node.describe(), ": num_heads ", heads, " does not divide the hidden size ", dims[2]);
  int64_t headSize = packed ? dims[2] / heads : dims[3];
  int64_t dim = node.attrInt("rotary_embedding_dim", 0);
  if (dim == 0)
    dim = headSize;
  int64_t half = dim / 2;
  if (dim % 2 != 0 || dim > headSize || cacheDims.empty() || cacheDims.back() != half ||
      ctx.inputDims(2) != cacheDims)
    userError(node.describe(), ": rotary_embedding_dim ", dim, " must be even, at most the head size, "
                               "and twice the caches' last dim");
  bool interleaved = node.attrInt("interleaved", 0) != 0;

  ExprRef batch = index[0];
  ExprRef sequence = packed ? index[1] : index[2];
  ExprRef d = packed ? rem(index[2], headSize) : index[3];
  ExprRef headBase = packed ? sub(index[2], d) : intConstant(0);
  auto xAt = [&](ExprRef position) {
    std::vector<ExprRef> at = index;
    at.back() = packed ? add(headBase, position) : position;
    return ctx.input(0)(at);
  };
  // The cache row: position_ids[batch, sequence], else (batch, sequence) of a [batch, seq, half] cache.
  int64_t sequenceLength = packed ? dims[1] : dims[2];
  ExprRef row = ctx.hasInput(3) ? clampIndex(cast(ctx.input(3)({batch, sequence}), DType::Int64), cacheDims[0])
                                : add(mul(batch, sequenceLength), sequence);
  ExprRef first = interleaved ? binary(BinaryOp::Eq, rem(d, 2), intConstant(0))
                              : binary(BinaryOp::Lt, d, intConstant(half));
  ExprRef pairIndex = interleaved ? div(d, 2) : select(first, d, sub(d, intConstant(half)));
  pairIndex = clampIndex(pairIndex, half);
  ExprRef partner = interleaved ? select(first, add(d, 1), sub(d, intConstant(1)))
                                : select(first, add(d, half), sub(d, intConstant(half)));
  partner = clampIndex(partner, headSize);
  ExprRef flat = add(mul(row, half), pairIndex);
  ExprRef cosine = ctx.input(1)(unravelIndex(flat, cacheDims));
  ExprRef sine = ctx.input(2)(unravelIndex(flat, cacheDims));
  DType type = ctx.outputType(0);
  cosine = cast(cosine, type);
  sine = cast(sine, type);
  ExprRef x = xAt(d), other = xAt(partner);
  ExprRef signedSine = select(first, unary(UnaryOp::Neg, sine), sine);
  ExprRef rotated = fadd(fmul(cosine, x), fmul(signedSine, other));
  if (dim == headSize)
    return rotated;
  return select(binary(BinaryOp::Lt, d, intConstant(dim)), rotated, x);
}

} // namespace

void registerAttentionLowering(LoweringTable &table) {
  table.addKernel(OpKind::Attention, attentionRule);
  table.addInjective(OpKind::RotaryEmbedding, rotaryEmbeddingRule);
}

} // namespace sinter::codegen
