// The values of small integer tensors, traced through the graph for shape inference.
//
// Exporters rarely give Reshape or Expand a constant shape: they compute it, e.g.
// Concat(Gather(Shape(x), 0), [-1]). Tracing such chains back to Shape of a typed value lets
// inference keep symbolic dims (Reshape to [batch, 768] rather than [?, 768]). A value that
// cannot be traced still has a known element count when its own shape is static, which fixes
// the rank of the result. Tracing reads only the graph, so it is deterministic and idempotent.
#include "infer_rules.h"

#include <algorithm>

namespace sinter::infer {
namespace {

using Values = std::vector<SymInt>;

constexpr int kMaxDepth = 24;
constexpr int64_t kMaxElements = 1 << 16;

std::optional<Values> trace(const Value *value, int depth);

/// Element count from the value's type alone: every element unknown.
std::optional<Values> fromType(const Value *value) {
  auto count = elementCount(value->shape());
  if (!count || *count > kMaxElements)
    return std::nullopt;
  return Values(size_t(*count), SymInt::unknown());
}

std::optional<Values> fromConstant(const Tensor &tensor) {
  if (tensor.elementCount() > kMaxElements)
    return std::nullopt;
  Values values;
  values.reserve(size_t(tensor.elementCount()));
  for (int64_t i = 0; i < tensor.elementCount(); ++i) {
    if (isFloat(tensor.dtype())) {
      double d = tensor.getDouble(i);
      // Shape data in floats is unusual; keep only exactly integral values.
      if (d == double(int64_t(d)) && d > -9.2e18 && d < 9.2e18)
        values.push_back(SymInt::constant(int64_t(d)));
      else
        values.push_back(SymInt::unknown());
    } else {
      values.push_back(SymInt::constant(tensor.getInt(i)));
    }
  }
  return values;
}

/// Shape(x) with start/end, clamped as ONNX does.
Values traceShape(const Node &node) {
  const Shape &shape = node.input(0)->shape();
  DimRange range = shapeRange(node, int64_t(shape.size()));
  Values values;
  for (int64_t i = range.start; i < range.end; ++i)
    values.push_back(SymInt::ofDim(shape[i]));
  return values;
}

/// Integer Add/Sub/Mul/Div of two traced vectors, one of which may have a single element.
std::optional<Values> traceArithmetic(const Node &node, int depth) {
  if (!isInteger(node.input(0)->dtype()))
    return std::nullopt;
  auto a = trace(node.input(0), depth + 1);
  auto b = trace(node.input(1), depth + 1);
  if (!a || !b || a->empty() || b->empty())
    return std::nullopt;
  if (a->size() != b->size() && a->size() != 1 && b->size() != 1)
    return std::nullopt;
  size_t count = std::max(a->size(), b->size());
  Values result;
  for (size_t i = 0; i < count; ++i) {
    const SymInt &x = (*a)[a->size() == 1 ? 0 : i];
    const SymInt &y = (*b)[b->size() == 1 ? 0 : i];
    SymInt out = SymInt::unknown();
    if (x.isConstant() && y.isConstant()) {
      int64_t u = *x.value, v = *y.value, r = 0;
      bool ok = true;
      switch (node.kind()) {
      case OpKind::Add: ok = !__builtin_add_overflow(u, v, &r); break;
      case OpKind::Sub: ok = !__builtin_sub_overflow(u, v, &r); break;
      case OpKind::Mul: ok = !__builtin_mul_overflow(u, v, &r); break;
      default: // Div truncates toward zero
        ok = v != 0 && !(u == INT64_MIN && v == -1);
        r = ok ? u / v : 0;
      }
      if (ok)
        out = SymInt::constant(r);
    } else {
      // x * 1, x / 1, x + 0, x - 0 keep x's symbol.
      bool identity = y.isConstant() && ((*y.value == 1 && (node.kind() == OpKind::Mul ||
                                                             node.kind() == OpKind::Div)) ||
                                         (*y.value == 0 && (node.kind() == OpKind::Add ||
                                                             node.kind() == OpKind::Sub)));
      bool identityLeft = x.isConstant() && ((*x.value == 1 && node.kind() == OpKind::Mul) ||
                                             (*x.value == 0 && node.kind() == OpKind::Add));
      if (identity)
        out = x;
      else if (identityLeft)
        out = y;
    }
    result.push_back(out);
  }
  return result;
}

std::optional<Values> traceGather(const Node &node, int depth) {
  if (node.attrInt("axis", 0) != 0 || node.input(0)->rank() != 1)
    return std::nullopt;
  auto data = trace(node.input(0), depth + 1);
  auto indices = trace(node.input(1), depth + 1);
  if (!data || !indices)
    return std::nullopt;
  int64_t size = int64_t(data->size());
  Values result;
  for (const SymInt &index : *indices) {
    if (!index.isConstant())
      return std::nullopt;
    int64_t i = *index.value < 0 ? *index.value + size : *index.value;
    if (i < 0 || i >= size)
      return std::nullopt; // the Gather rule reports the bad index
    result.push_back((*data)[size_t(i)]);
  }
  return result;
}

std::optional<Values> traceSlice(const Node &node, int depth) {
  if (node.input(0)->rank() != 1)
    return std::nullopt;
  auto data = trace(node.input(0), depth + 1);
  if (!data)
    return std::nullopt;
  auto constantOf = [&](int i) -> std::optional<std::vector<int64_t>> {
    if (!node.input(i))
      return std::vector<int64_t>{};
    auto values = trace(node.input(i), depth + 1);
    if (!values)
      return std::nullopt;
    std::vector<int64_t> ints;
    for (const SymInt &value : *values) {
      if (!value.isConstant())
        return std::nullopt;
      ints.push_back(*value.value);
    }
    return ints;
  };
  auto starts = constantOf(1), ends = constantOf(2), axes = constantOf(3), steps = constantOf(4);
  if (!starts || !ends || !axes || !steps || starts->size() != 1 || ends->size() != 1)
    return std::nullopt;
  if (!axes->empty() && (axes->size() != 1 || ((*axes)[0] != 0 && (*axes)[0] != -1)))
    return std::nullopt;
  int64_t step = steps->empty() ? 1 : (*steps)[0];
  if (steps->size() > 1 || step == 0)
    return std::nullopt;
  SliceBounds bounds = sliceBounds(int64_t(data->size()), (*starts)[0], (*ends)[0], step);
  Values result;
  for (int64_t k = 0; k < bounds.count; ++k)
    result.push_back((*data)[size_t(bounds.start + k * step)]);
  return result;
}

/// Range over traced integer scalars: its elements, when all three are constants.
std::optional<Values> traceRange(const Node &node, int depth) {
  if (!isInteger(node.input(0)->dtype()))
    return std::nullopt;
  int64_t bounds[3];
  for (int i = 0; i < 3; ++i) {
    auto values = trace(node.input(i), depth + 1);
    if (!values || values->size() != 1 || !(*values)[0].isConstant())
      return std::nullopt;
    bounds[i] = *(*values)[0].value;
  }
  auto count = integerRangeLength(bounds[0], bounds[1], bounds[2]);
  if (!count || *count > kMaxElements)
    return std::nullopt;
  Values result;
  for (int64_t k = 0; k < *count; ++k)
    result.push_back(SymInt::constant(bounds[0] + k * bounds[2]));
  return result;
}

/// ConstantOfShape with a traced constant shape: its value repeated.
std::optional<Values> traceConstantOfShape(const Node &node, int depth) {
  auto shape = trace(node.input(0), depth + 1);
  if (!shape)
    return std::nullopt;
  int64_t count = 1;
  for (const SymInt &dim : *shape)
    if (!dim.isConstant() || *dim.value < 0 || __builtin_mul_overflow(count, *dim.value, &count) ||
        count > kMaxElements)
      return std::nullopt;
  SymInt element = SymInt::constant(0);
  if (const Tensor *value = node.attrTensor("value"); value && value->elementCount() == 1) {
    auto values = fromConstant(*value);
    if (!values)
      return std::nullopt;
    element = (*values)[0];
  }
  return Values(size_t(count), element);
}

std::optional<Values> traceConcat(const Node &node, int depth) {
  Values result;
  for (const Value *input : node.inputs()) {
    if (!input || input->rank() != 1)
      return std::nullopt;
    auto values = trace(input, depth + 1);
    if (!values)
      return std::nullopt;
    result.insert(result.end(), values->begin(), values->end());
  }
  return result;
}

std::optional<Values> traceNode(const Node &node, int outputIndex, int depth) {
  if (outputIndex != 0)
    return std::nullopt;
  switch (node.kind()) {
  case OpKind::Shape:
    return traceShape(node);
  case OpKind::Size: {
    auto count = elementCount(node.input(0)->shape());
    return Values{count ? SymInt::constant(*count) : SymInt::unknown()};
  }
  case OpKind::Identity:
  case OpKind::Reshape:
  case OpKind::Squeeze:
  case OpKind::Unsqueeze:
  case OpKind::Flatten:
    return trace(node.input(0), depth + 1);
  case OpKind::Cast: {
    // Casts between integer types of at least 32 bits keep shape-sized values unchanged.
    DType to = node.output()->dtype();
    DType from = node.input(0)->dtype();
    bool wide = [](DType t) {
      return t == DType::Int32 || t == DType::Int64 || t == DType::Uint32 || t == DType::Uint64;
    }(to);
    if (!wide || !(isInteger(from) || isFloat(from)))
      return std::nullopt;
    return trace(node.input(0), depth + 1);
  }
  case OpKind::Concat:
    return traceConcat(node, depth);
  case OpKind::Range:
    return traceRange(node, depth);
  case OpKind::ConstantOfShape:
    return traceConstantOfShape(node, depth);
  case OpKind::Gather:
    return traceGather(node, depth);
  case OpKind::Slice:
    return traceSlice(node, depth);
  case OpKind::Add:
  case OpKind::Sub:
  case OpKind::Mul:
  case OpKind::Div:
    return traceArithmetic(node, depth);
  default:
    return std::nullopt;
  }
}

std::optional<Values> trace(const Value *value, int depth) {
  if (!value)
    return std::nullopt;
  if (value->isConstant())
    return fromConstant(value->constant());
  if (depth < kMaxDepth && value->producer()) {
    const Node &producer = *value->producer();
    bool inputsPresent = true;
    for (int i = 0; i < producer.info().minInputs; ++i)
      inputsPresent = inputsPresent && producer.input(i);
    if (inputsPresent) {
      auto values = traceNode(producer, value->producerOutput(), depth);
      if (values && int64_t(values->size()) <= kMaxElements) {
        // A traced count that contradicts the value's static type means the graph's types are
        // stale; trust neither and fall back to the type.
        auto count = elementCount(value->shape());
        if (!count || *count == int64_t(values->size()))
          return values;
      }
    }
  }
  return fromType(value);
}

} // namespace

SliceBounds sliceBounds(int64_t dim, int64_t start, int64_t end, int64_t step) {
  if (dim <= 0)
    return {0, 0};
  if (start < 0)
    start += dim;
  if (end < 0)
    end += dim;
  __int128 count;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
    count = (__int128(end) - start + step - 1) / step;
  } else {
    start = std::clamp<int64_t>(start, 0, dim - 1);
    end = std::clamp<int64_t>(end, -1, dim - 1);
    __int128 magnitude = -__int128(step);
    count = (__int128(start) - end + magnitude - 1) / magnitude;
  }
  return {start, count > 0 ? int64_t(count) : 0};
}

std::optional<int64_t> integerRangeLength(int64_t start, int64_t limit, int64_t delta) {
  if (delta == 0)
    return std::nullopt;
  __int128 difference = __int128(limit) - start;
  __int128 quotient = difference / delta, remainder = difference % delta;
  if (remainder != 0 && ((remainder > 0) == (delta > 0)))
    ++quotient;
  if (quotient > INT64_MAX)
    return std::nullopt;
  return quotient > 0 ? int64_t(quotient) : 0;
}

std::optional<std::vector<SymInt>> InferContext::integerValues(int i) const {
  const Value *value = node().input(i);
  if (!value)
    return std::nullopt;
  std::optional<std::vector<SymInt>> values = trace(value, 0);
  if (!values || std::any_of(values->begin(), values->end(),
                             [](const SymInt &element) { return !element.isConstant(); }))
    noteUnresolved(i);
  return values;
}

} // namespace sinter::infer
