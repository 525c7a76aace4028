// Inference for the recurrent ops RNN, GRU and LSTM (shapes in sinter/ir/recurrent.h): every
// tensor input is checked against X, W and hidden_size, and the outputs are
//   Y [seq, D, batch, H] (layout 1: [batch, seq, D, H]); Y_h, Y_c [D, batch, H] (layout 1:
//   [batch, D, H]).
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

} // namespace

void registerRecurrentInference(InferTable &table) {
  for (OpKind kind : {OpKind::RNN, OpKind::GRU, OpKind::LSTM})
    table.add(kind, recurrent);
}

} // namespace sinter::infer
