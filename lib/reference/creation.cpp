// Reference rules for ops that make tensors or describe them: Shape, Size, ConstantOfShape,
// Range, EyeLike, OneHot, NonZero and Dropout (inference only).
#include "tensor_index.h"
#include "registry.h"
#include "tensor_helpers.h"

#include "sinter/ir/op_attributes.h"

#include <algorithm>
#include <cmath>

namespace sinter::reference {
namespace {

// Shape: dims [start, end) of the input's shape; negative bounds count from the end, and both
// clamp to [0, rank].
Outputs evalShape(const Node &node, const Inputs &inputs) {
  const Tensor &x = requiredInput(node, inputs, 0);
  DimRange range = shapeRange(node, x.rank());
  std::vector<int64_t> dims;
  for (int64_t i = range.start; i < range.end; ++i)
    dims.push_back(x.dims()[i]);
  return {Tensor::fromInts(dims)};
}

Outputs evalSize(const Node &node, const Inputs &inputs) {
  Tensor out(DType::Int64, {});
  out.data<int64_t>()[0] = requiredInput(node, inputs, 0).elementCount();
  return {out};
}

// ConstantOfShape: the `value` attribute's one element (f32 0 by default) in every position.
Outputs evalConstantOfShape(const Node &node, const Inputs &inputs) {
  const Tensor &shapeInput = requiredInput(node, inputs, 0);
  std::vector<int64_t> dims = *optionalIntsInput(node, &shapeInput, 0);
  for (int64_t dim : dims)
    if (dim < 0)
      userError(node.describe(), ": shape ", shapeStr(shapeOf(dims)), " has a negative dim");
  Tensor zero(DType::Float32, {1});
  const Tensor *value = node.attrTensor("value");
  if (!value)
    value = &zero;
  if (value->elementCount() != 1)
    userError(node.describe(), ": attribute 'value' must hold one element, not ",
              value->elementCount());
  Tensor out(value->dtype(), dims);
  for (int64_t i = 0; i < out.elementCount(); ++i)
    copyElements(*value, 0, out, i);
  return {out};
}

/// The single value of a scalar (or one-element) input, for Range, OneHot and Dropout.
const Tensor &scalarInput(const Node &node, const Inputs &inputs, int index) {
  const Tensor &input = requiredInput(node, inputs, index);
  if (input.elementCount() != 1)
    userError(node.describe(), ": input ", index, " must be a scalar, got ", input.type().str());
  return input;
}

// Range: max(ceil((limit - start) / delta), 0) elements start + i * delta. Integers compute exactly
// in int64; floats in double, rounded once per element.
Outputs evalRange(const Node &node, const Inputs &inputs) {
  const Tensor &start = scalarInput(node, inputs, 0);
  const Tensor &limit = scalarInput(node, inputs, 1);
  const Tensor &delta = scalarInput(node, inputs, 2);
  requireSameDTypes(node, inputs, {0, 1, 2});
  DType dtype = start.dtype();
  if (isInteger(dtype)) {
    int64_t first = start.getInt(0), last = limit.getInt(0), step = delta.getInt(0);
    if (step == 0)
      userError(node.describe(), ": delta is 0");
    // Differences in __int128 so no extent of int64 overflows.
    __int128 span = __int128(last) - __int128(first);
    __int128 count = step > 0 ? (span > 0 ? (span + step - 1) / step : 0)
                              : (span < 0 ? (-span + (-__int128(step)) - 1) / -__int128(step) : 0);
    Tensor out(dtype, {int64_t(count)});
    for (int64_t i = 0; i < out.elementCount(); ++i)
      out.setInt(i, wrappingAdd<int64_t>(first, wrappingMul<int64_t>(i, step)));
    return {out};
  }
  if (!isFloat(dtype))
    unsupportedDType(node, dtype);
  double first = loadAsDouble(start, 0), last = loadAsDouble(limit, 0),
         step = loadAsDouble(delta, 0);
  if (step == 0)
    userError(node.describe(), ": delta is 0");
  double count = std::ceil((last - first) / step);
  if (!std::isfinite(count))
    userError(node.describe(), ": Range(", first, ", ", last, ", ", step, ") has no finite length");
  Tensor out(dtype, {std::max<int64_t>(int64_t(count), 0)});
  for (int64_t i = 0; i < out.elementCount(); ++i)
    storeFromDouble(out, i, first + double(i) * step);
  return {out};
}

// EyeLike: ones on diagonal k of a 2-D tensor shaped like the input, in `dtype` (an ONNX
// TensorProto type number) or the input's type.
Outputs evalEyeLike(const Node &node, const Inputs &inputs) {
  const Tensor &x = requiredInput(node, inputs, 0);
  if (x.rank() != 2)
    userError(node.describe(), ": input must be 2-D, got ", shapeStr(x.type().shape));
  DType dtype = x.dtype();
  if (node.hasAttr("dtype")) {
    std::optional<DType> given = dtypeFromOnnx(int(node.attrInt("dtype", 0)));
    if (!given)
      userError(node.describe(), ": unsupported dtype ", node.attrInt("dtype", 0));
    dtype = *given;
  }
  int64_t k = node.attrInt("k", 0);
  Tensor out(dtype, x.dims());
  for (int64_t row = 0; row < x.dims()[0]; ++row) {
    int64_t column = row + k;
    if (column >= 0 && column < x.dims()[1])
      storeFromDouble(out, row * x.dims()[1] + column, 1.0);
  }
  return {out};
}

// OneHot: out has a new axis of extent depth at `axis`; position j along it holds values[1] where
// j == indices (negative indices count from depth), else values[0]. Indices outside [-depth, depth)
// give a row of values[0].
Outputs evalOneHot(const Node &node, const Inputs &inputs) {
  const Tensor &indices = requiredInput(node, inputs, 0);
  const Tensor &depthInput = scalarInput(node, inputs, 1);
  const Tensor &values = requiredInput(node, inputs, 2);
  if (values.elementCount() != 2)
    userError(node.describe(), ": values must hold [off, on], got ", values.type().str());
  if (indices.dtype() == DType::Bool || depthInput.dtype() == DType::Bool)
    unsupportedDType(node, DType::Bool);
  double depthValue = loadAsDouble(depthInput, 0);
  if (!(depthValue >= 1) || !std::isfinite(depthValue))
    userError(node.describe(), ": depth ", depthValue, " must be at least 1");
  int64_t depth = int64_t(depthValue);
  int64_t rank = indices.rank() + 1;
  int64_t axis = node.attrInt("axis", -1);
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis >= rank)
    userError(node.describe(), ": axis ", node.attrInt("axis", -1), " is out of range for rank ",
              rank);

  std::vector<int64_t> outDims = indices.dims();
  outDims.insert(outDims.begin() + axis, depth);
  AxisSplit split = splitAtAxis(outDims, axis); // the indices are [split.outer, split.inner]
  int64_t inner = split.inner;
  Tensor out(values.dtype(), outDims);
  for (int64_t o = 0; o < split.outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      int64_t index = depth; // no hot position
      if (isFloat(indices.dtype())) {
        double raw = loadAsDouble(indices, o * inner + i); // truncated toward zero
        if (std::fabs(raw) < double(depth) + 1)
          index = int64_t(raw);
      } else {
        index = indices.getInt(o * inner + i);
      }
      if (index < 0)
        index += depth;
      for (int64_t j = 0; j < depth; ++j)
        copyElements(values, j == index ? 1 : 0, out, split.at(o, j, i));
    }
  return {out};
}

// NonZero: [rank, count] int64, the coordinates of the non-zero elements in row-major order.
Outputs evalNonZero(const Node &node, const Inputs &inputs) {
  const Tensor &x = requiredInput(node, inputs, 0);
  std::vector<int64_t> found;
  for (int64_t i = 0; i < x.elementCount(); ++i)
    if (loadAsDouble(x, i) != 0) // NaN counts as non-zero, -0.0 as zero
      found.push_back(i);
  int64_t count = int64_t(found.size());
  Tensor out(DType::Int64, {x.rank(), count});
  for (int64_t j = 0; j < count; ++j) {
    std::vector<int64_t> at = unravel(found[j], x.dims());
    for (int d = 0; d < x.rank(); ++d)
      out.data<int64_t>()[d * count + j] = at[d];
  }
  return {out};
}

// Dropout at inference: the data unchanged and a mask of all true. Training mode with a positive
// ratio would need random numbers, which the reference does not model.
Outputs evalDropout(const Node &node, const Inputs &inputs) {
  const Tensor &x = requiredInput(node, inputs, 0);
  const Tensor *ratio = optionalInput(inputs, 1);
  const Tensor *training = optionalInput(inputs, 2);
  double ratioValue = 0.5;
  if (ratio) {
    if (ratio->elementCount() != 1)
      userError(node.describe(), ": ratio must be a scalar, got ", ratio->type().str());
    ratioValue = loadAsDouble(*ratio, 0);
  }
  if (training) {
    if (training->elementCount() != 1)
      userError(node.describe(), ": training_mode must be a scalar, got ", training->type().str());
    if (loadAsDouble(*training, 0) != 0 && ratioValue > 0)
      userError(node.describe(), ": training-mode Dropout is not supported");
  }
  Outputs outputs = {copyOf(x)};
  if (node.numOutputs() > 1) {
    Tensor mask(DType::Bool, x.dims());
    for (int64_t i = 0; i < mask.elementCount(); ++i)
      mask.data<uint8_t>()[i] = 1;
    outputs.push_back(std::move(mask));
  }
  return outputs;
}

} // namespace

void registerCreationRules(RuleTable &table) {
  table.add(OpKind::Shape, evalShape);
  table.add(OpKind::Size, evalSize);
  table.add(OpKind::ConstantOfShape, evalConstantOfShape);
  table.add(OpKind::Range, evalRange);
  table.add(OpKind::EyeLike, evalEyeLike);
  table.add(OpKind::OneHot, evalOneHot);
  table.add(OpKind::NonZero, evalNonZero);
  table.add(OpKind::Dropout, evalDropout);
}

} // namespace sinter::reference
