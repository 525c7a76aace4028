// Reference rule for Attention (ai.onnx opsets 23 to 25): scaled dot-product attention over 3-D
// ([batch, sequence, heads * head_size], heads from q_num_heads / kv_num_heads) or 4-D
// ([batch, heads, sequence, head_size]) Q, K and V, with an optional KV cache (past_key and
// past_value are concatenated before K and V and returned as present_key / present_value),
// grouped-query heads (query head h reads key/value head h / (q_heads / kv_heads)), and an
// additive bias built from
//   - attn_mask: bool (false -> -inf) or float (added), broadcast right-aligned to
//     [batch, q_heads, q_len, total_len]; a last dim shorter than total_len is padded with
//     false / -inf;
//   - is_causal: key j is visible to query i iff j <= i + offset, where offset is the past length
//     (internal cache), nonpad_kv_seqlen[b] - q_len (external cache) or 0;
//   - left_window_size / right_window_size (opset 25): offset + i - left <= j <= offset + i + right
//     for each bound that is not -1;
//   - nonpad_kv_seqlen (opset 24): keys j >= nonpad_kv_seqlen[b] are masked.
// Logits are (Q * sqrt(scale)) . (K * sqrt(scale)), then softcap * tanh(logits / softcap) when
// softcap > 0, then the bias is added and each row is softmaxed. A row whose bias is -inf
// everywhere (no visible key) gives zero probabilities, so Y's row is zero, not NaN.
// qk_matmul_output is, by qk_matmul_output_mode, 0: the raw logits, 1: after softcap, 2: after the
// bias, 3: the probabilities.
//
// Everything is computed in double and rounded once per output element, which is at least as
// precise as any softmax_precision the model asks for.
#include "registry.h"
#include "tensor_helpers.h"

#include "sinter/support/error.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace sinter::reference {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

/// Q, K or V read as [batch, heads, sequence, head_size] whatever its layout.
struct HeadView {
  std::vector<double> values;
  int64_t batch = 0, heads = 0, sequence = 0, headSize = 0;
  bool packed = false; ///< 3-D [batch, sequence, heads * head_size]

  double at(int64_t b, int64_t h, int64_t s, int64_t d) const {
    if (packed)
      return values[((b * sequence + s) * heads + h) * headSize + d];
    return values[((b * heads + h) * sequence + s) * headSize + d];
  }
};

HeadView headView(const Node &node, const Tensor &tensor, int64_t heads, const char *name) {
  HeadView view;
  view.values = toDoubles(tensor);
  const std::vector<int64_t> &dims = tensor.dims();
  view.batch = dims[0];
  if (tensor.rank() == 4) {
    view.heads = dims[1];
    view.sequence = dims[2];
    view.headSize = dims[3];
    return view;
  }
  if (heads <= 0 || dims[2] % heads != 0)
    userError(node.describe(), ": ", name, "'s hidden size ", dims[2],
              " is not a multiple of its head count ", heads);
  view.packed = true;
  view.heads = heads;
  view.sequence = dims[1];
  view.headSize = dims[2] / heads;
  return view;
}

/// [batch, heads, past + sequence, head_size] of the cache followed by the new keys or values.
std::vector<double> present(const HeadView &current, const Tensor *past, int64_t pastLength) {
  int64_t total = pastLength + current.sequence;
  std::vector<double> out(size_t(current.batch * current.heads * total * current.headSize));
  std::vector<double> cache = past ? toDoubles(*past) : std::vector<double>{};
  size_t o = 0;
  for (int64_t b = 0; b < current.batch; ++b)
    for (int64_t h = 0; h < current.heads; ++h)
      for (int64_t s = 0; s < total; ++s)
        for (int64_t d = 0; d < current.headSize; ++d, ++o)
          out[o] = s < pastLength
                       ? cache[size_t(((b * current.heads + h) * pastLength + s) * current.headSize + d)]
                       : current.at(b, h, s - pastLength, d);
  return out;
}

/// The attention mask as an additive bias at [b, h, i, j], broadcast right-aligned.
struct MaskView {
  const Tensor *mask = nullptr;
  std::vector<int64_t> dims{1, 1, 1, 1}, strides{0, 0, 0, 0};
  bool isBool = false;

  explicit MaskView(const Tensor *tensor) : mask(tensor) {
    if (!mask)
      return;
    isBool = mask->dtype() == DType::Bool;
    int rank = mask->rank();
    int64_t stride = 1;
    for (int i = rank - 1; i >= 0; --i) {
      int slot = 4 - rank + i;
      dims[slot] = mask->dims()[i];
      strides[slot] = dims[slot] == 1 ? 0 : stride;
      stride *= mask->dims()[i];
    }
  }

  double bias(int64_t b, int64_t h, int64_t i, int64_t j) const {
    if (!mask)
      return 0;
    if (j >= dims[3]) // padded to the total length
      return kNegInf;
    int64_t index = (dims[0] == 1 ? 0 : b) * strides[0] + (dims[1] == 1 ? 0 : h) * strides[1] +
                    (dims[2] == 1 ? 0 : i) * strides[2] + (dims[3] == 1 ? 0 : j) * strides[3];
    double value = loadAsDouble(*mask, index);
    if (isBool)
      return value != 0 ? 0.0 : kNegInf;
    return value;
  }
};

Outputs evalAttention(const Node &node, const Inputs &inputs) {
  const Tensor &q = requiredInput(node, inputs, 0);
  const Tensor &k = requiredInput(node, inputs, 1);
  const Tensor &v = requiredInput(node, inputs, 2);
  const Tensor *attnMask = optionalInput(inputs, 3);
  const Tensor *pastKey = optionalInput(inputs, 4);
  const Tensor *pastValue = optionalInput(inputs, 5);
  const Tensor *nonpad = optionalInput(inputs, 6);
  if (q.rank() != k.rank() || q.rank() != v.rank() || (q.rank() != 3 && q.rank() != 4))
    userError(node.describe(), ": Q, K and V must all be 3-D or all 4-D");
  if ((pastKey == nullptr) != (pastValue == nullptr))
    userError(node.describe(), ": past_key and past_value must be given together");
  if (nonpad && pastKey)
    userError(node.describe(), ": nonpad_kv_seqlen cannot be combined with past_key / past_value");

  int64_t qHeadsAttr = node.attrInt("q_num_heads", 0), kvHeadsAttr = node.attrInt("kv_num_heads", 0);
  HeadView qv = headView(node, q, qHeadsAttr, "Q");
  HeadView kv = headView(node, k, kvHeadsAttr, "K");
  HeadView vv = headView(node, v, kvHeadsAttr, "V");
  int64_t batch = qv.batch, qHeads = qv.heads, kvHeads = kv.heads, qLen = qv.sequence;
  int64_t headSize = qv.headSize, vHeadSize = vv.headSize;
  if (kv.batch != batch || vv.batch != batch || vv.heads != kvHeads || vv.sequence != kv.sequence ||
      kv.headSize != headSize)
    userError(node.describe(), ": Q, K and V have inconsistent shapes");
  if (kvHeads <= 0 || qHeads % kvHeads != 0)
    userError(node.describe(), ": ", qHeads, " query heads are not a multiple of ", kvHeads,
              " key/value heads");
  int64_t pastLength = pastKey ? pastKey->dims().at(2) : 0;
  if (pastKey && (pastKey->rank() != 4 || pastValue->rank() != 4))
    userError(node.describe(), ": past_key and past_value must be 4-D");
  int64_t total = pastLength + kv.sequence;
  std::vector<double> keys = present(kv, pastKey, pastLength);
  std::vector<double> values = present(vv, pastValue, pastLength);

  std::vector<int64_t> validKeys(size_t(batch), total);
  if (nonpad) {
    if (nonpad->elementCount() != batch)
      userError(node.describe(), ": nonpad_kv_seqlen has ", nonpad->elementCount(),
                " entries for a batch of ", batch);
    for (int64_t b = 0; b < batch; ++b)
      validKeys[b] = nonpad->getInt(b);
  }

  double scale = node.hasAttr("scale") ? double(node.attrFloat("scale", 1.0f))
                                       : 1.0 / std::sqrt(double(headSize));
  double rootScale = std::sqrt(scale);
  double softcap = node.attrFloat("softcap", 0.0f);
  bool causal = node.attrInt("is_causal", 0) != 0;
  int64_t left = node.attrInt("left_window_size", -1), right = node.attrInt("right_window_size", -1);
  int64_t mode = node.attrInt("qk_matmul_output_mode", 0);
  if (mode < 0 || mode > 3)
    userError(node.describe(), ": qk_matmul_output_mode ", mode, " is not 0, 1, 2 or 3");
  if (left < -1 || right < -1)
    userError(node.describe(), ": window sizes must be -1 or non-negative");
  MaskView mask(attnMask);
  if (attnMask && (attnMask->rank() < 1 || attnMask->rank() > 4))
    userError(node.describe(), ": attn_mask must have rank 1 to 4");

  int64_t repeat = qHeads / kvHeads;
  std::vector<double> y(size_t(batch * qHeads * qLen * vHeadSize), 0.0);
  std::vector<double> qk(size_t(batch * qHeads * qLen * total), 0.0);
  std::vector<double> logits(static_cast<size_t>(total)), probabilities(static_cast<size_t>(total));
  for (int64_t b = 0; b < batch; ++b) {
    int64_t offset = nonpad && !pastKey ? validKeys[b] - qLen : pastLength;
    for (int64_t h = 0; h < qHeads; ++h) {
      int64_t kvHead = h / repeat;
      for (int64_t i = 0; i < qLen; ++i) {
        double *qkRow = &qk[size_t(((b * qHeads + h) * qLen + i) * total)];
        bool anyVisible = false;
        for (int64_t j = 0; j < total; ++j) {
          double dot = 0;
          const double *key = &keys[size_t(((b * kvHeads + kvHead) * total + j) * headSize)];
          for (int64_t d = 0; d < headSize; ++d)
            dot += (qv.at(b, h, i, d) * rootScale) * (key[d] * rootScale);
          double raw = dot;
          double capped = softcap > 0 ? softcap * std::tanh(dot / softcap) : dot;
          double extra = mask.bias(b, h, i, j);
          int64_t position = offset + i;
          if (causal && j > position)
            extra = kNegInf;
          if (left >= 0 && position - j > left)
            extra = kNegInf;
          if (right >= 0 && j - position > right)
            extra = kNegInf;
          if (j >= validKeys[b])
            extra = kNegInf;
          anyVisible |= extra != kNegInf;
          logits[j] = capped + extra;
          qkRow[j] = mode == 0 ? raw : mode == 1 ? capped : logits[j];
        }
        double maximum = kNegInf;
        for (int64_t j = 0; j < total; ++j)
          maximum = std::max(maximum, logits[j]);
        double sum = 0;
        for (int64_t j = 0; j < total; ++j) {
          probabilities[j] = !anyVisible || maximum == kNegInf ? 0.0 : std::exp(logits[j] - maximum);
          sum += probabilities[j];
        }
        for (int64_t j = 0; j < total; ++j) {
          if (sum != 0)
            probabilities[j] /= sum;
          if (mode == 3)
            qkRow[j] = probabilities[j];
        }
        double *out = &y[size_t(((b * qHeads + h) * qLen + i) * vHeadSize)];
        for (int64_t j = 0; j < total; ++j) {
          if (probabilities[j] == 0)
            continue;
          const double *value = &values[size_t(((b * kvHeads + kvHead) * total + j) * vHeadSize)];
          for (int64_t d = 0; d < vHeadSize; ++d)
            out[d] += probabilities[j] * value[d];
        }
      }
    }
  }

  DType dtype = q.dtype();
  Outputs outputs;
  if (qv.packed) { // [b, h, s, d] -> [b, s, h * d]
    std::vector<double> packed(y.size());
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t h = 0; h < qHeads; ++h)
        for (int64_t s = 0; s < qLen; ++s)
          for (int64_t d = 0; d < vHeadSize; ++d)
            packed[size_t(((b * qLen + s) * qHeads + h) * vHeadSize + d)] =
                y[size_t(((b * qHeads + h) * qLen + s) * vHeadSize + d)];
    outputs.push_back(fromDoubles(dtype, {batch, qLen, qHeads * vHeadSize}, packed));
  } else {
    outputs.push_back(fromDoubles(dtype, {batch, qHeads, qLen, vHeadSize}, y));
  }
  if (node.numOutputs() > 1)
    outputs.push_back(fromDoubles(k.dtype(), {batch, kvHeads, total, headSize}, keys));
  if (node.numOutputs() > 2)
    outputs.push_back(fromDoubles(v.dtype(), {batch, kvHeads, total, vHeadSize}, values));
  if (node.numOutputs() > 3)
    outputs.push_back(fromDoubles(dtype, {batch, qHeads, qLen, total}, qk));
  return outputs;
}

// RotaryEmbedding (opset 23): X is [batch, heads, sequence, head_size] or [batch, sequence,
// heads * head_size] (num_heads). The first rotary_embedding_dim (default head_size) values of each
// head rotate in pairs by the angle whose cos and sin the caches hold for the position: the
// caches are [batch, sequence, dim / 2], or [max_position, dim / 2] indexed by position_ids
// [batch, sequence]. Pairs are (i, i + dim / 2), or (2i, 2i + 1) when interleaved:
//   x1' = cos * x1 - sin * x2,   x2' = sin * x1 + cos * x2
Outputs evalRotaryEmbedding(const Node &node, const Inputs &inputs) {
  const Tensor &x = requiredInput(node, inputs, 0);
  const Tensor &cosCache = requiredInput(node, inputs, 1);
  const Tensor &sinCache = requiredInput(node, inputs, 2);
  const Tensor *positions = optionalInput(inputs, 3);
  if (x.rank() != 3 && x.rank() != 4)
    userError(node.describe(), ": the input must be 3-D or 4-D");
  int64_t heads = node.attrInt("num_heads", 0);
  bool packed = x.rank() == 3;
  if (packed && (heads <= 0 || x.dims()[2] % heads != 0))
    userError(node.describe(), ": num_heads ", heads, " does not divide the hidden size ", x.dims()[2]);
  HeadView view = headView(node, x, heads, "X");
  int64_t dim = node.attrInt("rotary_embedding_dim", 0);
  if (dim == 0)
    dim = view.headSize;
  if (dim % 2 != 0 || dim > view.headSize)
    userError(node.describe(), ": rotary_embedding_dim ", dim, " must be even and at most the head size");
  int64_t half = dim / 2;
  if (cosCache.dims().back() != half || sinCache.dims() != cosCache.dims())
    userError(node.describe(), ": the caches' last dim must be rotary_embedding_dim / 2 = ", half);
  std::vector<double> cosValues = toDoubles(cosCache), sinValues = toDoubles(sinCache);
  std::vector<double> out = view.values; // same layout as the input
  auto flat = [&](int64_t b, int64_t h, int64_t s, int64_t d) {
    return packed ? ((b * view.sequence + s) * view.heads + h) * view.headSize + d
                  : ((b * view.heads + h) * view.sequence + s) * view.headSize + d;
  };
  bool interleaved = node.attrInt("interleaved", 0) != 0;
  for (int64_t b = 0; b < view.batch; ++b)
    for (int64_t s = 0; s < view.sequence; ++s) {
      int64_t row = b * view.sequence + s;
      if (positions) {
        row = positions->getInt(b * view.sequence + s);
        if (row < 0 || row >= cosCache.dims()[0])
          userError(node.describe(), ": position id ", row, " is outside the caches");
      }
      for (int64_t h = 0; h < view.heads; ++h)
        for (int64_t i = 0; i < half; ++i) {
          int64_t first = interleaved ? 2 * i : i, second = interleaved ? 2 * i + 1 : i + half;
          double c = cosValues[size_t(row * half + i)], sn = sinValues[size_t(row * half + i)];
          double x1 = view.at(b, h, s, first), x2 = view.at(b, h, s, second);
          out[size_t(flat(b, h, s, first))] = c * x1 - sn * x2;
          out[size_t(flat(b, h, s, second))] = sn * x1 + c * x2;
        }
    }
  return {fromDoubles(x.dtype(), x.dims(), out)};
}

} // namespace

void registerAttentionRules(RuleTable &table) {
  table.add(OpKind::Attention, evalAttention);
  table.add(OpKind::RotaryEmbedding, evalRotaryEmbedding);
}

} // namespace sinter::reference
