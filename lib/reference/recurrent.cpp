// Reference rules for the recurrent ops RNN, GRU and LSTM (tensor shapes and attributes in
// sinter/ir/recurrent.h). Each direction and batch entry runs its own sequence, one step at a
// time, in double; results are rounded once when stored. With gate pre-activations
//   a_g = x_t W_g^T + h_{t-1} R_g^T + Wb_g + Rb_g   (clamped to [-clip, clip] with clip)
// the steps are
//   RNN   h_t = f(a_i)
//   GRU   z = f(a_z), r = f(a_r),
//         n = g(x_t W_h^T + (r * h_{t-1}) R_h^T + Rb_h + Wb_h)        (linear_before_reset 0)
//         n = g(x_t W_h^T + r * (h_{t-1} R_h^T + Rb_h) + Wb_h)        (linear_before_reset 1)
//         h_t = (1 - z) * n + z * h_{t-1}
//   LSTM  i = f(a_i + P_i * c_{t-1}), f = f(a_f + P_f * c_{t-1}) (or 1 - i with input_forget),
//         c_t = f * c_{t-1} + i * g(a_c), o = f(a_o + P_o * c_t), h_t = o * h(c_t)
#include "registry.h"
#include "tensor_helpers.h"

#include "sinter/ir/recurrent.h"

#include <algorithm>

namespace sinter::reference {
namespace {

struct Sizes {
  int64_t seq, batch, input, hidden;
};

Outputs evalRecurrent(const Node &node, const Inputs &inputs) {
  RecurrentSpec spec = recurrentSpec(node);
  const Tensor &xTensor = requiredInput(node, inputs, 0);
  requireSameDTypes(node, inputs, {0, 1, 2, 3, 5, 6, 7});
  const Tensor &wTensor = requiredInput(node, inputs, 1);
  const Tensor &rTensor = requiredInput(node, inputs, 2);
  const Tensor *bTensor = optionalInput(inputs, 3);
  const Tensor *lengths = optionalInput(inputs, 4);
  const Tensor *initialH = optionalInput(inputs, 5);
  bool lstm = node.kind() == OpKind::LSTM;
  const Tensor *initialC = lstm ? optionalInput(inputs, 6) : nullptr;
  const Tensor *pTensor = lstm ? optionalInput(inputs, 7) : nullptr;
  if (xTensor.rank() != 3 || rTensor.rank() != 3)
    userError(node.describe(), ": X and R must be 3-D");

  Sizes n;
  n.seq = xTensor.dims()[spec.batchMajor ? 1 : 0];
  n.batch = xTensor.dims()[spec.batchMajor ? 0 : 1];
  n.input = xTensor.dims()[2];
  n.hidden = rTensor.dims()[2];
  int64_t gates = spec.gates, rows = gates * n.hidden, directions = spec.directions;
  // Inference checked static dims; symbolic ones are checked here, before any element is read.
  auto requireDims = [&](const Tensor *tensor, const char *what, std::vector<int64_t> dims) {
    if (tensor && tensor->dims() != dims)
      userError(node.describe(), ": ", what, " has shape ", shapeStr(tensor->type().shape),
                "; expected ", shapeStr(shapeOf(dims)));
  };
  std::vector<int64_t> stateDims = spec.batchMajor ? std::vector<int64_t>{n.batch, directions, n.hidden}
                                                   : std::vector<int64_t>{directions, n.batch, n.hidden};
  requireDims(&wTensor, "W", {directions, rows, n.input});
  requireDims(&rTensor, "R", {directions, rows, n.hidden});
  requireDims(bTensor, "B", {directions, 2 * rows});
  requireDims(lengths, "sequence_lens", {n.batch});
  requireDims(initialH, "initial_h", stateDims);
  requireDims(initialC, "initial_c", stateDims);
  requireDims(pTensor, "P", {directions, 3 * n.hidden});
  std::vector<double> x = toDoubles(xTensor), w = toDoubles(wTensor), r = toDoubles(rTensor);
  std::vector<double> b = bTensor ? toDoubles(*bTensor) : std::vector<double>(size_t(directions * 2 * rows), 0.0);
  std::vector<double> p = pTensor ? toDoubles(*pTensor) : std::vector<double>(size_t(directions * 3 * n.hidden), 0.0);

  // Flat offsets of the state tensors and of X and Y in either layout.
  auto stateAt = [&](int64_t d, int64_t batch, int64_t j) {
    return spec.batchMajor ? (batch * directions + d) * n.hidden + j : (d * n.batch + batch) * n.hidden + j;
  };
  auto xAt = [&](int64_t t, int64_t batch, int64_t k) {
    return spec.batchMajor ? (batch * n.seq + t) * n.input + k : (t * n.batch + batch) * n.input + k;
  };
  auto yAt = [&](int64_t t, int64_t d, int64_t batch, int64_t j) {
    return spec.batchMajor ? ((batch * n.seq + t) * directions + d) * n.hidden + j
                           : ((t * directions + d) * n.batch + batch) * n.hidden + j;
  };
  std::vector<double> y(size_t(n.seq * directions * n.batch * n.hidden), 0.0);
  std::vector<double> yH(size_t(directions * n.batch * n.hidden), 0.0), yC = yH;
  std::vector<double> h0 = initialH ? toDoubles(*initialH) : yH;
  std::vector<double> c0 = initialC ? toDoubles(*initialC) : yH;

  auto clip = [&](double value) { return spec.hasClip ? std::clamp(value, -double(spec.clip), double(spec.clip)) : value; };
  std::vector<double> h(size_t(n.hidden)), c(size_t(n.hidden)), next(size_t(n.hidden)), reset(size_t(n.hidden));
  for (int64_t d = 0; d < directions; ++d) {
    const std::vector<RecurrentActivation> &act = spec.activations[size_t(d)];
    const double *wd = w.data() + d * rows * n.input, *rd = r.data() + d * rows * n.hidden;
    const double *wb = b.data() + d * 2 * rows, *rb = wb + rows, *pd = p.data() + d * 3 * n.hidden;
    // x_t W_row^T and h R_row^T for one row of a gate block.
    auto inputDot = [&](int64_t t, int64_t batch, int64_t row) {
      double sum = 0;
      for (int64_t k = 0; k < n.input; ++k)
        sum += x[size_t(xAt(t, batch, k))] * wd[row * n.input + k];
      return sum;
    };
    auto stateDot = [&](const std::vector<double> &state, int64_t row) {
      double sum = 0;
      for (int64_t k = 0; k < n.hidden; ++k)
        sum += state[size_t(k)] * rd[row * n.hidden + k];
      return sum;
    };
    for (int64_t batch = 0; batch < n.batch; ++batch) {
      int64_t length = n.seq;
      if (lengths) {
        length = lengths->getInt(batch);
        if (length < 0 || length > n.seq)
          userError(node.describe(), ": sequence_lens[", batch, "] is ", length,
                    ", outside [0, ", n.seq, "]");
      }
      for (int64_t j = 0; j < n.hidden; ++j) {
        h[size_t(j)] = h0[size_t(stateAt(d, batch, j))];
        c[size_t(j)] = c0[size_t(stateAt(d, batch, j))];
      }
      for (int64_t step = 0; step < length; ++step) {
        int64_t t = spec.backwards(int(d)) ? length - 1 - step : step;
        auto gate = [&](int64_t g, int64_t j) {
          int64_t row = g * n.hidden + j;
          return inputDot(t, batch, row) + stateDot(h, row) + wb[row] + rb[row];
        };
        if (node.kind() == OpKind::RNN) {
          for (int64_t j = 0; j < n.hidden; ++j)
            next[size_t(j)] = applyRecurrentActivation(act[0], clip(gate(0, j)));
        } else if (node.kind() == OpKind::GRU) {
          for (int64_t j = 0; j < n.hidden; ++j)
            reset[size_t(j)] = applyRecurrentActivation(act[0], clip(gate(1, j)));
          std::vector<double> gated(size_t(n.hidden));
          for (int64_t j = 0; j < n.hidden; ++j)
            gated[size_t(j)] = reset[size_t(j)] * h[size_t(j)];
          for (int64_t j = 0; j < n.hidden; ++j) {
            double z = applyRecurrentActivation(act[0], clip(gate(0, j)));
            int64_t row = 2 * n.hidden + j;
            double recurrentPart = spec.linearBeforeReset
                                       ? reset[size_t(j)] * (stateDot(h, row) + rb[row])
                                       : stateDot(gated, row) + rb[row];
            double candidate = applyRecurrentActivation(act[1], clip(inputDot(t, batch, row) + recurrentPart + wb[row]));
            next[size_t(j)] = (1 - z) * candidate + z * h[size_t(j)];
          }
        } else {
          for (int64_t j = 0; j < n.hidden; ++j) {
            double i = applyRecurrentActivation(act[0], clip(gate(0, j) + pd[j] * c[size_t(j)]));
            double f = spec.inputForget
                           ? 1 - i
                           : applyRecurrentActivation(act[0], clip(gate(2, j) + pd[2 * n.hidden + j] * c[size_t(j)]));
            double cell = f * c[size_t(j)] + i * applyRecurrentActivation(act[1], clip(gate(3, j)));
            double o = applyRecurrentActivation(act[0], clip(gate(1, j) + pd[n.hidden + j] * cell));
            reset[size_t(j)] = cell; // the new cell state, kept apart until every unit is done
            next[size_t(j)] = o * applyRecurrentActivation(act[2], cell);
          }
          c = reset;
        }
        h = next;
        for (int64_t j = 0; j < n.hidden; ++j)
          y[size_t(yAt(t, d, batch, j))] = h[size_t(j)];
      }
      // An empty sequence gives zero states, not the initial ones (as onnxruntime does).
      for (int64_t j = 0; j < n.hidden && length > 0; ++j) {
        yH[size_t(stateAt(d, batch, j))] = h[size_t(j)];
        yC[size_t(stateAt(d, batch, j))] = c[size_t(j)];
      }
    }
  }

  DType dtype = xTensor.dtype();
  if (!isFloat(dtype))
    userError(node.describe(), ": X must have a float type, not ", dtypeName(dtype));
  std::vector<int64_t> yDims = spec.batchMajor ? std::vector<int64_t>{n.batch, n.seq, directions, n.hidden}
                                               : std::vector<int64_t>{n.seq, directions, n.batch, n.hidden};
  Outputs outputs;
  outputs.push_back(fromDoubles(dtype, yDims, y));
  if (node.numOutputs() > 1)
    outputs.push_back(fromDoubles(dtype, stateDims, yH));
  if (node.numOutputs() > 2)
    outputs.push_back(fromDoubles(dtype, stateDims, yC));
  return outputs;
}

} // namespace

void registerRecurrentRules(RuleTable &table) {
  for (OpKind kind : {OpKind::RNN, OpKind::GRU, OpKind::LSTM})
    table.add(kind, evalRecurrent);
}

} // namespace sinter::reference
