#include "permute_conv_weights.h"

#include "sinter/ir/conv_layout.h"
#include "sinter/ir/graph.h"
#include "sinter/ir/infer.h"
#include "sinter/ir/tensor.h"
#include "sinter/support/error.h"

#include <cstdint>
#include <map>
#include <numeric>

namespace sinter {
namespace {

/// The positions of a convolution's window: the product of weights [O, C, k...]'s k dims.
int64_t windowPositions(const std::vector<int64_t> &dims) {
  return std::accumulate(dims.begin() + 2, dims.end(), int64_t(1), std::multiplies<>());
}

/// Moves element (o, c, s) of [outputs, channels, window] to (o, s, c), elements of type T.
template <typename T>
void permuteChannelsInnermost(const std::byte *fromBytes, std::byte *toBytes, int64_t outputs,
                              int64_t channels, int64_t window) {
  const auto *from = reinterpret_cast<const T *>(fromBytes);
  auto *to = reinterpret_cast<T *>(toBytes);
  for (int64_t o = 0; o < outputs; ++o, from += channels * window, to += channels * window)
    for (int64_t c = 0; c < channels; ++c)
      for (int64_t s = 0; s < window; ++s)
        to[s * channels + c] = from[c * window + s];
}

/// `weights` [O, C, k...] as [O, k..., C]: element (o, c, s) moves to (o, s, c), s the flat
/// window position. Typed copies: a memcpy call per element took most of this pass's time.
Tensor channelsInnermost(const Tensor &weights) {
  const std::vector<int64_t> &dims = weights.dims();
  int64_t outputs = dims[0], channels = dims[1], window = windowPositions(dims);
  std::vector<int64_t> permuted = {outputs};
  permuted.insert(permuted.end(), dims.begin() + 2, dims.end());
  permuted.push_back(channels);
  Tensor result(weights.dtype(), permuted);
  switch (dtypeSize(weights.dtype())) {
  case 1:
    permuteChannelsInnermost<uint8_t>(weights.data(), result.data(), outputs, channels, window);
    break;
  case 2:
    permuteChannelsInnermost<uint16_t>(weights.data(), result.data(), outputs, channels, window);
    break;
  case 4:
    permuteChannelsInnermost<uint32_t>(weights.data(), result.data(), outputs, channels, window);
    break;
  case 8:
    permuteChannelsInnermost<uint64_t>(weights.data(), result.data(), outputs, channels, window);
    break;
  default:
    SINTER_ASSERT(false, "no permutation for elements of ", dtypeSize(weights.dtype()), " bytes");
  }
  return result;
}

/// Whether the convolution reduces channels innermost (conv_layout.h) and the permutation moves
/// bytes (more than one channel and more than one window position).
bool worthPermuting(const Tensor &weights) {
  return convReducesChannelsInnermost(weights.dims()[1]) && windowPositions(weights.dims()) > 1;
}

} // namespace

bool PermuteConvWeights::run(Graph &graph) {
  std::map<const Value *, Value *> permutedOf; // one permuted constant per original weight
  std::vector<Node *> convolutions;
  for (const auto &node : graph.nodes())
    if (node->kind() == OpKind::Conv && node->numInputs() >= 2 && node->input(1) &&
        node->input(1)->isConstant() && node->input(1)->constant().rank() >= 3 &&
        worthPermuting(node->input(1)->constant()))
      convolutions.push_back(node.get());
  for (Node *conv : convolutions) {
    Value *weights = conv->input(1);
    Value *&permuted = permutedOf[weights];
    if (!permuted)
      permuted = graph.addConstant(graph.uniqueName(weights->name() + ".permuted"),
                                   channelsInnermost(weights->constant()));
    int64_t rank = weights->rank();
    std::vector<int64_t> perm = {0, rank - 1};
    for (int64_t d = 1; d < rank - 1; ++d)
      perm.push_back(d);
    Node *view = graph.addNode(OpKind::Transpose, {permuted}, 1, "", {graph.uniqueName(weights->name() + ".view")},
                               conv);
    view->setAttr("perm", perm);
    inferNode(*view);
    conv->setInput(1, view->output(0));
  }
  return !convolutions.empty();
}

} // namespace sinter
