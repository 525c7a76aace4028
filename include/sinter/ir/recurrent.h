// The attributes of a recurrent node (RNN, GRU, LSTM) read once and checked, for shape
// inference, the reference evaluator and code generation alike.
//
// Tensors, with D directions (2 when bidirectional), H hidden units and G gates (RNN 1, GRU 3 in
// the order z r h, LSTM 4 in the order i o f c):
//   X [seq, batch, input] (layout 1: [batch, seq, input])
//   W [D, G*H, input], R [D, G*H, H], B [D, 2*G*H] (W's biases, then R's), P [D, 3*H] (LSTM
//   peepholes i o f), sequence_lens [batch], initial_h / initial_c [D, batch, H] (layout 1:
//   [batch, D, H])
//   Y [seq, D, batch, H] (layout 1: [batch, seq, D, H]), Y_h / Y_c like initial_h.
// A batch entry's steps at or after its sequence length leave the state unchanged and give
// zeros in Y, and an empty sequence gives zero final states (as onnxruntime has it); the
// reverse direction walks its sequence from its own last valid step.
#pragma once

#include "sinter/ir/graph.h"

#include <cstdint>
#include <vector>

namespace sinter {

enum class RecurrentActivationKind : uint8_t {
  Relu, Tanh, Sigmoid, Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu,
  Softsign, Softplus
};

/// One activation with its alpha and beta (ONNX's defaults where the node gives none).
struct RecurrentActivation {
  RecurrentActivationKind kind;
  float alpha = 0, beta = 0;
};

struct RecurrentSpec {
  int gates = 1;          ///< G: RNN 1, GRU 3, LSTM 4
  int directions = 1;     ///< D
  bool reverse = false;   ///< direction "reverse" (then D is 1)
  bool batchMajor = false; ///< layout 1
  bool hasClip = false;
  float clip = 0;         ///< gate pre-activations are clamped to [-clip, clip] when hasClip
  bool linearBeforeReset = false; ///< GRU
  bool inputForget = false;       ///< LSTM: f = 1 - i
  /// Per direction, the activations f (, g (, h)): RNN 1, GRU 2, LSTM 3.
  std::vector<std::vector<RecurrentActivation>> activations;

  /// Whether direction `d` walks time backwards.
  bool backwards(int d) const { return reverse || d == 1; }
};

/// Reads and checks a recurrent node's attributes (direction, layout, activations with their
/// alpha and beta, clip); a UserError naming the node for values ONNX does not define.
RecurrentSpec recurrentSpec(const Node &node);

/// f(x) in double, for the reference evaluator.
double applyRecurrentActivation(const RecurrentActivation &activation, double x);

} // namespace sinter
