// The op table (ops.def) as C++: the kind enum, names, arity, fusion class, family and attribute
// schema.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sinter {

enum class OpKind : uint16_t {
#define OP(Name, minIn, maxIn, minOut, maxOut, fusion, family, attrs) Name,
#include "sinter/ir/ops.def"
};

inline constexpr int kNumOps = 0
#define OP(Name, minIn, maxIn, minOut, maxOut, fusion, family, attrs) +1
#include "sinter/ir/ops.def"
    ;

/// How an op fuses with its neighbours (DESIGN.md, "Passes").
enum class FusionClass : uint8_t { Elementwise, Reduction, Gemm, Convolution, DataMovement, Opaque };
std::string_view fusionClassName(FusionClass fusion);

/// The op families: each op's one home across shape inference, the reference and lowering (each
/// layer's files for a family are named after it: opFamilyName). Ordered as the layers register.
enum class OpFamily : uint8_t {
  Elementwise,   ///< unary math, activations, binary and variadic ops, Where, Clip, casts
  Contraction,   ///< MatMul, Gemm, Einsum, Det
  Convolution,   ///< Conv, ConvTranspose, DeformConv, Col2Im
  Pooling,       ///< the windowed and global pools, MaxUnpool
  Normalization, ///< batch, instance, group, layer, RMS, Lp, LRN, mean-variance
  Reduction,     ///< Reduce*, ArgMax/ArgMin, the softmax family, cumulative sums, TopK
  DataMovement,  ///< views and copies: reshapes, transposes, slices, pads, concatenation, ...
  Indexing,      ///< data-dependent gathers and scatters, Compress
  Resampling,    ///< Resize, GridSample, AffineGrid
  Creation,      ///< Shape, Size, ConstantOfShape, Range, EyeLike, OneHot, NonZero, Dropout
  Attention,     ///< Attention, RotaryEmbedding
  Recurrent,     ///< RNN, GRU, LSTM and the stateful sequence ops
  Loss,          ///< the training losses
  Quantization,  ///< (de)quantisation and integer matrix products
  Signal,        ///< DFT, STFT, the window functions, MelWeightMatrix
  Detection,     ///< RoiAlign, NonMaxSuppression
  Counting,      ///< Unique, TfIdfVectorizer
};
inline constexpr int kNumOpFamilies = int(OpFamily::Counting) + 1;
/// The family's file stem: "elementwise", "data_movement", ...
std::string_view opFamilyName(OpFamily family);

enum class AttrKind : uint8_t { Int, Float, String, Ints, Floats, Strings, Tensor };
std::string_view attrKindName(AttrKind kind);

struct AttrSchema {
  std::string name;
  AttrKind kind;
  bool required;
};

struct OpInfo {
  std::string_view name;
  int minInputs, maxInputs;   ///< maxInputs -1: variadic
  int minOutputs, maxOutputs; ///< maxOutputs -1: variadic
  FusionClass fusion;
  OpFamily family;
  std::vector<AttrSchema> attributes;

  /// The schema entry for an attribute name, or null when the op has no such attribute.
  const AttrSchema *findAttribute(std::string_view attribute) const;
};

const OpInfo &opInfo(OpKind kind);
inline std::string_view opName(OpKind kind) { return opInfo(kind).name; }
inline OpFamily opFamily(OpKind kind) { return opInfo(kind).family; }
std::optional<OpKind> opFromName(std::string_view name);

} // namespace sinter
