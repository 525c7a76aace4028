// Private to lowering: the per-op rule tables and the helpers rules share.
//
// An injective rule gives the output's element at a multi-index from its inputs' accessors:
//
//   table.addInjective(OpKind::Relu, [](const RuleContext &ctx, int output,
//                                       const std::vector<ExprRef> &index) {
//     ExprRef x = ctx.input(0)(index);
//     return binary(BinaryOp::Max, x, constant(x->type, 0));
//   });
//
// A kernel rule writes a whole kernel body for a node (reductions, normalisation, pooling, naive
// contractions), reading inputs through ctx.input(i) and writing outputs through ctx.store(...).
// Accessors and stores use compute types: f16/bf16 compute as f32 (see computeType).
#pragma once

#include "sinter/codegen/lowering/contraction.h"
#include "sinter/codegen/kernel/kernel_ir.h"
#include "sinter/codegen/lowering/lowering.h"
#include "sinter/ir/op_families.h"

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <vector>

namespace sinter::codegen {

/// The type a storage dtype computes in: f32 for f16/bf16, itself otherwise (the low-precision
/// types included: their accessors give the element's byte).
DType computeType(DType storage);

/// How a kernel rule's store of output i reaches memory when the group fuses an epilogue after
/// the rule's node: the statements storing the value and whatever the group computes from it.
using StoreHook = std::function<StmtRef(int output, ExprRef flatIndex, ExprRef value)>;

class RuleContext {
public:
  RuleContext(const Node &node, KernelBuilder &builder, std::vector<Accessor> inputs,
              std::vector<int> outputBuffers, StoreHook storeHook = nullptr,
              std::vector<bool> consumedInGroup = {})
      : node_(node), builder_(builder), inputs_(std::move(inputs)),
        outputBuffers_(std::move(outputBuffers)), storeHook_(std::move(storeHook)),
        consumedInGroup_(std::move(consumedInGroup)) {}

  const Node &node() const { return node_; }
  KernelBuilder &builder() const { return builder_; }
  /// Input i's accessor; an internal error for an absent input (check node().input(i) first).
  const Accessor &input(int i) const;
  bool hasInput(int i) const { return i < int(inputs_.size()) && inputs_[i] != nullptr; }
  /// Whether output i is wanted: written to memory or read by the group's epilogue (optional
  /// outputs nobody reads are neither).
  bool hasOutput(int i) const {
    return (i < int(outputBuffers_.size()) && outputBuffers_[i] >= 0) ||
           (i < int(consumedInGroup_.size()) && consumedInGroup_[i]);
  }
  /// Static dims of input / output i.
  std::vector<int64_t> inputDims(int i) const;
  std::vector<int64_t> outputDims(int i) const;
  DType inputType(int i) const;  ///< compute type of input i
  DType outputType(int i) const; ///< compute type of output i
  /// A statement storing `value` (compute type) into output i's element at a flat index.
  StmtRef store(int output, ExprRef flatIndex, ExprRef value) const;

private:
  const Node &node_;
  KernelBuilder &builder_;
  std::vector<Accessor> inputs_;
  std::vector<int> outputBuffers_;
  StoreHook storeHook_;
  std::vector<bool> consumedInGroup_;
};

using InjectiveRule = ExprRef (*)(const RuleContext &ctx, int output, const std::vector<ExprRef> &index);
/// Emits the kernel's body (and sets its parallel extent) through ctx.builder().
using KernelRule = void (*)(const RuleContext &ctx);

class LoweringTable {
public:
  /// Runs a family file's registration; it may add only that family's ops (op_families.h).
  void registerFamily(OpFamily family, void (*registerRules)(LoweringTable &)) { registrar_.run(*this, family, registerRules); }
  void addInjective(OpKind kind, InjectiveRule rule);
  void addKernel(OpKind kind, KernelRule rule);
  InjectiveRule injective(OpKind kind) const { return injective_[static_cast<int>(kind)]; }
  KernelRule kernel(OpKind kind) const { return kernel_[static_cast<int>(kind)]; }

private:
  std::array<InjectiveRule, kNumOps> injective_{};
  std::array<KernelRule, kNumOps> kernel_{};
  FamilyRegistrar registrar_{"lowering"};
};

const LoweringTable &loweringTable();

// One per file, called from lowering.cpp with its family (OpFamily), whose ops alone it may
// register (op_families.h).
void registerElementwiseLowering(LoweringTable &table);      // lower_elementwise.cpp
void registerContractionLowering(LoweringTable &table);      // lower_contraction.cpp (MatMul, Gemm)
void registerLinearAlgebraLowering(LoweringTable &table);    // lower_contraction_linear_algebra.cpp (Einsum, Det)
void registerConvolutionLowering(LoweringTable &table);      // lower_convolution.cpp
void registerPoolingLowering(LoweringTable &table);          // lower_pooling.cpp
void registerNormalizationLowering(LoweringTable &table);    // lower_normalization.cpp
void registerReductionLowering(LoweringTable &table);        // lower_reduction.cpp
void registerDataMovementLowering(LoweringTable &table);     // lower_data_movement.cpp
void registerIndexingLowering(LoweringTable &table);         // lower_indexing.cpp (the gathers)
void registerScatterLowering(LoweringTable &table);          // lower_indexing_scatter.cpp (ScatterElements, ScatterND, TensorScatter)
void registerResamplingLowering(LoweringTable &table);       // lower_resampling.cpp (Resize, GridSample)
void registerCreationLowering(LoweringTable &table);         // lower_creation.cpp (Dropout, EyeLike, OneHot)
void registerAttentionLowering(LoweringTable &table);        // lower_attention.cpp (Attention, RotaryEmbedding)
void registerRecurrentLowering(LoweringTable &table);        // lower_recurrent.cpp (RNN, GRU, LSTM)
void registerStatefulRecurrentLowering(LoweringTable &table); // lower_recurrent_stateful.cpp (CausalConvWithState, LinearAttention)
void registerLossLowering(LoweringTable &table);             // lower_loss.cpp
void registerQuantizationLowering(LoweringTable &table);     // lower_quantization.cpp
void registerQuantizedMatMulLowering(LoweringTable &table);  // lower_quantization_matmul.cpp (MatMulInteger, QLinearMatMul, DynamicQuantizeLinear)
void registerSignalLowering(LoweringTable &table);           // lower_signal.cpp (DFT, STFT)
void registerDetectionLowering(LoweringTable &table);        // lower_detection.cpp (RoiAlign)
void registerCountingLowering(LoweringTable &table);         // lower_counting.cpp (TfIdfVectorizer)

/// A group's buffers declared in a builder (its inputs, then its outputs, as lowerGroup orders
/// them): an accessor for each input and the buffer of each output.
struct GroupBuffers {
  std::map<const Value *, Accessor> accessors;
  std::map<const Value *, int> outputBuffers;
};
GroupBuffers declareGroupBuffers(const KernelGroup &group, KernelBuilder &builder);

/// The group's one node that `isCore` accepts, when every other node is injective (a prologue
/// or an epilogue); null when there is none, several, or another kind of node.
const Node *soleCoreNode(const KernelGroup &group, const std::function<bool(const Node &)> &isCore);

/// Lowers a group's nodes into the builder: injective nodes become accessors; the group's one
/// kernel node, if any, is handed to `emitKernel` with a context whose stores also compute and
/// store the group's epilogue (the injective nodes after it). Returns whether there was one.
bool lowerGroupNodes(const KernelGroup &group, KernelBuilder &builder, GroupBuffers &buffers,
                     const std::function<void(const RuleContext &)> &emitKernel);

/// The contraction a MatMul, Gemm or Conv node computes (lower_contraction.cpp), with its
/// variables declared in ctx.builder().
ContractionSpec describeContraction(const RuleContext &ctx);

// ---- Shared by the contraction and convolution families --------------------------------------

/// The variables of a contraction; b is the constant 0 when there is one batch.
struct ContractionVariables {
  ExprRef b, i, j, r;
};
/// Declares spec's variables (b, i, j, r, acc) in the builder (lower_contraction.cpp).
ContractionVariables declareVariables(KernelBuilder &builder, ContractionSpec &spec);
/// The naive kernel of a contraction: one parallel index per (b, i, j), a reduction loop over r
/// (lower_contraction.cpp).
void naiveContractionRule(const RuleContext &ctx);
/// Conv as an implicit GEMM (lower_convolution.cpp).
ContractionSpec describeConv(const RuleContext &ctx);

// ---- Index helpers ---------------------------------------------------------------------------

/// Row-major flat index of a multi-index over static dims.
ExprRef ravelIndex(const std::vector<ExprRef> &index, const std::vector<int64_t> &dims);
/// Multi-index of a flat index over static dims.
std::vector<ExprRef> unravelIndex(ExprRef flat, const std::vector<int64_t> &dims);
/// The index into an input of dims `inDims` that numpy-broadcasts to an output index.
std::vector<ExprRef> broadcastIndex(const std::vector<ExprRef> &outIndex,
                                    const std::vector<int64_t> &inDims);
/// The first element of input i (scalars given as rank 0 or as one-element tensors).
ExprRef firstElement(const RuleContext &ctx, int input);
/// A possibly negative axis normalised against a rank; UserError naming the node when out of range.
int64_t normalizedAxis(const Node &node, int64_t axis, int64_t rank);
/// The product of dims[begin, end).
int64_t productOf(const std::vector<int64_t> &dims, size_t begin = 0, size_t end = SIZE_MAX);
/// A constant in a compute type.
ExprRef typedConstant(DType type, double value);
/// An index clamped into [0, size), so that a load at it stays inside its tensor.
ExprRef clampIndex(ExprRef index, int64_t size);
/// The load of f32, f16 or bf16 that `value` reads through casts between those types (none, or
/// a chain of them); null when `value` is anything else. A window kernel that stages X itself
/// reads it through this (depthwise.cpp, pooling.cpp).
ExprRef floatLoadBeneathCasts(const ExprRef &value);
/// A data-derived index (a gather's, a scatter's): negative values count from the end; then
/// clamped into [0, size) (an out-of-range index is undefined in ONNX).
ExprRef dataIndex(ExprRef raw, int64_t size);
/// The constant data of input i as integers (none for an absent input); UserError naming the
/// node (and the graph inputs it depends on) when it is not constant.
std::vector<int64_t> constantInts(const RuleContext &ctx, int i, const char *what);
/// The injective rule of ops that keep the elements and change the shape (Reshape, Flatten,
/// Squeeze, Unsqueeze, Identity, Dropout's output).
ExprRef reshapeRule(const RuleContext &ctx, int output, const std::vector<ExprRef> &index);

// Arithmetic in an expression's own type.
inline ExprRef fadd(ExprRef a, ExprRef b) { return binary(BinaryOp::Add, a, b); }
inline ExprRef fsub(ExprRef a, ExprRef b) { return binary(BinaryOp::Sub, a, b); }
inline ExprRef fmul(ExprRef a, ExprRef b) { return binary(BinaryOp::Mul, a, b); }
inline ExprRef fdiv(ExprRef a, ExprRef b) { return binary(BinaryOp::Div, a, b); }
inline ExprRef fmax(ExprRef a, ExprRef b) { return binary(BinaryOp::Max, a, b); }
inline ExprRef fmin(ExprRef a, ExprRef b) { return binary(BinaryOp::Min, a, b); }

} // namespace sinter::codegen
