// Private to shape inference: the rule table, the context a rule sees, and helpers the family
// files share (symbolic broadcasting, checked dim arithmetic, integer values of shape-like inputs).
//
// Each op family registers its rules explicitly (one function per file, called from infer.cpp),
// not through static initialisers, which static linking would drop:
//
//   void registerElementwiseInference(InferTable &table) {
//     table.add(OpKind::Relu, [](const InferContext &ctx) -> Types {
//       return {ctx.type(0)};
//     });
//   }
//
// A rule returns one TensorType per node output. It reports invalid inputs with ctx.fail() or
// ctx.failInput(), which throw a UserError naming the node, the op and the input.
#pragma once

#include "sinter/ir/graph.h"
#include "sinter/ir/infer.h"
#include "sinter/ir/op_attributes.h"
#include "sinter/ir/op_families.h"
#include "sinter/support/error.h"

#include <array>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace sinter::infer {

using Types = std::vector<TensorType>;

/// One element of an integer tensor as inference knows it: a constant, the value of a named dim
/// (from Shape of a symbolic tensor), or unknown.
struct SymInt {
  std::optional<int64_t> value; ///< set when the element is a known constant
  std::string symbol;           ///< when not constant: the symbol it equals, or empty if unknown

  static SymInt constant(int64_t v) { return {v, {}}; }
  static SymInt unknown() { return {}; }
  /// The value of a dim: its size when static, its symbol when symbolic.
  static SymInt ofDim(const Dim &dim);
  bool isConstant() const { return value.has_value(); }
  /// As a dim: a non-negative constant, a symbol, or unknown.
  Dim toDim() const;
  bool operator==(const SymInt &) const = default;
};

/// What a rule sees: the node, its inputs' types and (where known) values.
class InferContext {
public:
  explicit InferContext(const Node &node) : node_(node) {}
  /// `unresolved` collects the inputs whose data the rule asked for and did not get (not
  /// constant, or not traceable): what a data-dependent output shape depends on.
  InferContext(const Node &node, std::set<int> *unresolved) : node_(node), unresolved_(unresolved) {}

  const Node &node() const { return node_; }
  OpKind kind() const { return node_.kind(); }
  int numInputs() const { return node_.numInputs(); }
  int numOutputs() const { return node_.numOutputs(); }
  /// Whether input i is present (optional inputs may be absent).
  bool hasInput(int i) const { return node_.input(i) != nullptr; }
  /// Input i's type; a missing input is a UserError.
  const TensorType &type(int i) const;
  const Shape &shape(int i) const { return type(i).shape; }
  DType dtype(int i) const { return type(i).dtype; }
  int rank(int i) const { return type(i).rank(); }
  /// Input i's data when it is a constant, else null.
  const Tensor *constant(int i) const;

  /// "input 1 'W' (f32[64,3,7,7])" for messages.
  std::string describeInput(int i) const;

  /// Throws a UserError: "<node>: <message>".
  template <typename... Args> [[noreturn]] void fail(Args &&...args) const {
    userError(node_.describe(), ": ", std::forward<Args>(args)...);
  }
  /// Throws a UserError about input i: "<node>: input i 'x' (f32[..]) <message>".
  template <typename... Args> [[noreturn]] void failInput(int i, Args &&...args) const {
    userError(node_.describe(), ": ", describeInput(i), " ", std::forward<Args>(args)...);
  }

  /// Normalises an axis in [-rank, rank) (the attribute or input named `what`); UserError if out
  /// of range.
  int normalizeAxis(int64_t axis, int rank, const char *what = "axis") const;
  /// Normalises a list of axes; UserError on an out-of-range or repeated axis.
  std::vector<int> normalizeAxes(const std::vector<int64_t> &axes, int rank,
                                 const char *what = "axes") const;

  /// Requires input i to be present with at least / exactly the given rank.
  void requireRankAtLeast(int i, int rank) const;
  void requireRank(int i, int rank) const;
  /// Requires inputs i and j to have the same dtype.
  void requireSameDType(int i, int j) const;
  /// Requires input i's dtype to satisfy `accept`; `what` names the allowed types ("a float type").
  void requireDType(int i, bool (*accept)(DType), const char *what) const;

  /// The values of input i, an integer tensor of rank 0 or 1, as far as they can be traced through
  /// constants and shape arithmetic (Shape, Concat, Gather, Slice, Squeeze, ...). nullopt when even
  /// the element count is unknown. Elements that cannot be traced are SymInt::unknown().
  std::optional<std::vector<SymInt>> integerValues(int i) const;
  /// integerValues(i) when every element is a known constant, else nullopt.
  std::optional<std::vector<int64_t>> constantInts(int i) const;

private:
  void noteUnresolved(int i) const {
    if (unresolved_ && node_.input(i))
      unresolved_->insert(i);
  }
  const Node &node_;
  std::set<int> *unresolved_ = nullptr;
};

using InferFn = Types (*)(const InferContext &ctx);

class InferTable {
public:
  /// Runs a family file's registration; it may add only that family's ops (op_families.h).
  void registerFamily(OpFamily family, void (*registerRules)(InferTable &)) { registrar_.run(*this, family, registerRules); }
  /// Registers the rule for an op; registering one op twice is an internal error.
  void add(OpKind kind, InferFn fn);
  InferFn find(OpKind kind) const { return rules_[static_cast<int>(kind)]; }

private:
  std::array<InferFn, kNumOps> rules_{};
  FamilyRegistrar registrar_{"inference"};
};

/// The table with every family registered (and, checked once, a rule for every op).
const InferTable &inferTable();

// One per family (OpFamily), in infer_<family>*.cpp; each registers only its family's ops.
void registerElementwiseInference(InferTable &table);   // infer_elementwise.cpp
void registerContractionInference(InferTable &table);   // infer_contraction.cpp
void registerConvolutionInference(InferTable &table);   // infer_convolution.cpp
void registerPoolingInference(InferTable &table);       // infer_pooling.cpp
void registerNormalizationInference(InferTable &table); // infer_normalization.cpp
void registerReductionInference(InferTable &table);     // infer_reduction.cpp
void registerDataMovementInference(InferTable &table);  // infer_data_movement.cpp
void registerIndexingInference(InferTable &table);      // infer_indexing.cpp
void registerResamplingInference(InferTable &table);    // infer_resampling.cpp
void registerCreationInference(InferTable &table);      // infer_creation.cpp
void registerAttentionInference(InferTable &table);     // infer_attention.cpp
void registerRecurrentInference(InferTable &table);     // infer_recurrent.cpp
void registerLossInference(InferTable &table);          // infer_loss.cpp
void registerQuantizationInference(InferTable &table);  // infer_quantization.cpp
void registerQuantizedMatMulInference(InferTable &table); // infer_quantization_matmul.cpp
void registerSignalInference(InferTable &table);        // infer_signal.cpp
void registerDetectionInference(InferTable &table);     // infer_detection.cpp
void registerCountingInference(InferTable &table);      // infer_counting.cpp

// ---- Shared helpers (infer.cpp) -------------------------------------------------------------

/// Numpy (multidirectional) broadcast of the shapes of the given inputs, with symbolic dims: a
/// static 1 yields to anything; equal dims stay; a static n > 1 beats a symbol (which must be 1
/// or n); differing symbols give an unknown dim. Static dims that differ and are not 1 are a
/// UserError naming both inputs.
Shape broadcastInputs(const InferContext &ctx, const std::vector<int> &inputs);
/// Broadcast of two shapes; `what` describes them for the error message.
Shape broadcastShapes(const InferContext &ctx, const Shape &a, const Shape &b, const char *what);
/// Checks that input `from` broadcasts to `target` without changing it (ONNX's unidirectional
/// broadcasting, e.g. PRelu's slope, Gemm's C).
void requireUnidirectionalBroadcast(const InferContext &ctx, int from, const Shape &target);

/// Two dims that must be equal (MatMul's K, Concat's other dims): the more precise of the two;
/// UserError when both are static and differ. `what` says which dims these are.
Dim mergeDims(const InferContext &ctx, const Dim &a, const Dim &b, const std::string &what);

/// Checked int64 arithmetic; overflow is a UserError naming the node.
int64_t checkedMul(const InferContext &ctx, int64_t a, int64_t b);
int64_t checkedAdd(const InferContext &ctx, int64_t a, int64_t b);
/// Dim arithmetic: static when both are; a symbol times 1 (or plus 0) keeps the symbol; else
/// unknown.
Dim mulDims(const InferContext &ctx, const Dim &a, const Dim &b);
Dim addDims(const InferContext &ctx, const Dim &a, const Dim &b);
/// Product of dims [begin, end) of a shape.
Dim productOfDims(const InferContext &ctx, const Shape &shape, size_t begin, size_t end);
/// A static dim from an int64 that must not be negative (`what` names it in the error).
Dim nonNegativeDim(const InferContext &ctx, int64_t value, const char *what);

/// Where ONNX's Slice starts on an axis of size `dim`, and how many elements it takes, after
/// negative indices are wrapped and starts/ends clamped (step must not be 0).
struct SliceBounds {
  int64_t start;
  int64_t count;
};
SliceBounds sliceBounds(int64_t dim, int64_t start, int64_t end, int64_t step);

/// The length of an integer Range, max(ceil((limit - start) / delta), 0); nullopt when delta is
/// zero or the length overflows int64.
std::optional<int64_t> integerRangeLength(int64_t start, int64_t limit, int64_t delta);

/// A shape of `rank` unknown dims.
Shape unknownShape(int rank);

/// The dtype for an ONNX TensorProto.DataType number in attribute `attribute`; UserError when
/// sinter has no such type.
DType dtypeFromOnnxAttr(const InferContext &ctx, int64_t onnxType, const char *attribute);

/// Dtype classes for requireDType.
bool isNumeric(DType type);     ///< anything but bool
bool isBool(DType type);
bool isFloatType(DType type);   ///< f16, bf16, f32, f64
bool isIntegerType(DType type); ///< signed or unsigned integers
bool isIndexType(DType type);   ///< i32 or i64
bool isUnsignedType(DType type);

/// Input i must hold one element (rank 0, or rank 1 of length 1).
void requireScalar(const InferContext &ctx, int i, const char *what);

/// dim / heads when static and divisible (an attention or linear-attention hidden size split into
/// heads); unknown when not static; a UserError when static and not divisible.
Dim divideBy(const InferContext &ctx, const Dim &dim, int64_t heads, const char *what);

/// A sliding window over the spatial dims (all but the first two) of Conv, ConvTranspose or a
/// pool: its attributes, decoded as the reference and lowering decode them, and its kernel as far
/// as it is known.
struct Window {
  std::vector<int64_t> kernel; ///< -1 where the kernel dim is not static
  WindowAttributes attributes;
};

/// Reads the window for a node whose input 0 is [N, C, spatial...]. The kernel comes from
/// kernel_shape, or from `weight`'s dims 2.. when that attribute is absent (weight -1: a pool).
Window readWindow(const InferContext &ctx, int weight);

/// The output extent of spatial dim i (windowExtent, or transposedWindowExtent for
/// ConvTranspose) where the input's extent and the kernel's are static; unknown otherwise.
Dim windowOutput(const InferContext &ctx, const Window &window, const Dim &input, size_t i,
                 bool transposed = false);

} // namespace sinter::infer
