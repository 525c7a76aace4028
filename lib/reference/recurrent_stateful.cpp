// Reference rules for the ops that carry a state from one decoding step to the next (opset 27):
//
// CausalConvWithState: a depthwise 1-D convolution over [batch, channels, length] whose left
// context is past_state [batch, channels, k - 1] (zeros when absent):
//   padded = concat(past_state, input) along length
//   output[b, c, t] = bias[c] + sum_m padded[b, c, t + m] * weight[c, 0, m], then optionally
//   silu (alias swish): y * sigmoid(y)
//   present_state = the last k - 1 positions of padded.
//
// LinearAttention: a recurrent state S [batch, kv_heads, d_k, d_v] (past_state, else zeros)
// updated per time step t from query / key / value [batch, T, heads * d]:
//   gated rules:  S *= exp(decay_t)       (decay per kv head, or per kv head and key dim)
//   delta rules:  v_t = beta_t * (v_t - S^T k_t)
//   always:       S += k_t v_t^T;   output_t = scale * q_t^T S (query head h reads kv head
//                 h / (q_heads / kv_heads)); scale defaults to 1 / sqrt(d_k)
// update_rule picks the combination: linear, gated, delta, gated_delta (the default).
//
// Both compute in double and round each output element once.
#include "registry.h"
#include "tensor_helpers.h"

#include "sinter/support/error.h"

#include <cmath>

namespace sinter::reference {
namespace {

Outputs evalCausalConvWithState(const Node &node, const Inputs &inputs) {
  const Tensor &x = requiredInput(node, inputs, 0);
  const Tensor &weight = requiredInput(node, inputs, 1);
  const Tensor *bias = optionalInput(inputs, 2);
  const Tensor *past = optionalInput(inputs, 3);
  std::string activation = node.attrString("activation", "none");
  if (activation != "none" && activation != "silu" && activation != "swish")
    userError(node.describe(), ": activation '", activation, "' is not none, silu or swish");
  if (x.rank() != 3 || weight.rank() != 3)
    userError(node.describe(), ": input must be [batch, channels, length] and weight [channels, 1, k]");
  int64_t batch = x.dims()[0], channels = x.dims()[1], length = x.dims()[2];
  int64_t k = weight.dims()[2];
  if (weight.dims()[0] != channels || weight.dims()[1] != 1 || k < 1)
    userError(node.describe(), ": weight must be [", channels, ", 1, k], got ",
              shapeStr(shapeOf(weight.dims())));
  if (past && past->dims() != std::vector<int64_t>{batch, channels, k - 1})
    userError(node.describe(), ": past_state must be [", batch, ", ", channels, ", ", k - 1,
              "], got ", shapeStr(shapeOf(past->dims())));
  if (bias && bias->elementCount() != channels)
    userError(node.describe(), ": bias must hold ", channels, " values");
  std::vector<double> in = toDoubles(x), w = toDoubles(weight);
  std::vector<double> state = past ? toDoubles(*past) : std::vector<double>(size_t(batch * channels * (k - 1)), 0.0);
  int64_t paddedLength = k - 1 + length;
  std::vector<double> out(size_t(batch * channels * length)), present(size_t(batch * channels * (k - 1)));
  std::vector<double> padded(static_cast<size_t>(paddedLength));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t c = 0; c < channels; ++c) {
      int64_t row = b * channels + c;
      for (int64_t t = 0; t < paddedLength; ++t)
        padded[t] = t < k - 1 ? state[size_t(row * (k - 1) + t)] : in[size_t(row * length + t - (k - 1))];
      for (int64_t t = 0; t < length; ++t) {
        double sum = bias ? loadAsDouble(*bias, c) : 0.0;
        for (int64_t m = 0; m < k; ++m)
          sum += padded[size_t(t + m)] * w[size_t(c * k + m)];
        if (activation != "none")
          sum = sum / (1.0 + std::exp(-sum));
        out[size_t(row * length + t)] = sum;
      }
      for (int64_t t = 0; t < k - 1; ++t)
        present[size_t(row * (k - 1) + t)] = padded[size_t(length + t)];
    }
  Outputs outputs{fromDoubles(x.dtype(), x.dims(), out)};
  if (node.numOutputs() > 1)
    outputs.push_back(fromDoubles(past ? past->dtype() : x.dtype(), {batch, channels, k - 1}, present));
  return outputs;
}

Outputs evalLinearAttention(const Node &node, const Inputs &inputs) {
  const Tensor &query = requiredInput(node, inputs, 0);
  const Tensor &key = requiredInput(node, inputs, 1);
  const Tensor &value = requiredInput(node, inputs, 2);
  const Tensor *past = optionalInput(inputs, 3);
  const Tensor *decay = optionalInput(inputs, 4);
  const Tensor *beta = optionalInput(inputs, 5);
  std::string rule = node.attrString("update_rule", "gated_delta");
  if (rule != "linear" && rule != "gated" && rule != "delta" && rule != "gated_delta")
    userError(node.describe(), ": update_rule '", rule, "' is not linear, gated, delta or gated_delta");
  bool gated = rule == "gated" || rule == "gated_delta";
  bool delta = rule == "delta" || rule == "gated_delta";
  if (gated != (decay != nullptr))
    userError(node.describe(), ": update_rule '", rule, "' ", gated ? "needs" : "takes no", " decay input");
  if (delta != (beta != nullptr))
    userError(node.describe(), ": update_rule '", rule, "' ", delta ? "needs" : "takes no", " beta input");
  int64_t qHeads = node.attrInt("q_num_heads", 0), kvHeads = node.attrInt("kv_num_heads", 0);
  if (qHeads <= 0 || kvHeads <= 0 || qHeads % kvHeads != 0)
    userError(node.describe(), ": q_num_heads ", qHeads, " must be a positive multiple of kv_num_heads ", kvHeads);
  if (query.rank() != 3 || key.rank() != 3 || value.rank() != 3)
    userError(node.describe(), ": query, key and value must be [batch, T, heads * d]");
  int64_t batch = query.dims()[0], steps = query.dims()[1];
  int64_t dk = query.dims()[2] / qHeads, dv = value.dims()[2] / kvHeads;
  if (query.dims()[2] % qHeads != 0 || key.dims()[2] != kvHeads * dk || value.dims()[2] % kvHeads != 0 ||
      key.dims()[0] != batch || value.dims()[0] != batch || key.dims()[1] != steps || value.dims()[1] != steps)
    userError(node.describe(), ": query, key and value have inconsistent shapes");
  int64_t decayWidth = 0, betaWidth = 0;
  if (decay) {
    decayWidth = decay->rank() == 3 ? decay->dims()[2] : -1;
    if (decayWidth != kvHeads && decayWidth != kvHeads * dk)
      userError(node.describe(), ": decay must be [batch, T, kv_heads] or [batch, T, kv_heads * d_k]");
  }
  if (beta) {
    betaWidth = beta->rank() == 3 ? beta->dims()[2] : -1;
    if (betaWidth != kvHeads && betaWidth != 1)
      userError(node.describe(), ": beta must be [batch, T, kv_heads] or [batch, T, 1]");
  }
  std::vector<int64_t> stateDims{batch, kvHeads, dk, dv};
  if (past && past->dims() != stateDims)
    userError(node.describe(), ": past_state must be ", shapeStr(shapeOf(stateDims)));
  double scale = node.attrFloat("scale", 0.0f);
  if (scale == 0.0)
    scale = 1.0 / std::sqrt(double(dk));

  std::vector<double> q = toDoubles(query), kk = toDoubles(key), v = toDoubles(value);
  std::vector<double> g = decay ? toDoubles(*decay) : std::vector<double>{};
  std::vector<double> be = beta ? toDoubles(*beta) : std::vector<double>{};
  std::vector<double> state = past ? toDoubles(*past) : std::vector<double>(size_t(batch * kvHeads * dk * dv), 0.0);
  std::vector<double> out(static_cast<size_t>(batch * steps * qHeads * dv), 0.0);
  std::vector<double> update(static_cast<size_t>(dv));
  int64_t group = qHeads / kvHeads;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = 0; t < steps; ++t) {
      for (int64_t h = 0; h < kvHeads; ++h) {
        double *s = &state[size_t(((b * kvHeads + h) * dk) * dv)];
        const double *kt = &kk[size_t((b * steps + t) * kvHeads * dk + h * dk)];
        const double *vt = &v[size_t((b * steps + t) * kvHeads * dv + h * dv)];
        if (gated)
          for (int64_t i = 0; i < dk; ++i) {
            double gate = decayWidth == kvHeads ? g[size_t((b * steps + t) * kvHeads + h)]
                                                : g[size_t((b * steps + t) * kvHeads * dk + h * dk + i)];
            for (int64_t j = 0; j < dv; ++j)
              s[i * dv + j] *= std::exp(gate);
          }
        for (int64_t j = 0; j < dv; ++j)
          update[j] = vt[j];
        if (delta) {
          double bt = be[size_t((b * steps + t) * betaWidth + (betaWidth == 1 ? 0 : h))];
          for (int64_t j = 0; j < dv; ++j) {
            double retrieved = 0;
            for (int64_t i = 0; i < dk; ++i)
              retrieved += s[i * dv + j] * kt[i];
            update[j] = bt * (vt[j] - retrieved);
          }
        }
        for (int64_t i = 0; i < dk; ++i)
          for (int64_t j = 0; j < dv; ++j)
            s[i * dv + j] += kt[i] * update[j];
      }
      for (int64_t h = 0; h < qHeads; ++h) {
        const double *s = &state[size_t(((b * kvHeads + h / group) * dk) * dv)];
        const double *qt = &q[size_t((b * steps + t) * qHeads * dk + h * dk)];
        for (int64_t j = 0; j < dv; ++j) {
          double sum = 0;
          for (int64_t i = 0; i < dk; ++i)
            sum += qt[i] * s[i * dv + j];
          out[size_t((b * steps + t) * qHeads * dv + h * dv + j)] = scale * sum;
        }
      }
    }
  Outputs outputs{fromDoubles(query.dtype(), {batch, steps, qHeads * dv}, out)};
  if (node.numOutputs() > 1)
    outputs.push_back(fromDoubles(past ? past->dtype() : query.dtype(), stateDims, state));
  return outputs;
}

} // namespace

void registerStatefulRecurrentRules(RuleTable &table) {
  table.add(OpKind::CausalConvWithState, evalCausalConvWithState);
  table.add(OpKind::LinearAttention, evalLinearAttention);
}

} // namespace sinter::reference
