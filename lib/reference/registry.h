// Private to the reference evaluator: each op's evaluation rule is registered beside it, in the
// file for its family, and looked up by kind. Registration is explicit (one function per family,
// called from registry.cpp), not by static initialisers, which static linking would drop.
//
//   void registerElementwiseRules(RuleTable &table) {
//     table.add(OpKind::Relu, [](const Node &node, const Inputs &inputs) -> Outputs {
//       ...
//     });
//   }
//
// A rule receives the node (for attributes and output types) and one tensor per node input (null
// for an absent optional input), and returns one tensor per node output.
#pragma once

#include "sinter/ir/graph.h"
#include "sinter/ir/tensor.h"

#include <array>
#include <vector>

namespace sinter::reference {

using Inputs = std::vector<const Tensor *>;
using Outputs = std::vector<Tensor>;
using EvalFn = Outputs (*)(const Node &node, const Inputs &inputs);

class RuleTable {
public:
  /// Registers the rule for an op; registering one op twice is an internal error.
  void add(OpKind kind, EvalFn fn);
  EvalFn find(OpKind kind) const { return rules_[static_cast<int>(kind)]; }

private:
  std::array<EvalFn, kNumOps> rules_{};
};

/// The table with every family registered.
const RuleTable &rules();

// One per family file. Each file registers only its own ops.
void registerElementwiseRules(RuleTable &table);   // elementwise.cpp: unary, binary, variadic, activations, Cast, Where
void registerReductionRules(RuleTable &table);     // reduction.cpp: Reduce*, ArgMax/Min, Softmax family, CumSum, TopK
void registerNormalizationRules(RuleTable &table); // normalization.cpp: BatchNorm, LayerNorm, GroupNorm, InstanceNorm, LRN, ...
void registerContractionRules(RuleTable &table);   // contraction.cpp: MatMul, Gemm, Einsum, Det
void registerConvolutionRules(RuleTable &table);   // convolution.cpp: Conv, ConvTranspose, pools
void registerDataMovementRules(RuleTable &table);  // data_movement.cpp: Reshape .. Unsqueeze, Concat, Split, Slice, Tile, Pad, ...
void registerGatherScatterRules(RuleTable &table); // gather_scatter.cpp: Gather, GatherElements, GatherND, ScatterElements, ScatterND
void registerResizeRules(RuleTable &table);        // resize.cpp: Resize, GridSample, AffineGrid
void registerCreationRules(RuleTable &table);      // creation.cpp: Shape, Size, ConstantOfShape, Range, EyeLike, OneHot, NonZero, Dropout, Identity
void registerQuantizationRules(RuleTable &table);  // quantization.cpp: QuantizeLinear, DequantizeLinear
void registerAttentionRules(RuleTable &table);     // attention.cpp: Attention, RotaryEmbedding, TensorScatter
void registerLossRules(RuleTable &table);          // loss.cpp: NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss
void registerStatefulRules(RuleTable &table);      // stateful.cpp: CausalConvWithState, LinearAttention
void registerSignalRules(RuleTable &table);        // signal.cpp: HannWindow, HammingWindow, BlackmanWindow
void registerSelectionRules(RuleTable &table);     // selection.cpp: Compress, ReverseSequence, CenterCropPad, NonMaxSuppression
void registerRecurrentRules(RuleTable &table);     // recurrent.cpp: RNN, GRU, LSTM
void registerIntegerMatMulRules(RuleTable &table); // integer_matmul.cpp: MatMulInteger, QLinearMatMul
void registerFourierRules(RuleTable &table);       // fourier.cpp: DFT, STFT
void registerCol2ImRules(RuleTable &table);        // col2im.cpp: Col2Im
void registerDeformConvRules(RuleTable &table);    // deform_conv.cpp: DeformConv
void registerUniqueRules(RuleTable &table);        // unique.cpp: Unique
void registerTfIdfRules(RuleTable &table);         // tfidf.cpp: TfIdfVectorizer
void registerRoiAlignRules(RuleTable &table);      // roi_align.cpp: RoiAlign
void registerMaxUnpoolRules(RuleTable &table);     // max_unpool.cpp: MaxUnpool
void registerDynamicQuantizationRules(RuleTable &table); // dynamic_quantization.cpp: DynamicQuantizeLinear
void registerMelRules(RuleTable &table);           // mel.cpp: MelWeightMatrix

} // namespace sinter::reference
