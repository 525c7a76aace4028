// Lowering of the stateful sequence ops of opsets 23 to 27, CausalConvWithState and
// LinearAttention, as kernel rules. The semantics are those of lib/reference/recurrent_stateful.cpp.
//
// CausalConvWithState: one parallel index per (batch, channel, position); position t computes
// output t when t < length and present_state t when t < k - 1, each a k-tap sum over the input
// with past_state before it.
//
// LinearAttention: the recurrent state's columns evolve independently (decay scales rows, the
// delta rule reads and writes one column, the query reads columns), so one parallel index per
// (batch, kv head, value dim j) carries column j of its state, d_k values in a scratch buffer,
// through the time steps, and writes output j of every query head that reads that kv head.
#include "lowering_rules.h"

#include "sinter/support/error.h"

#include <cmath>

namespace sinter::codegen {
namespace {

// ---- CausalConvWithState --------------------------------------------------------------------

void causalConvWithStateRule(const RuleContext &ctx) {
  const Node &node = ctx.node();
  KernelBuilder &b = ctx.builder();
  std::string activation = node.attrString("activation", "none");
  if (activation != "none" && activation != "silu" && activation != "swish")
    userError(node.describe(), ": activation '", activation, "' is not none, silu or swish");
  std::vector<int64_t> xDims = ctx.inputDims(0), wDims = ctx.inputDims(1);
  if (xDims.size() != 3 || wDims.size() != 3 || wDims[0] != xDims[1] || wDims[1] != 1 || wDims[2] < 1)
    userError(node.describe(), ": input must be [batch, channels, length] and weight [channels, 1, k]");
  int64_t batch = xDims[0], channels = xDims[1], length = xDims[2], k = wDims[2];
  bool hasBias = ctx.hasInput(2), hasPast = ctx.hasInput(3);
  if (hasPast && ctx.inputDims(3) != std::vector<int64_t>{batch, channels, k - 1})
    userError(node.describe(), ": past_state must be [batch, channels, k - 1]");
  DType type = ctx.outputType(0);
  int64_t span = std::max(length, k - 1);
  b.setParallelExtent(batch * channels * span);
  ExprRef t = rem(b.gid(), span), row = div(b.gid(), span);
  ExprRef n = div(row, channels), c = rem(row, channels);
  // Position p of past_state followed by the input.
  auto padded = [&](ExprRef p) {
    ExprRef current = cast(ctx.input(0)({n, c, clampIndex(sub(p, intConstant(k - 1)), length)}), type);
    if (k == 1)
      return current;
    ExprRef past = hasPast ? cast(ctx.input(3)({n, c, clampIndex(p, k - 1)}), type) : typedConstant(type, 0);
    return select(binary(BinaryOp::Lt, p, intConstant(k - 1)), past, current);
  };
  if (ctx.hasOutput(0)) {
    int sum = b.addVariable("sum", type), m = b.addVariable("m", DType::Int64);
    ExprRef mv = var(m, DType::Int64);
    ExprRef tap = fmul(padded(add(t, mv)), cast(ctx.input(1)({c, intConstant(0), mv}), type));
    ExprRef result = var(sum, type);
    if (activation != "none")
      result = fmul(result, unary(UnaryOp::Sigmoid, result));
    ExprRef start = hasBias ? cast(ctx.input(2)({c}), type) : typedConstant(type, 0);
    b.emit(ifThen(binary(BinaryOp::Lt, t, intConstant(length)),
                  {assign(sum, start), forLoop(m, intConstant(k), {assign(sum, fadd(var(sum, type), tap))}),
                   ctx.store(0, add(mul(row, length), t), result)}));
  }
  if (ctx.hasOutput(1) && k > 1)
    b.emit(ifThen(binary(BinaryOp::Lt, t, intConstant(k - 1)),
                  {ctx.store(1, add(mul(row, k - 1), t), padded(add(t, length)))}));
}

// ---- LinearAttention ------------------------------------------------------------------------

void linearAttentionRule(const RuleContext &ctx) {
  const Node &node = ctx.node();
  KernelBuilder &b = ctx.builder();
  std::string rule = node.attrString("update_rule", "gated_delta");
  if (rule != "linear" && rule != "gated" && rule != "delta" && rule != "gated_delta")
    userError(node.describe(), ": update_rule '", rule, "' is not linear, gated, delta or gated_delta");
  bool gated = rule == "gated" || rule == "gated_delta";
  bool delta = rule == "delta" || rule == "gated_delta";
  if (gated != ctx.hasInput(4) || delta != ctx.hasInput(5))
    userError(node.describe(), ": update_rule '", rule, "' ", gated ? "needs" : "takes no", " decay and ",
              delta ? "needs" : "takes no", " beta");
  int64_t qHeads = node.attrInt("q_num_heads", 0), kvHeads = node.attrInt("kv_num_heads", 0);
  if (qHeads <= 0 || kvHeads <= 0 || qHeads % kvHeads != 0)
    userError(node.describe(), ": q_num_heads ", qHeads, " must be a positive multiple of kv_num_heads ", kvHeads);
  std::vector<int64_t> qDims = ctx.inputDims(0), kDims = ctx.inputDims(1), vDims = ctx.inputDims(2);
  if (qDims.size() != 3 || kDims.size() != 3 || vDims.size() != 3 || qDims[2] % qHeads != 0 ||
      vDims[2] % kvHeads != 0)
    userError(node.describe(), ": query, key and value must be [batch, T, heads * d]");
  int64_t batch = qDims[0], steps = qDims[1], dk = qDims[2] / qHeads, dv = vDims[2] / kvHeads;
  if (kDims != std::vector<int64_t>{batch, steps, kvHeads * dk} || vDims[0] != batch || vDims[1] != steps)
    userError(node.describe(), ": query, key and value have inconsistent shapes");
  int64_t decayWidth = gated ? ctx.inputDims(4).back() : 0, betaWidth = delta ? ctx.inputDims(5).back() : 0;
  if (gated && (ctx.inputDims(4).size() != 3 || (decayWidth != kvHeads && decayWidth != kvHeads * dk)))
    userError(node.describe(), ": decay must be [batch, T, kv_heads] or [batch, T, kv_heads * d_k]");
  if (delta && (ctx.inputDims(5).size() != 3 || (betaWidth != kvHeads && betaWidth != 1)))
    userError(node.describe(), ": beta must be [batch, T, kv_heads] or [batch, T, 1]");
  if (ctx.hasInput(3) && ctx.inputDims(3) != std::vector<int64_t>{batch, kvHeads, dk, dv})
    userError(node.describe(), ": past_state must be [batch, kv_heads, d_k, d_v]");
  double scale = node.attrFloat("scale", 0.0f);
  if (scale == 0.0)
    scale = 1.0 / std::sqrt(double(dk));
  DType type = ctx.outputType(0) == DType::Float64 ? DType::Float64 : DType::Float32;
  int64_t group = qHeads / kvHeads;

  int64_t columns = batch * kvHeads * dv;
  b.setParallelExtent(columns);
  int state = b.addScratch("state", type, columns * dk);
  ExprRef j = rem(b.gid(), dv), head = rem(div(b.gid(), dv), kvHeads), n = div(b.gid(), kvHeads * dv);
  int iVar = b.addVariable("i", DType::Int64), tVar = b.addVariable("t", DType::Int64);
  ExprRef t = var(tVar, DType::Int64);
  auto at = [&](ExprRef i) { return add(mul(b.gid(), dk), i); };
  auto stateAt = [&](ExprRef i) { return load(state, type, at(i)); };
  auto input = [&](int which, ExprRef last) { return cast(ctx.input(which)({n, t, last}), type); };
  auto loopI = [&](std::vector<StmtRef> body) { return forLoop(iVar, intConstant(dk), std::move(body)); };
  ExprRef i = var(iVar, DType::Int64);

  ExprRef initial = ctx.hasInput(3) ? cast(ctx.input(3)({n, head, i, j}), type) : typedConstant(type, 0);
  b.emit(loopI({store(state, at(i), initial)}));
  std::vector<StmtRef> step;
  if (gated) {
    ExprRef gate = input(4, decayWidth == kvHeads ? head : add(mul(head, dk), i));
    step.push_back(loopI({store(state, at(i), fmul(stateAt(i), unary(UnaryOp::Exp, gate)))}));
  }
  ExprRef key = input(1, add(mul(head, dk), i));
  int update = b.addVariable("update", type);
  ExprRef updateValue = var(update, type);
  step.push_back(assign(update, input(2, add(mul(head, dv), j))));
  if (delta) {
    int retrieved = b.addVariable("retrieved", type);
    step.push_back(assign(retrieved, typedConstant(type, 0)));
    step.push_back(loopI({assign(retrieved, fadd(var(retrieved, type), fmul(stateAt(i), key)))}));
    ExprRef beta = input(5, betaWidth == 1 ? intConstant(0) : head);
    step.push_back(assign(update, fmul(beta, binary(BinaryOp::Sub, updateValue, var(retrieved, type)))));
  }
  step.push_back(loopI({store(state, at(i), fadd(stateAt(i), fmul(key, updateValue)))}));
  // Output j of each query head reading this kv head: scale * q . column.
  int g = b.addVariable("g", DType::Int64), sum = b.addVariable("sum", type);
  ExprRef queryHead = add(mul(head, group), var(g, DType::Int64));
  ExprRef query = input(0, add(mul(queryHead, dk), i));
  ExprRef outFlat = add(mul(add(mul(n, steps), t), qHeads * dv), add(mul(queryHead, dv), j));
  step.push_back(forLoop(g, intConstant(group),
                         {assign(sum, typedConstant(type, 0)),
                          loopI({assign(sum, fadd(var(sum, type), fmul(query, stateAt(i))))}),
                          ctx.store(0, outFlat, fmul(typedConstant(type, scale), var(sum, type)))}));
  b.emit(forLoop(tVar, intConstant(steps), step));
  if (ctx.hasOutput(1)) {
    ExprRef presentFlat = add(mul(add(mul(add(mul(n, kvHeads), head), dk), i), dv), j);
    b.emit(loopI({ctx.store(1, presentFlat, cast(stateAt(i), ctx.outputType(1)))}));
  }
}

} // namespace

void registerStatefulRecurrentLowering(LoweringTable &table) {
  table.addKernel(OpKind::CausalConvWithState, causalConvWithStateRule);
  table.addKernel(OpKind::LinearAttention, linearAttentionRule);
}

} // namespace sinter::codegen
