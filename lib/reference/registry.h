// Private to the reference evaluator: each op's evaluation rule is registered beside it, in the
// file(s) of its family (ops.def's Family column: <family>.cpp, <family>_<part>.cpp), and looked
// up by kind. Registration is explicit (one function per file, called from registry.cpp with its
// family, which is all the file may register: op_families.h), not by static initialisers, which
// static linking would drop.
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
#include "sinter/ir/op_families.h"
#include "sinter/ir/tensor.h"

#include <array>
#include <vector>

namespace sinter::reference {

using Inputs = std::vector<const Tensor *>;
using Outputs = std::vector<Tensor>;
using EvalFn = Outputs (*)(const Node &node, const Inputs &inputs);

class RuleTable {
public:
  /// Runs a family file's registration; it may add only that family's ops (op_families.h).
  void registerFamily(OpFamily family, void (*registerRules)(RuleTable &)) { registrar_.run(*this, family, registerRules); }
  /// Registers the rule for an op; registering one op twice is an internal error.
  void add(OpKind kind, EvalFn fn);
  EvalFn find(OpKind kind) const { return rules_[static_cast<int>(kind)]; }

private:
  std::array<EvalFn, kNumOps> rules_{};
  FamilyRegistrar registrar_{"reference"};
};

/// The table with every family registered.
const RuleTable &rules();

// One per file, grouped by family (OpFamily); each registers only its family's ops.
void registerElementwiseRules(RuleTable &table);          // elementwise.cpp (and elementwise_unary.cpp, elementwise_binary.cpp)
void registerContractionRules(RuleTable &table);          // contraction.cpp: MatMul, Gemm, Einsum, Det
void registerConvolutionRules(RuleTable &table);          // convolution.cpp: Conv, ConvTranspose
void registerDeformConvRules(RuleTable &table);           // convolution_deform.cpp: DeformConv
void registerCol2ImRules(RuleTable &table);               // convolution_col2im.cpp: Col2Im
void registerPoolingRules(RuleTable &table);              // pooling.cpp: the windowed and global pools
void registerMaxUnpoolRules(RuleTable &table);            // pooling_unpool.cpp: MaxUnpool
void registerNormalizationRules(RuleTable &table);        // normalization.cpp
void registerReductionRules(RuleTable &table);            // reduction.cpp (and reduction_axis.cpp)
void registerDataMovementRules(RuleTable &table);         // data_movement.cpp
void registerIndexingRules(RuleTable &table);             // indexing.cpp: gathers, scatters, Compress
void registerResamplingRules(RuleTable &table);           // resampling.cpp: Resize, GridSample, AffineGrid
void registerCreationRules(RuleTable &table);             // creation.cpp
void registerAttentionRules(RuleTable &table);            // attention.cpp: Attention, RotaryEmbedding
void registerRecurrentRules(RuleTable &table);            // recurrent.cpp: RNN, GRU, LSTM
void registerStatefulRecurrentRules(RuleTable &table);    // recurrent_stateful.cpp: CausalConvWithState, LinearAttention
void registerLossRules(RuleTable &table);                 // loss.cpp
void registerQuantizationRules(RuleTable &table);         // quantization.cpp: QuantizeLinear, DequantizeLinear
void registerQuantizedMatMulRules(RuleTable &table);      // quantization_matmul.cpp: MatMulInteger, QLinearMatMul
void registerDynamicQuantizationRules(RuleTable &table);  // quantization_dynamic.cpp: DynamicQuantizeLinear
void registerSignalRules(RuleTable &table);               // signal.cpp: the window functions
void registerFourierRules(RuleTable &table);              // signal_fourier.cpp: DFT, STFT
void registerMelRules(RuleTable &table);                  // signal_mel.cpp: MelWeightMatrix
void registerDetectionRules(RuleTable &table);            // detection.cpp: NonMaxSuppression
void registerRoiAlignRules(RuleTable &table);             // detection_roi_align.cpp: RoiAlign
void registerUniqueRules(RuleTable &table);               // counting_unique.cpp: Unique
void registerTfIdfRules(RuleTable &table);                // counting_tfidf.cpp: TfIdfVectorizer

} // namespace sinter::reference
