// Shape and type inference: the rule table, the checks common to every op (arity, required
// inputs, output size), and the helpers the family files share. The rules themselves live in
// infer_<family>.cpp.
#include "infer_rules.h"

#include <algorithm>
#include <limits>

namespace sinter {
namespace infer {

// ---- The table ------------------------------------------------------------------------------

void InferTable::add(OpKind kind, InferFn fn) {
  registrar_.admit(kind);
  SINTER_ASSERT(!rules_[static_cast<int>(kind)], "two inference rules for ", opName(kind));
  rules_[static_cast<int>(kind)] = fn;
}

const InferTable &inferTable() {
  static const InferTable table = [] {
    InferTable table;
    table.registerFamily(OpFamily::Elementwise, registerElementwiseInference);
    table.registerFamily(OpFamily::Contraction, registerContractionInference);
    table.registerFamily(OpFamily::Convolution, registerConvolutionInference);
    table.registerFamily(OpFamily::Pooling, registerPoolingInference);
    table.registerFamily(OpFamily::Normalization, registerNormalizationInference);
    table.registerFamily(OpFamily::Reduction, registerReductionInference);
    table.registerFamily(OpFamily::DataMovement, registerDataMovementInference);
    table.registerFamily(OpFamily::Indexing, registerIndexingInference);
    table.registerFamily(OpFamily::Resampling, registerResamplingInference);
    table.registerFamily(OpFamily::Creation, registerCreationInference);
    table.registerFamily(OpFamily::Attention, registerAttentionInference);
    table.registerFamily(OpFamily::Recurrent, registerRecurrentInference);
    table.registerFamily(OpFamily::Loss, registerLossInference);
    table.registerFamily(OpFamily::Quantization, registerQuantizationInference);
    table.registerFamily(OpFamily::Quantization, registerQuantizedMatMulInference);
    table.registerFamily(OpFamily::Signal, registerSignalInference);
    table.registerFamily(OpFamily::Detection, registerDetectionInference);
    table.registerFamily(OpFamily::Counting, registerCountingInference);
    for (int i = 0; i < kNumOps; ++i)
      SINTER_ASSERT(table.find(static_cast<OpKind>(i)), "no inference rule for ",
                    opName(static_cast<OpKind>(i)));
    return table;
  }();
  return table;
}

// ---- InferContext ---------------------------------------------------------------------------

const TensorType &InferContext::type(int i) const {
  const Value *value = node_.input(i);
  if (!value)
    fail("input ", i, " is missing");
  return value->type();
}

const Tensor *InferContext::constant(int i) const {
  const Value *value = node_.input(i);
  if (value && value->isConstant())
    return &value->constant();
  noteUnresolved(i);
  return nullptr;
}

std::string InferContext::describeInput(int i) const {
  const Value *value = node_.input(i);
  if (!value)
    return detail::concat("input ", i, " (absent)");
  return detail::concat("input ", i, " '", value->name(), "' (", value->type().str(), ")");
}

int InferContext::normalizeAxis(int64_t axis, int rank, const char *what) const {
  if (axis < -int64_t(rank) || axis >= rank)
    fail(what, " ", axis, " is out of range for rank ", rank, " (expected [", -rank, ", ",
         rank - 1, "])");
  return int(axis < 0 ? axis + rank : axis);
}

std::vector<int> InferContext::normalizeAxes(const std::vector<int64_t> &axes, int rank,
                                             const char *what) const {
  std::vector<int> result;
  std::vector<bool> seen(rank, false);
  for (int64_t axis : axes) {
    int normalized = normalizeAxis(axis, rank, what);
    if (seen[normalized])
      fail(what, " repeats axis ", normalized);
    seen[normalized] = true;
    result.push_back(normalized);
  }
  return result;
}

void InferContext::requireRankAtLeast(int i, int rank) const {
  if (this->rank(i) < rank)
    failInput(i, "has rank ", this->rank(i), "; ", node_.opName(), " needs rank >= ", rank);
}

void InferContext::requireRank(int i, int rank) const {
  if (this->rank(i) != rank)
    failInput(i, "has rank ", this->rank(i), "; ", node_.opName(), " needs rank ", rank);
}

void InferContext::requireSameDType(int i, int j) const {
  if (dtype(i) != dtype(j))
    fail(describeInput(j), " must have the same dtype as ", describeInput(i));
}

void InferContext::requireDType(int i, bool (*accept)(DType), const char *what) const {
  if (!accept(dtype(i)))
    failInput(i, "has dtype ", dtypeName(dtype(i)), "; ", node_.opName(), " needs ", what);
}

std::optional<std::vector<int64_t>> InferContext::constantInts(int i) const {
  auto values = integerValues(i);
  if (!values)
    return std::nullopt;
  std::vector<int64_t> ints;
  ints.reserve(values->size());
  for (const SymInt &value : *values) {
    if (!value.isConstant())
      return std::nullopt;
    ints.push_back(*value.value);
  }
  return ints;
}

SymInt SymInt::ofDim(const Dim &dim) {
  if (dim.isStatic())
    return constant(dim.value());
  return {std::nullopt, dim.isSymbol() ? dim.symbolName() : std::string()};
}

Dim SymInt::toDim() const {
  if (value)
    return *value >= 0 ? Dim(*value) : Dim::unknown();
  return symbol.empty() ? Dim::unknown() : Dim::symbol(symbol);
}

// ---- Broadcasting and dim arithmetic --------------------------------------------------------

namespace {

/// The broadcast of two dims, or nullopt when both are static, differ, and neither is 1.
std::optional<Dim> broadcastDim(const Dim &a, const Dim &b) {
  if (a == b)
    return a;
  if (a.isStatic() && a.value() == 1)
    return b;
  if (b.isStatic() && b.value() == 1)
    return a;
  if (a.isStatic() && b.isStatic())
    return std::nullopt;
  if (a.isStatic())
    return a;
  if (b.isStatic())
    return b;
  return Dim::unknown(); // two different symbols, or a symbol and an unknown
}

} // namespace

Shape broadcastShapes(const InferContext &ctx, const Shape &a, const Shape &b, const char *what) {
  size_t rank = std::max(a.size(), b.size());
  Shape result(rank);
  for (size_t i = 0; i < rank; ++i) {
    // Align to the right.
    Dim da = i + a.size() >= rank ? a[i + a.size() - rank] : Dim(1);
    Dim db = i + b.size() >= rank ? b[i + b.size() - rank] : Dim(1);
    auto dim = broadcastDim(da, db);
    if (!dim)
      ctx.fail(what, " do not broadcast: ", shapeStr(a), " and ", shapeStr(b), " differ in dim ",
               i, " of the result (", da.str(), " vs ", db.str(), ")");
    result[i] = *dim;
  }
  return result;
}

Shape broadcastInputs(const InferContext &ctx, const std::vector<int> &inputs) {
  Shape result = ctx.shape(inputs.front());
  for (size_t k = 1; k < inputs.size(); ++k) {
    std::string what = detail::concat("inputs ", inputs.front(), "..", inputs[k - 1], " and ",
                                      ctx.describeInput(inputs[k]));
    if (k == 1)
      what = detail::concat(ctx.describeInput(inputs[0]), " and ", ctx.describeInput(inputs[1]));
    result = broadcastShapes(ctx, result, ctx.shape(inputs[k]), what.c_str());
  }
  return result;
}

void requireUnidirectionalBroadcast(const InferContext &ctx, int from, const Shape &target) {
  const Shape &shape = ctx.shape(from);
  if (shape.size() > target.size())
    ctx.failInput(from, "has a higher rank than ", shapeStr(target),
                  ", so it cannot broadcast to it");
  size_t offset = target.size() - shape.size();
  for (size_t i = 0; i < shape.size(); ++i) {
    const Dim &dim = shape[i];
    const Dim &to = target[offset + i];
    if (dim.isStatic() && dim.value() != 1 && to.isStatic() && dim.value() != to.value())
      ctx.failInput(from, "does not broadcast to ", shapeStr(target), " (dim ", i, " is ",
                    dim.value(), ", expected 1 or ", to.value(), ")");
  }
}

Dim mergeDims(const InferContext &ctx, const Dim &a, const Dim &b, const std::string &what) {
  if (a.isStatic() && b.isStatic()) {
    if (a.value() != b.value())
      ctx.fail(what, " must be equal, but are ", a.value(), " and ", b.value());
    return a;
  }
  if (a.isStatic())
    return a;
  if (b.isStatic())
    return b;
  if (a.isSymbol())
    return a;
  return b;
}

int64_t checkedMul(const InferContext &ctx, int64_t a, int64_t b) {
  int64_t result;
  if (__builtin_mul_overflow(a, b, &result))
    ctx.fail("a dimension overflows int64 (", a, " * ", b, ")");
  return result;
}

int64_t checkedAdd(const InferContext &ctx, int64_t a, int64_t b) {
  int64_t result;
  if (__builtin_add_overflow(a, b, &result))
    ctx.fail("a dimension overflows int64 (", a, " + ", b, ")");
  return result;
}

Dim mulDims(const InferContext &ctx, const Dim &a, const Dim &b) {
  if (a.isStatic() && b.isStatic())
    return Dim(checkedMul(ctx, a.value(), b.value()));
  if (a.isStatic() && a.value() == 0)
    return a;
  if (b.isStatic() && b.value() == 0)
    return b;
  if (a.isStatic() && a.value() == 1)
    return b;
  if (b.isStatic() && b.value() == 1)
    return a;
  return Dim::unknown();
}

Dim addDims(const InferContext &ctx, const Dim &a, const Dim &b) {
  if (a.isStatic() && b.isStatic())
    return Dim(checkedAdd(ctx, a.value(), b.value()));
  if (a.isStatic() && a.value() == 0)
    return b;
  if (b.isStatic() && b.value() == 0)
    return a;
  return Dim::unknown();
}

Dim productOfDims(const InferContext &ctx, const Shape &shape, size_t begin, size_t end) {
  Dim product(1);
  for (size_t i = begin; i < end; ++i)
    product = mulDims(ctx, product, shape[i]);
  return product;
}

Dim nonNegativeDim(const InferContext &ctx, int64_t value, const char *what) {
  if (value < 0)
    ctx.fail(what, " is negative (", value, ")");
  return Dim(value);
}

Shape unknownShape(int rank) { return Shape(size_t(std::max(rank, 0)), Dim::unknown()); }

DType dtypeFromOnnxAttr(const InferContext &ctx, int64_t onnxType, const char *attribute) {
  std::optional<DType> dtype;
  if (onnxType >= std::numeric_limits<int>::min() && onnxType <= std::numeric_limits<int>::max())
    dtype = dtypeFromOnnx(int(onnxType));
  if (!dtype)
    ctx.fail("attribute '", attribute, "' names ONNX data type ", onnxType,
             ", which sinter does not support");
  return *dtype;
}

bool isNumeric(DType type) { return type != DType::Bool; }
bool isBool(DType type) { return type == DType::Bool; }
bool isFloatType(DType type) { return isFloat(type); }
bool isIntegerType(DType type) { return isInteger(type); }
bool isIndexType(DType type) { return type == DType::Int32 || type == DType::Int64; }
bool isUnsignedType(DType type) { return isInteger(type) && !isSigned(type); }

void requireScalar(const InferContext &ctx, int i, const char *what) {
  auto count = elementCount(ctx.shape(i));
  if (ctx.rank(i) > 1 || (count && *count != 1))
    ctx.failInput(i, "(", what, ") must be a scalar");
}

Dim divideBy(const InferContext &ctx, const Dim &dim, int64_t heads, const char *what) {
  if (!dim.isStatic())
    return Dim::unknown();
  if (heads <= 0 || dim.value() % heads != 0)
    ctx.fail(what, " ", dim.value(), " is not a multiple of the head count ", heads);
  return Dim(dim.value() / heads);
}

// ---- Sliding windows ------------------------------------------------------------------------

Window readWindow(const InferContext &ctx, int weight) {
  size_t spatial = size_t(ctx.rank(0) - 2);
  Window window;
  window.attributes = windowAttributes(ctx.node(), spatial);
  if (ctx.node().hasAttr("kernel_shape")) {
    window.kernel = spatialAttribute(ctx.node(), "kernel_shape", spatial, 1, 1);
    if (weight >= 0)
      for (size_t i = 0; i < spatial; ++i) {
        const Dim &dim = ctx.shape(weight)[2 + i];
        if (dim.isStatic() && dim.value() != window.kernel[i])
          ctx.fail("attribute 'kernel_shape' ", shapeStr(shapeOf(window.kernel)),
                   " does not match the spatial dims of ", ctx.describeInput(weight));
      }
  } else if (weight >= 0) {
    for (size_t i = 0; i < spatial; ++i) {
      const Dim &dim = ctx.shape(weight)[2 + i];
      if (dim.isStatic() && dim.value() == 0)
        ctx.failInput(weight, "has a zero-sized kernel dim");
      window.kernel.push_back(dim.isStatic() ? dim.value() : -1);
    }
  } else {
    ctx.fail("attribute 'kernel_shape' is required");
  }
  return window;
}

Dim windowOutput(const InferContext &ctx, const Window &window, const Dim &input, size_t i, bool transposed) {
  if (!input.isStatic() || window.kernel[i] < 0)
    return Dim::unknown();
  WindowExtent extent =
      transposed ? transposedWindowExtent(ctx.node(), window.attributes, i, input.value(), window.kernel[i])
                 : windowExtent(ctx.node(), window.attributes, i, input.value(), window.kernel[i]);
  return Dim(extent.output);
}

} // namespace infer

// ---- Public entry points --------------------------------------------------------------------

std::vector<TensorType> inferOutputTypes(const Node &node) {
  using namespace infer;
  const OpInfo &info = node.info();
  InferContext ctx(node);
  if (info.maxInputs >= 0 && node.numInputs() > info.maxInputs)
    ctx.fail("has ", node.numInputs(), " inputs; ", info.name, " takes at most ", info.maxInputs);
  for (int i = 0; i < info.minInputs; ++i)
    if (!node.input(i))
      ctx.fail("input ", i, " is required but ", i < node.numInputs() ? "absent" : "missing");
  if (node.numOutputs() < info.minOutputs ||
      (info.maxOutputs >= 0 && node.numOutputs() > info.maxOutputs))
    ctx.fail("has ", node.numOutputs(), " outputs; ", info.name, " has ", info.minOutputs,
             info.maxOutputs < 0 ? " or more" : detail::concat(" to ", info.maxOutputs));

  InferFn rule = inferTable().find(node.kind());
  std::vector<TensorType> types = rule(ctx);
  SINTER_ASSERT(int(types.size()) == node.numOutputs(), "inference rule for ", info.name,
                " gave ", types.size(), " types for ", node.numOutputs(), " outputs");

  for (size_t i = 0; i < types.size(); ++i) {
    // Every output must be addressable in bytes: the static part of its shape may not overflow.
    int64_t count = dtypeSize(types[i].dtype);
    for (Dim &dim : types[i].shape) {
      if (!dim.isStatic() && !dim.isSymbol())
        dim = Dim::unknown(); // one spelling of "unknown", whatever an input carried
      if (dim.isStatic() && __builtin_mul_overflow(count, dim.value(), &count))
        ctx.fail("output ", i, " of shape ", shapeStr(types[i].shape), " is too large");
    }
  }
  return types;
}

void inferNode(Node &node) {
  std::vector<TensorType> types = inferOutputTypes(node);
  for (int i = 0; i < node.numOutputs(); ++i)
    node.output(i)->setType(std::move(types[i]));
}

void inferGraph(Graph &graph) {
  for (const auto &node : graph.nodes())
    inferNode(*node);
}

std::vector<int> unresolvedValueInputs(const Node &node) {
  using namespace infer;
  std::set<int> unresolved;
  InferContext ctx(node, &unresolved);
  try {
    inferTable().find(node.kind())(ctx);
  } catch (const UserError &) {
    // What the rule asked for before it gave up still names the inputs it needed.
  }
  return {unresolved.begin(), unresolved.end()};
}

} // namespace sinter
