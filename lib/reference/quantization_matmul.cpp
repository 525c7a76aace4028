// Reference rules for the integer matrix products MatMulInteger and QLinearMatMul: numpy matmul
// over operands of rank >= 2 (batch dims broadcast) of 8-bit integers, each shifted by its zero
// point and summed in 32 bits (wrapping, as ONNX allows):
//   MatMulInteger  y = sum_k (a - a_zero_point)(b - b_zero_point), int32
//   QLinearMatMul  y = saturate(round_half_even(sum * (a_scale * b_scale / y_scale)) + y_zero_point)
// QLinearMatMul's factor is computed in the scales' type (f32, or f16 / bf16 rounded after each
// operation), as ONNX's reference does. A's scale and zero point are a scalar, a vector of M (per
// row) or [..., M, 1]; B's a scalar, a vector of N (per column) or [..., 1, N] (broadcast against
// the output, dims aligned to the right); Y's a scalar.
#include "tensor_index.h"
#include "registry.h"
#include "tensor_helpers.h"

#include <algorithm>
#include <cmath>

namespace sinter::reference {
namespace {

bool isQuantized8(DType t) { return t == DType::Int8 || t == DType::Uint8; }

/// Where a per-tensor, per-row (A) or per-column (B) parameter is read for output element
/// (batch index, i, j).
class ParameterIndex {
public:
  ParameterIndex(const Node &node, const Tensor *parameter, const char *what, bool perRow,
                 const std::vector<int64_t> &operandDims, const std::vector<int64_t> &outDims)
      : perRow_(perRow) {
    if (!parameter || parameter->elementCount() == 1)
      return;
    int64_t rows = operandDims[operandDims.size() - 2], columns = operandDims.back();
    const std::vector<int64_t> &dims = parameter->dims();
    if (dims.size() == 1 && dims[0] == (perRow ? rows : columns)) {
      vector_ = true;
      return;
    }
    // [..., M, 1] for A, [..., 1, N] for B: broadcast against the output.
    std::vector<int64_t> expected = operandDims;
    expected[expected.size() - (perRow ? 1 : 2)] = 1;
    if (dims.size() < 2 || dims.size() > operandDims.size() ||
        (perRow ? dims.back() != 1 : dims[dims.size() - 2] != 1))
      userError(node.describe(), ": ", what, " has shape ", shapeStr(parameter->type().shape),
                "; expected one element, a vector of ", perRow ? rows : columns, " or ",
                shapeStr(shapeOf(expected)));
    full_ = true;
    dims_ = dims;
    outDims_ = outDims;
  }
  int64_t operator()(const std::vector<int64_t> &outIndex) const {
    size_t rank = outIndex.size();
    int64_t i = outIndex[rank - 2], j = outIndex[rank - 1];
    if (vector_)
      return perRow_ ? i : j;
    if (!full_)
      return 0;
    std::vector<int64_t> at(dims_.size());
    size_t offset = rank - dims_.size();
    for (size_t d = 0; d < dims_.size(); ++d)
      at[d] = dims_[d] == 1 ? 0 : outIndex[offset + d];
    return ravel(at, dims_);
  }

private:
  bool perRow_, vector_ = false, full_ = false;
  std::vector<int64_t> dims_, outDims_;
};

/// Rounds to the scales' type (f16 and bf16 round after every operation).
double roundToScaleType(DType type, double value) {
  switch (type) {
  case DType::Float16: return halfToFloat(doubleToHalf(value));
  case DType::BFloat16: return bfloat16ToFloat(doubleToBfloat16(value));
  case DType::Float64: return value;
  default: return double(float(value));
  }
}

struct Product {
  std::vector<int64_t> outDims;
  std::vector<int32_t> sums;
};

/// The shifted int32 products sum_k (a - a_zp)(b - b_zp) over broadcast batches.
Product integerProduct(const Node &node, const Tensor &a, const Tensor &b, const Tensor *aZero,
                       const Tensor *bZero) {
  if (!isQuantized8(a.dtype()) || !isQuantized8(b.dtype()))
    userError(node.describe(), ": A and B must be i8 or u8, not ", dtypeName(a.dtype()), " and ",
              dtypeName(b.dtype()));
  if (aZero && aZero->dtype() != a.dtype())
    userError(node.describe(), ": A's zero point is ", dtypeName(aZero->dtype()), ", A is ", dtypeName(a.dtype()));
  if (bZero && bZero->dtype() != b.dtype())
    userError(node.describe(), ": B's zero point is ", dtypeName(bZero->dtype()), ", B is ", dtypeName(b.dtype()));
  if (a.rank() < 2 || b.rank() < 2)
    userError(node.describe(), ": operands must have rank >= 2, got ", shapeStr(a.type().shape),
              " and ", shapeStr(b.type().shape));
  int64_t m = a.dims()[a.rank() - 2], k = a.dims().back(), n = b.dims().back();
  if (b.dims()[b.rank() - 2] != k)
    userError(node.describe(), ": inner dimensions do not match: ", shapeStr(a.type().shape), " x ",
              shapeStr(b.type().shape));
  std::vector<int64_t> aBatch(a.dims().begin(), a.dims().end() - 2);
  std::vector<int64_t> bBatch(b.dims().begin(), b.dims().end() - 2);
  Product product;
  product.outDims = broadcastDims(node, {aBatch, bBatch});
  std::vector<int64_t> batch = product.outDims;
  product.outDims.push_back(m);
  product.outDims.push_back(n);
  ParameterIndex aAt(node, aZero, "A's zero point", true, a.dims(), product.outDims);
  ParameterIndex bAt(node, bZero, "B's zero point", false, b.dims(), product.outDims);
  BroadcastIndexer aIndex(aBatch, batch), bIndex(bBatch, batch);
  product.sums.resize(size_t(productOf(product.outDims)));
  std::vector<int64_t> at(product.outDims.size(), 0);
  for (int64_t flat = 0; flat < int64_t(product.sums.size()); ++flat) {
    int64_t batchIndex = flat / (m * n), i = at[at.size() - 2], j = at.back();
    int32_t aShift = aZero ? int32_t(aZero->getInt(aAt(at))) : 0;
    int32_t bShift = bZero ? int32_t(bZero->getInt(bAt(at))) : 0;
    int64_t aBase = aIndex(batchIndex) * m * k + i * k, bBase = bIndex(batchIndex) * k * n + j;
    uint32_t sum = 0; // wraps in 32 bits
    for (int64_t r = 0; r < k; ++r)
      sum += uint32_t((int32_t(a.getInt(aBase + r)) - aShift) * (int32_t(b.getInt(bBase + r * n)) - bShift));
    product.sums[size_t(flat)] = int32_t(sum);
    nextIndex(at, product.outDims);
  }
  return product;
}

Outputs evalMatMulInteger(const Node &node, const Inputs &inputs) {
  Product product = integerProduct(node, requiredInput(node, inputs, 0), requiredInput(node, inputs, 1),
                                   optionalInput(inputs, 2), optionalInput(inputs, 3));
  Tensor out(DType::Int32, product.outDims);
  std::copy(product.sums.begin(), product.sums.end(), out.data<int32_t>());
  return {out};
}

Outputs evalQLinearMatMul(const Node &node, const Inputs &inputs) {
  const Tensor &a = requiredInput(node, inputs, 0), &aScale = requiredInput(node, inputs, 1);
  const Tensor &b = requiredInput(node, inputs, 3), &bScale = requiredInput(node, inputs, 4);
  const Tensor &yScale = requiredInput(node, inputs, 6), &yZero = requiredInput(node, inputs, 7);
  Product product = integerProduct(node, a, b, &requiredInput(node, inputs, 2), &requiredInput(node, inputs, 5));
  DType scaleType = aScale.dtype();
  if (!isFloat(scaleType) || bScale.dtype() != scaleType || yScale.dtype() != scaleType)
    userError(node.describe(), ": the scales must share one float type");
  if (yScale.elementCount() != 1 || yZero.elementCount() != 1)
    userError(node.describe(), ": y_scale and y_zero_point must have one element");
  if (!isQuantized8(yZero.dtype()))
    userError(node.describe(), ": y_zero_point must be i8 or u8, not ", dtypeName(yZero.dtype()));
  ParameterIndex aAt(node, &aScale, "a_scale", true, a.dims(), product.outDims);
  ParameterIndex bAt(node, &bScale, "b_scale", false, b.dims(), product.outDims);
  double low = yZero.dtype() == DType::Int8 ? -128 : 0, high = yZero.dtype() == DType::Int8 ? 127 : 255;
  double zero = double(yZero.getInt(0)), outScale = yScale.getDouble(0);
  Tensor out(yZero.dtype(), product.outDims);
  std::vector<int64_t> at(product.outDims.size(), 0);
  for (int64_t flat = 0; flat < out.elementCount(); ++flat) {
    double factor = roundToScaleType(scaleType, aScale.getDouble(aAt(at)) * bScale.getDouble(bAt(at)));
    factor = roundToScaleType(scaleType, factor / outScale);
    double value = std::nearbyint(double(product.sums[size_t(flat)]) * factor) + zero;
    if (std::isnan(value)) // a NaN or infinite scale: no defined result; keep it deterministic
      value = zero;
    out.setInt(flat, int64_t(std::clamp(value, low, high)));
    nextIndex(at, product.outDims);
  }
  return {out};
}

} // namespace

void registerQuantizedMatMulRules(RuleTable &table) {
  table.add(OpKind::MatMulInteger, evalMatMulInteger);
  table.add(OpKind::QLinearMatMul, evalQLinearMatMul);
}

} // namespace sinter::reference
