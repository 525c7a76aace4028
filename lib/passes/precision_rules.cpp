#include "precision_rules.h"

#include "sinter/support/error.h"

#include <array>
#include <initializer_list>

namespace sinter::passes {
namespace {

using enum PrecisionClass;

constexpr uint32_t kAllInputs = ~0u;

constexpr uint32_t inputs(std::initializer_list<int> indices) {
  uint32_t bits = 0;
  for (int index : indices)
    bits |= 1u << index;
  return bits;
}

struct Entry {
  OpKind kind;
  PrecisionClass precision;
  uint32_t dataInputs;
};

// clang-format off
constexpr Entry kTable[] = {
    // Arithmetic and activations whose results stay within the range of their inputs (or of the
    // f16 range for any sensible model): computed in f32 in the kernel, stored reduced.
    {OpKind::Abs, Reduced, kAllInputs}, {OpKind::Neg, Reduced, kAllInputs},
    {OpKind::Relu, Reduced, kAllInputs}, {OpKind::Sigmoid, Reduced, kAllInputs},
    {OpKind::Tanh, Reduced, kAllInputs}, {OpKind::Erf, Reduced, kAllInputs},
    {OpKind::Sqrt, Reduced, kAllInputs}, {OpKind::Sign, Reduced, kAllInputs},
    {OpKind::Floor, Reduced, kAllInputs}, {OpKind::Ceil, Reduced, kAllInputs},
    {OpKind::Round, Reduced, kAllInputs}, {OpKind::Mish, Reduced, kAllInputs},
    {OpKind::Softplus, Reduced, kAllInputs}, {OpKind::Softsign, Reduced, kAllInputs},
    {OpKind::Celu, Reduced, kAllInputs}, {OpKind::Elu, Reduced, kAllInputs},
    {OpKind::Gelu, Reduced, kAllInputs}, {OpKind::HardSigmoid, Reduced, kAllInputs},
    {OpKind::HardSwish, Reduced, kAllInputs}, {OpKind::LeakyRelu, Reduced, kAllInputs},
    {OpKind::Selu, Reduced, kAllInputs},
    {OpKind::Swish, Reduced, kAllInputs}, {OpKind::ThresholdedRelu, Reduced, kAllInputs},
    {OpKind::Add, Reduced, kAllInputs}, {OpKind::Sub, Reduced, kAllInputs},
    {OpKind::Mul, Reduced, kAllInputs}, {OpKind::Div, Reduced, kAllInputs},
    {OpKind::Min, Reduced, kAllInputs}, {OpKind::Max, Reduced, kAllInputs},
    {OpKind::Mean, Reduced, kAllInputs}, {OpKind::Sum, Reduced, kAllInputs},
    {OpKind::PRelu, Reduced, kAllInputs}, {OpKind::Clip, Reduced, kAllInputs},
    {OpKind::SwiGLU, Reduced, kAllInputs},
    // Contractions and pooling: f32 accumulators in every backend, one rounding per output.
    {OpKind::MatMul, Reduced, kAllInputs}, {OpKind::Gemm, Reduced, kAllInputs},
    {OpKind::Conv, Reduced, kAllInputs}, {OpKind::ConvTranspose, Reduced, kAllInputs},
    {OpKind::Attention, Reduced, inputs({0, 1, 2})},
    {OpKind::AveragePool, Reduced, kAllInputs}, {OpKind::MaxPool, Reduced, kAllInputs},
    {OpKind::GlobalAveragePool, Reduced, kAllInputs}, {OpKind::GlobalMaxPool, Reduced, kAllInputs},
    // Interpolation: X is data; roi and scales are parameters and keep their type.
    {OpKind::Resize, Reduced, inputs({0})},

    // Data movement and selection: no arithmetic, so no rounding of its own.
    {OpKind::Identity, Follow, inputs({0})}, {OpKind::Reshape, Follow, inputs({0})},
    {OpKind::Flatten, Follow, inputs({0})}, {OpKind::Squeeze, Follow, inputs({0})},
    {OpKind::Unsqueeze, Follow, inputs({0})}, {OpKind::Transpose, Follow, inputs({0})},
    {OpKind::Slice, Follow, inputs({0})}, {OpKind::Gather, Follow, inputs({0})},
    {OpKind::GatherElements, Follow, inputs({0})}, {OpKind::GatherND, Follow, inputs({0})},
    {OpKind::Concat, Follow, kAllInputs}, {OpKind::Split, Follow, inputs({0})},
    {OpKind::Expand, Follow, inputs({0})}, {OpKind::Tile, Follow, inputs({0})},
    {OpKind::Pad, Follow, inputs({0, 2})}, {OpKind::DepthToSpace, Follow, inputs({0})},
    {OpKind::SpaceToDepth, Follow, inputs({0})}, {OpKind::Trilu, Follow, inputs({0})},
    {OpKind::CenterCropPad, Follow, inputs({0})}, {OpKind::ReverseSequence, Follow, inputs({0})},
    {OpKind::Dropout, Follow, inputs({0})}, {OpKind::Where, Follow, inputs({1, 2})},
    {OpKind::ReduceMax, Follow, inputs({0})}, {OpKind::ReduceMin, Follow, inputs({0})},

    // Not listed, so f32: Shrink (ONNX allows it no bf16). Results outside the f16 range:
    {OpKind::Log, Float32, kAllInputs}, {OpKind::Pow, Float32, kAllInputs},
    {OpKind::Reciprocal, Float32, kAllInputs},
    // Reductions that sum or multiply: f32 accumulators, and results kept in f32.
    {OpKind::ReduceSum, Float32, kAllInputs}, {OpKind::ReduceSumSquare, Float32, kAllInputs},
    {OpKind::ReduceMean, Float32, kAllInputs}, {OpKind::ReduceProd, Float32, kAllInputs},
    {OpKind::ReduceL1, Float32, kAllInputs}, {OpKind::ReduceL2, Float32, kAllInputs},
    {OpKind::ReduceLogSum, Float32, kAllInputs}, {OpKind::ReduceLogSumExp, Float32, kAllInputs},
    {OpKind::CumSum, Float32, kAllInputs}, {OpKind::CumProd, Float32, kAllInputs},
    // Normalisations without a mean to subtract: rounding the input is relative, harmless.
    {OpKind::RMSNormalization, Float32, kAllInputs},
    {OpKind::LpNormalization, Float32, kAllInputs}, {OpKind::LRN, Float32, kAllInputs},

    // Statistics that subtract a mean (cancellation); softmax logits and the arguments of Exp,
    // Sinh and Cosh (an absolute error in the argument is a relative error in the result, and
    // their results leave the f16 range); the angles of Sin, Cos and Tan (an f16 angle of 1000
    // is off by up to 0.25).
    {OpKind::Exp, Float32Inputs, kAllInputs}, {OpKind::Sinh, Float32Inputs, kAllInputs},
    {OpKind::Cosh, Float32Inputs, kAllInputs}, {OpKind::Sin, Float32Inputs, kAllInputs},
    {OpKind::Cos, Float32Inputs, kAllInputs}, {OpKind::Tan, Float32Inputs, kAllInputs},
    {OpKind::Softmax, Float32Inputs, kAllInputs}, {OpKind::LogSoftmax, Float32Inputs, kAllInputs},
    {OpKind::LayerNormalization, Float32Inputs, kAllInputs},
    {OpKind::GroupNormalization, Float32Inputs, kAllInputs},
    {OpKind::InstanceNormalization, Float32Inputs, kAllInputs},
    {OpKind::BatchNormalization, Float32Inputs, kAllInputs},
    {OpKind::MeanVarianceNormalization, Float32Inputs, kAllInputs},
    // Indices, shapes and decisions.
    {OpKind::ArgMax, Float32Inputs, kAllInputs}, {OpKind::ArgMin, Float32Inputs, kAllInputs},
    {OpKind::TopK, Float32Inputs, kAllInputs}, {OpKind::Hardmax, Float32Inputs, kAllInputs},
    {OpKind::NonZero, Float32Inputs, kAllInputs},
    {OpKind::NonMaxSuppression, Float32Inputs, kAllInputs},
    {OpKind::Equal, Float32Inputs, kAllInputs}, {OpKind::Less, Float32Inputs, kAllInputs},
    {OpKind::LessOrEqual, Float32Inputs, kAllInputs}, {OpKind::Greater, Float32Inputs, kAllInputs},
    {OpKind::GreaterOrEqual, Float32Inputs, kAllInputs},
    {OpKind::IsNaN, Float32Inputs, kAllInputs}, {OpKind::IsInf, Float32Inputs, kAllInputs},
    {OpKind::Cast, Float32Inputs, kAllInputs},

    // The shape alone.
    {OpKind::Shape, Agnostic, 0}, {OpKind::Size, Agnostic, 0},
};
// clang-format on

std::array<PrecisionRule, kNumOps> buildTable() {
  std::array<PrecisionRule, kNumOps> table;
  std::array<bool, kNumOps> listed{};
  table.fill(PrecisionRule{PrecisionClass::Float32, kAllInputs});
  for (const Entry &entry : kTable) {
    SINTER_ASSERT(!listed[size_t(entry.kind)], "the precision table lists ", opName(entry.kind), " twice");
    listed[size_t(entry.kind)] = true;
    table[size_t(entry.kind)] = {entry.precision, entry.dataInputs};
  }
  return table;
}

} // namespace

const PrecisionRule &precisionRule(OpKind kind) {
  static const std::array<PrecisionRule, kNumOps> table = buildTable();
  return table[size_t(kind)];
}

bool subtractsMean(OpKind kind) {
  // The table's normalisations under "Statistics that subtract a mean".
  return kind == OpKind::LayerNormalization || kind == OpKind::GroupNormalization ||
         kind == OpKind::InstanceNormalization || kind == OpKind::BatchNormalization ||
         kind == OpKind::MeanVarianceNormalization;
}

} // namespace sinter::passes
