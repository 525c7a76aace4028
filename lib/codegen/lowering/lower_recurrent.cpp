// Lowering of the recurrent ops RNN, GRU and LSTM (semantics in sinter/ir/recurrent.h and
// lib/reference/recurrent.cpp): one parallel index per (direction, batch entry), each walking its
// sequence serially. The state lives in scratch buffers, one row of H per parallel index:
//   state    h_{t-1}, read by every unit of step t
//   next     h_t, copied to `state` once every unit is done
//   cell     LSTM c (each unit reads only its own, so it is updated in place)
//   gated    GRU r * h_{t-1} (or r, with linear_before_reset), needed whole before n is computed
// Each gate's pre-activation is a dot product over the input and one over the state, summed in
// sequential loops. Simple rather than fast: a step's units are not spread over threads.
#include "lowering_rules.h"

#include "sinter/ir/recurrent.h"

namespace sinter::codegen {
namespace {

/// f(x) in the kernel's compute type.
ExprRef activate(const RecurrentActivation &activation, ExprRef x) {
  DType type = x->type;
  auto c = [&](double value) { return typedConstant(type, value); };
  auto mulBy = [&](double factor, ExprRef value) { return binary(BinaryOp::Mul, c(factor), value); };
  switch (activation.kind) {
  case RecurrentActivationKind::Relu: return binary(BinaryOp::Max, x, c(0));
  case RecurrentActivationKind::Tanh: return unary(UnaryOp::Tanh, x);
  case RecurrentActivationKind::Sigmoid: return unary(UnaryOp::Sigmoid, x);
  case RecurrentActivationKind::Affine: return binary(BinaryOp::Add, mulBy(activation.alpha, x), c(activation.beta));
  case RecurrentActivationKind::LeakyRelu:
    return select(binary(BinaryOp::Ge, x, c(0)), x, mulBy(activation.alpha, x));
  case RecurrentActivationKind::ThresholdedRelu:
    return select(binary(BinaryOp::Gt, x, c(activation.alpha)), x, c(0));
  case RecurrentActivationKind::ScaledTanh:
    return mulBy(activation.alpha, unary(UnaryOp::Tanh, mulBy(activation.beta, x)));
  case RecurrentActivationKind::HardSigmoid:
    return binary(BinaryOp::Min, binary(BinaryOp::Max, binary(BinaryOp::Add, mulBy(activation.alpha, x), c(activation.beta)), c(0)), c(1));
  case RecurrentActivationKind::Elu:
    return select(binary(BinaryOp::Ge, x, c(0)), x,
                  mulBy(activation.alpha, binary(BinaryOp::Sub, unary(UnaryOp::Exp, x), c(1))));
  case RecurrentActivationKind::Softsign:
    return binary(BinaryOp::Div, x, binary(BinaryOp::Add, c(1), unary(UnaryOp::Abs, x)));
  case RecurrentActivationKind::Softplus:
    return unary(UnaryOp::Log, binary(BinaryOp::Add, c(1), unary(UnaryOp::Exp, x)));
  }
  return x;
}

class RecurrentLowering {
public:
  explicit RecurrentLowering(const RuleContext &ctx)
      : ctx_(ctx), node_(ctx.node()), b_(ctx.builder()), spec_(recurrentSpec(ctx.node())) {
    std::vector<int64_t> x = ctx.inputDims(0);
    seq_ = x[spec_.batchMajor ? 1 : 0];
    batch_ = x[spec_.batchMajor ? 0 : 1];
    input_ = x[2];
    hidden_ = ctx.inputDims(2)[2];
    type_ = ctx.outputType(0);
  }

  void emit() {
    int64_t directions = spec_.directions;
    int64_t stateSize = directions * batch_ * hidden_;
    b_.setParallelExtent(directions * batch_);
    direction_ = div(b_.gid(), batch_);
    entry_ = rem(b_.gid(), batch_);
    base_ = mul(b_.gid(), hidden_);
    state_ = b_.addScratch("state", type_, stateSize);
    next_ = b_.addScratch("next", type_, stateSize);
    if (node_.kind() == OpKind::LSTM)
      cell_ = b_.addScratch("cell", type_, stateSize);
    if (node_.kind() == OpKind::GRU)
      gated_ = b_.addScratch("gated", type_, stateSize);

    // The sequence length, clamped so every index stays in bounds whatever the data says.
    length_ = b_.addVariable("length", DType::Int64);
    ExprRef length = intConstant(seq_);
    if (ctx_.hasInput(4))
      length = binary(BinaryOp::Min, binary(BinaryOp::Max, cast(ctx_.input(4)({entry_}), DType::Int64), intConstant(0)),
                      intConstant(seq_));
    b_.emit(assign(length_, length));

    int j = b_.addVariable("j", DType::Int64);
    ExprRef jv = var(j, DType::Int64);
    std::vector<StmtRef> init = {store(state_, add(base_, jv), initial(5, jv))};
    if (cell_ >= 0)
      init.push_back(store(cell_, add(base_, jv), initial(6, jv)));
    b_.emit(forLoop(j, intConstant(hidden_), init));

    int s = b_.addVariable("s", DType::Int64);
    ExprRef sv = var(s, DType::Int64);
    time_ = b_.addVariable("t", DType::Int64);
    ExprRef lengthV = var(length_, DType::Int64);
    // Direction 1 of a bidirectional node, and a reverse node, walk backwards.
    ExprRef backwards = spec_.reverse ? boolConstant(true)
                        : directions == 2 ? binary(BinaryOp::Eq, direction_, intConstant(1))
                                          : boolConstant(false);
    std::vector<StmtRef> stepBody = {
        assign(time_, select(backwards, sub(sub(lengthV, intConstant(1)), sv), sv))};
    emitStep(stepBody);
    std::vector<StmtRef> padBody;
    if (ctx_.hasOutput(0)) {
      int k = b_.addVariable("k", DType::Int64);
      padBody.push_back(forLoop(k, intConstant(hidden_), {ctx_.store(0, yIndex(sv, var(k, DType::Int64)), typedConstant(type_, 0))}));
    }
    b_.emit(forLoop(s, intConstant(seq_), {ifThen(binary(BinaryOp::Lt, sv, lengthV), stepBody, padBody)}));

    int e = b_.addVariable("e", DType::Int64);
    ExprRef ev = var(e, DType::Int64);
    std::vector<StmtRef> finish;
    // An empty sequence gives zero final states.
    ExprRef nonEmpty = binary(BinaryOp::Gt, lengthV, intConstant(0));
    auto final = [&](int buffer) { return select(nonEmpty, loadState(buffer, ev), typedConstant(type_, 0)); };
    if (ctx_.hasOutput(1))
      finish.push_back(ctx_.store(1, stateIndex(ev), final(state_)));
    if (cell_ >= 0 && ctx_.hasOutput(2))
      finish.push_back(ctx_.store(2, stateIndex(ev), final(cell_)));
    if (!finish.empty())
      b_.emit(forLoop(e, intConstant(hidden_), finish));
  }

private:
  ExprRef loadState(int buffer, ExprRef unit) const { return load(buffer, type_, add(base_, unit)); }

  /// initial_h (input 5) or initial_c (input 6) at this index's unit, or zero when absent.
  ExprRef initial(int input, ExprRef unit) const {
    if (!ctx_.hasInput(input))
      return typedConstant(type_, 0);
    std::vector<ExprRef> index = spec_.batchMajor ? std::vector<ExprRef>{entry_, direction_, unit}
                                                  : std::vector<ExprRef>{direction_, entry_, unit};
    return ctx_.input(input)(index);
  }

  /// Flat index into Y_h / Y_c of this index's unit.
  ExprRef stateIndex(ExprRef unit) const {
    std::vector<int64_t> dims = spec_.batchMajor ? std::vector<int64_t>{batch_, spec_.directions, hidden_}
                                                 : std::vector<int64_t>{spec_.directions, batch_, hidden_};
    std::vector<ExprRef> index = spec_.batchMajor ? std::vector<ExprRef>{entry_, direction_, unit}
                                                  : std::vector<ExprRef>{direction_, entry_, unit};
    return ravelIndex(index, dims);
  }

  /// Flat index into Y at time t of this index's unit.
  ExprRef yIndex(ExprRef t, ExprRef unit) const {
    std::vector<int64_t> dims = ctx_.outputDims(0);
    std::vector<ExprRef> index = spec_.batchMajor ? std::vector<ExprRef>{entry_, t, direction_, unit}
                                                  : std::vector<ExprRef>{t, direction_, entry_, unit};
    return ravelIndex(index, dims);
  }

  /// A weight's element at [direction, row, column] (W: input 1, R: input 2).
  ExprRef weight(int input, ExprRef row, ExprRef column) const {
    return ctx_.input(input)({direction_, row, column});
  }
  /// Wb (part 0) or Rb (part 1) at a row, or zero without B.
  ExprRef bias(int part, ExprRef row) const {
    if (!ctx_.hasInput(3))
      return typedConstant(type_, 0);
    return ctx_.input(3)({direction_, add(row, intConstant(part * spec_.gates * hidden_))});
  }
  ExprRef peephole(int which, ExprRef unit) const {
    return ctx_.input(7)({direction_, add(unit, intConstant(which * hidden_))});
  }
  ExprRef clip(ExprRef x) const {
    if (!spec_.hasClip)
      return x;
    return binary(BinaryOp::Min, binary(BinaryOp::Max, x, typedConstant(type_, -spec_.clip)), typedConstant(type_, spec_.clip));
  }
  /// The activation `which` of this index's direction (a select between the two directions'
  /// when they differ).
  ExprRef act(int which, ExprRef x) const {
    ExprRef forward = activate(spec_.activations[0][size_t(which)], x);
    if (spec_.directions == 1)
      return forward;
    ExprRef backward = activate(spec_.activations[1][size_t(which)], x);
    return select(binary(BinaryOp::Eq, direction_, intConstant(0)), forward, backward);
  }

  /// Emits, into `body`, loops summing x_t W_row^T (+ h R_row^T from `stateBuffer`, when given)
  /// into one accumulator per gate in `gates`; returns the accumulators.
  std::vector<ExprRef> dots(std::vector<StmtRef> &body, ExprRef unit, const std::vector<int> &gates,
                            int stateBuffer, bool withInput = true) {
    std::vector<int> accumulators;
    for (size_t g = 0; g < gates.size(); ++g) {
      accumulators.push_back(b_.addVariable("acc", type_));
      body.push_back(assign(accumulators.back(), typedConstant(type_, 0)));
    }
    ExprRef t = var(time_, DType::Int64);
    auto row = [&](int gate) { return add(unit, intConstant(gate * hidden_)); };
    if (withInput) {
      int k = b_.addVariable("k", DType::Int64);
      ExprRef kv = var(k, DType::Int64);
      std::vector<ExprRef> xIndex = spec_.batchMajor ? std::vector<ExprRef>{entry_, t, kv}
                                                     : std::vector<ExprRef>{t, entry_, kv};
      int xv = b_.addVariable("x", type_);
      std::vector<StmtRef> loop = {assign(xv, ctx_.input(0)(xIndex))};
      for (size_t g = 0; g < gates.size(); ++g)
        loop.push_back(assign(accumulators[g], binary(BinaryOp::Add, var(accumulators[g], type_),
                                                      binary(BinaryOp::Mul, var(xv, type_), weight(1, row(gates[g]), kv)))));
      body.push_back(forLoop(k, intConstant(input_), loop));
    }
    if (stateBuffer >= 0) {
      int k = b_.addVariable("k", DType::Int64);
      ExprRef kv = var(k, DType::Int64);
      int hv = b_.addVariable("h", type_);
      std::vector<StmtRef> loop = {assign(hv, loadState(stateBuffer, kv))};
      for (size_t g = 0; g < gates.size(); ++g)
        loop.push_back(assign(accumulators[g], binary(BinaryOp::Add, var(accumulators[g], type_),
                                                      binary(BinaryOp::Mul, var(hv, type_), weight(2, row(gates[g]), kv)))));
      body.push_back(forLoop(k, intConstant(hidden_), loop));
    }
    std::vector<ExprRef> result;
    for (int accumulator : accumulators)
      result.push_back(var(accumulator, type_));
    return result;
  }

  /// Assigns an expression to a fresh variable (so it is computed once) and returns the variable.
  ExprRef let(std::vector<StmtRef> &body, const char *name, ExprRef value) {
    DType type = value->type;
    int v = b_.addVariable(name, type);
    body.push_back(assign(v, std::move(value)));
    return var(v, type);
  }

  void emitStep(std::vector<StmtRef> &step) {
    auto sum = [](ExprRef a, ExprRef b) { return binary(BinaryOp::Add, a, b); };
    auto product = [](ExprRef a, ExprRef b) { return binary(BinaryOp::Mul, a, b); };
    ExprRef one = typedConstant(type_, 1);
    int j = b_.addVariable("j", DType::Int64);
    ExprRef jv = var(j, DType::Int64);
    auto row = [&](int gate) { return add(jv, intConstant(gate * hidden_)); };
    auto biases = [&](int gate) { return sum(bias(0, row(gate)), bias(1, row(gate))); };
    std::vector<StmtRef> units;
    if (node_.kind() == OpKind::RNN) {
      std::vector<ExprRef> a = dots(units, jv, {0}, state_);
      ExprRef h = act(0, clip(sum(a[0], biases(0))));
      units.push_back(store(next_, add(base_, jv), h));
    } else if (node_.kind() == OpKind::GRU) {
      // First every unit's reset gate (kept as r * h, or r with linear_before_reset).
      std::vector<StmtRef> resetLoop;
      std::vector<ExprRef> ar = dots(resetLoop, jv, {1}, state_);
      ExprRef r = let(resetLoop, "r", act(0, clip(sum(ar[0], biases(1)))));
      resetLoop.push_back(store(gated_, add(base_, jv),
                                spec_.linearBeforeReset ? r : product(r, loadState(state_, jv))));
      step.push_back(forLoop(j, intConstant(hidden_), resetLoop));
      std::vector<ExprRef> az = dots(units, jv, {0}, state_);
      ExprRef z = let(units, "z", act(0, clip(sum(az[0], biases(0)))));
      ExprRef candidateInput;
      if (spec_.linearBeforeReset) {
        std::vector<ExprRef> ah = dots(units, jv, {2}, state_, false);
        std::vector<ExprRef> xh = dots(units, jv, {2}, -1);
        ExprRef recurrentPart = product(loadState(gated_, jv), sum(ah[0], bias(1, row(2))));
        candidateInput = sum(sum(xh[0], recurrentPart), bias(0, row(2)));
      } else {
        std::vector<ExprRef> ah = dots(units, jv, {2}, gated_);
        candidateInput = sum(ah[0], biases(2));
      }
      ExprRef n = let(units, "n", act(1, clip(candidateInput)));
      ExprRef h = sum(product(binary(BinaryOp::Sub, one, z), n), product(z, loadState(state_, jv)));
      units.push_back(store(next_, add(base_, jv), h));
    } else {
      // Gates in W's order: i o f c.
      std::vector<ExprRef> a = dots(units, jv, {0, 1, 2, 3}, state_);
      ExprRef previousCell = let(units, "c_prev", loadState(cell_, jv));
      bool peepholes = ctx_.hasInput(7);
      auto peep = [&](int which, ExprRef cell, ExprRef x) {
        return peepholes ? sum(x, product(peephole(which, jv), cell)) : x;
      };
      ExprRef i = let(units, "i", act(0, clip(peep(0, previousCell, sum(a[0], biases(0))))));
      ExprRef forget = spec_.inputForget ? binary(BinaryOp::Sub, one, i)
                                         : act(0, clip(peep(2, previousCell, sum(a[2], biases(2)))));
      ExprRef forgetV = let(units, "f", forget);
      ExprRef cellInput = act(1, clip(sum(a[3], biases(3))));
      ExprRef cell = let(units, "c", sum(product(forgetV, previousCell), product(i, cellInput)));
      ExprRef o = let(units, "o", act(0, clip(peep(1, cell, sum(a[1], biases(1))))));
      units.push_back(store(cell_, add(base_, jv), cell));
      units.push_back(store(next_, add(base_, jv), product(o, act(2, cell))));
    }
    step.push_back(forLoop(j, intConstant(hidden_), units));
    // h_t becomes the state, and Y's row at t.
    int k = b_.addVariable("k", DType::Int64);
    ExprRef kv = var(k, DType::Int64);
    std::vector<StmtRef> copy = {store(state_, add(base_, kv), loadState(next_, kv))};
    if (ctx_.hasOutput(0))
      copy.push_back(ctx_.store(0, yIndex(var(time_, DType::Int64), kv), loadState(next_, kv)));
    step.push_back(forLoop(k, intConstant(hidden_), copy));
  }

  const RuleContext &ctx_;
  const Node &node_;
  KernelBuilder &b_;
  RecurrentSpec spec_;
  int64_t seq_ = 0, batch_ = 0, input_ = 0, hidden_ = 0;
  DType type_ = DType::Float32;
  ExprRef direction_, entry_, base_;
  int state_ = -1, next_ = -1, cell_ = -1, gated_ = -1;
  int length_ = -1, time_ = -1;
};

void recurrentRule(const RuleContext &ctx) { RecurrentLowering(ctx).emit(); }

} // namespace

void registerRecurrentLowering(LoweringTable &table) {
  for (OpKind kind : {OpKind::RNN, OpKind::GRU, OpKind::LSTM})
    table.addKernel(kind, recurrentRule);
}

} // namespace sinter::codegen
