// Inference for the recurrent ops RNN, GRU and LSTM (shapes in sinter/ir/recurrent.h): every
// tensor input is checked against X, W and hidden_size, and the outputs are
//   Y [seq, D, batch, H] (layout 1: [batch, seq, D, H]); Y_h, Y_c [D, batch, H] (layout 1:
//   [batch, D, H]);
// and for the stateful sequence ops CausalConvWithState and LinearAttention.
#include "infer_rules.h"

#include "sinter/ir/recurrent.h"

namespace sinter::infer {
namespace {

Types recurrent(const InferContext &ctx) {
  RecurrentSpec spec = recurrentSpec(ctx.node());
  ctx.requireDType(0, isFloatType, "a float type");
  ctx.requireRank(0, 3);
  for (int i : {1, 2}) {
    ctx.requireSameDType(0, i);
    ctx.requireRank(i, 3);
  }
  const Shape &x = ctx.shape(0), &w = ctx.shape(1), &r = ctx.shape(2);
  Dim seq = spec.batchMajor ? x[1] : x[0];
  Dim batch = spec.batchMajor ? x[0] : x[1];
  Dim directions(spec.directions);
  int64_t gates = spec.gates;

  // hidden_size, or R's last dim when the attribute is absent.
  Dim hidden = r[2];
  if (ctx.node().hasAttr("hidden_size")) {
    int64_t size = ctx.node().attrInt("hidden_size", 0);
    if (size <= 0)
      ctx.fail("attribute 'hidden_size' must be positive, not ", size);
    hidden = mergeDims(ctx, Dim(size), r[2], "hidden_size and R's last dim");
  }
  Dim gateRows = mulDims(ctx, Dim(gates), hidden);
  mergeDims(ctx, w[0], directions, "W's dim 0 and the number of directions");
  mergeDims(ctx, w[1], gateRows, "W's dim 1 and gates x hidden_size");
  mergeDims(ctx, w[2], x[2], "W's dim 2 and X's input size");
  mergeDims(ctx, r[0], directions, "R's dim 0 and the number of directions");
  mergeDims(ctx, r[1], gateRows, "R's dim 1 and gates x hidden_size");

  if (ctx.hasInput(3)) { // B
    ctx.requireSameDType(0, 3);
    ctx.requireRank(3, 2);
    mergeDims(ctx, ctx.shape(3)[0], directions, "B's dim 0 and the number of directions");
    mergeDims(ctx, ctx.shape(3)[1], mulDims(ctx, Dim(2), gateRows), "B's dim 1 and 2 x gates x hidden_size");
  }
  if (ctx.hasInput(4)) { // sequence_lens
    ctx.requireDType(4, [](DType t) { return t == DType::Int32; }, "i32");
    ctx.requireRank(4, 1);
    mergeDims(ctx, ctx.shape(4)[0], batch, "sequence_lens's length and the batch size");
  }
  Shape state = spec.batchMajor ? Shape{batch, directions, hidden} : Shape{directions, batch, hidden};
  int lastState = ctx.kind() == OpKind::LSTM ? 6 : 5;
  for (int i = 5; i <= lastState; ++i) { // initial_h, initial_c
    if (!ctx.hasInput(i))
      continue;
    ctx.requireSameDType(0, i);
    ctx.requireRank(i, 3);
    for (int d = 0; d < 3; ++d)
      mergeDims(ctx, ctx.shape(i)[d], state[d],
                detail::concat("dim ", d, " of input ", i, " and of the state"));
  }
  if (ctx.kind() == OpKind::LSTM && ctx.hasInput(7)) { // P
    ctx.requireSameDType(0, 7);
    ctx.requireRank(7, 2);
    mergeDims(ctx, ctx.shape(7)[0], directions, "P's dim 0 and the number of directions");
    mergeDims(ctx, ctx.shape(7)[1], mulDims(ctx, Dim(3), hidden), "P's dim 1 and 3 x hidden_size");
  }

  Shape y = spec.batchMajor ? Shape{batch, seq, directions, hidden}
                            : Shape{seq, directions, batch, hidden};
  Types types = {{ctx.dtype(0), y}};
  for (int i = 1; i < ctx.numOutputs(); ++i)
    types.push_back({ctx.dtype(0), state});
  return types;
}

/// CausalConvWithState: output like the input [batch, channels, length]; present_state
/// [batch, channels, k - 1] from weight [channels, 1, k].
Types causalConvWithState(const InferContext &ctx) {
  ctx.requireDType(0, isFloatType, "a float type");
  ctx.requireSameDType(0, 1);
  ctx.requireRank(0, 3);
  ctx.requireRank(1, 3);
  std::string activation = ctx.node().attrString("activation", "none");
  if (activation != "none" && activation != "silu" && activation != "swish")
    ctx.fail("attribute 'activation' must be none, silu or swish, not \"", activation, "\"");
  const Shape &x = ctx.shape(0), &w = ctx.shape(1);
  mergeDims(ctx, x[1], w[0], "the channels of input and weight");
  Dim context = w[2].isStatic() ? Dim(w[2].value() - 1) : Dim::unknown();
  if (w[2].isStatic() && w[2].value() < 1)
    ctx.failInput(1, "has a kernel of size 0");
  Types out{ctx.type(0)};
  if (ctx.numOutputs() > 1)
    out.push_back({ctx.hasInput(3) ? ctx.dtype(3) : ctx.dtype(0), {x[0], x[1], context}});
  return out;
}

/// LinearAttention: output [batch, T, q_heads * d_v]; present_state [batch, kv_heads, d_k, d_v].
Types linearAttention(const InferContext &ctx) {
  for (int i : {0, 1, 2}) {
    ctx.requireDType(i, isFloatType, "a float type");
    ctx.requireRank(i, 3);
  }
  int64_t qHeads = ctx.node().attrInt("q_num_heads", 0), kvHeads = ctx.node().attrInt("kv_num_heads", 0);
  if (qHeads <= 0 || kvHeads <= 0 || qHeads % kvHeads != 0)
    ctx.fail("q_num_heads ", qHeads, " must be a positive multiple of kv_num_heads ", kvHeads);
  std::string rule = ctx.node().attrString("update_rule", "gated_delta");
  if (rule != "linear" && rule != "gated" && rule != "delta" && rule != "gated_delta")
    ctx.fail("attribute 'update_rule' must be linear, gated, delta or gated_delta, not \"", rule, "\"");
  const Shape &q = ctx.shape(0), &v = ctx.shape(2);
  Dim dk = divideBy(ctx, q[2], qHeads, "the query's hidden size");
  Dim dv = divideBy(ctx, v[2], kvHeads, "the value's hidden size");
  Types out{{ctx.dtype(0), {q[0], q[1], mulDims(ctx, Dim(qHeads), dv)}}};
  if (ctx.numOutputs() > 1)
    out.push_back({ctx.hasInput(3) ? ctx.dtype(3) : ctx.dtype(0), {q[0], Dim(kvHeads), dk, dv}});
  return out;
}

} // namespace

void registerRecurrentInference(InferTable &table) {
  for (OpKind kind : {OpKind::RNN, OpKind::GRU, OpKind::LSTM})
    table.add(kind, recurrent);
  table.add(OpKind::CausalConvWithState, causalConvWithState);
  table.add(OpKind::LinearAttention, linearAttention);
}

} // namespace sinter::infer
