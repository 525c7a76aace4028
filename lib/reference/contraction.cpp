// Reference rules for contractions: MatMul, Gemm and Einsum.
//
// Every product is summed in an accumulator wider than the element: double for the float types,
// wrapping int64 arithmetic for the integer types (two's complement, so unsigned 64-bit values
// come out right too). The sum is rounded once when it is stored.
#include "tensor_index.h"
#include "registry.h"
#include "tensor_helpers.h"

#include "sinter/ir/einsum.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <string>
#include <type_traits>

namespace sinter::reference {
namespace {

/// The type a contraction sums in for element type D.
template <DType D> using Accumulator = std::conditional_t<kIsFloat<D>, double, int64_t>;

template <DType D> Accumulator<D> loadAccumulator(const Tensor &tensor, int64_t i) {
  return static_cast<Accumulator<D>>(loadElement<D>(tensor, i));
}

template <typename A> A multiplyAdd(A sum, A a, A b) {
  if constexpr (std::is_floating_point_v<A>)
    return sum + a * b;
  else
    return wrappingAdd<A>(sum, wrappingMul<A>(a, b));
}

// ---- MatMul ---------------------------------------------------------------------------------

// numpy matmul: a 1-D first operand is a row [1, K] and a 1-D second operand a column [K, 1]
// (the added dim is dropped from the result); leading (batch) dims broadcast.
Outputs evalMatMul(const Node &node, const Inputs &inputs) {
  const Tensor &a = requiredInput(node, inputs, 0);
  const Tensor &b = requiredInput(node, inputs, 1);
  requireSameDTypes(node, inputs, {0, 1});
  if (a.rank() == 0 || b.rank() == 0)
    userError(node.describe(), ": MatMul operands must have rank >= 1, got ",
              shapeStr(a.type().shape), " and ", shapeStr(b.type().shape));
  std::vector<int64_t> aDims = a.dims(), bDims = b.dims();
  bool rowVector = a.rank() == 1, columnVector = b.rank() == 1;
  if (rowVector)
    aDims.insert(aDims.begin(), 1);
  if (columnVector)
    bDims.push_back(1);
  int64_t m = aDims[aDims.size() - 2], k = aDims.back();
  int64_t n = bDims.back();
  if (bDims[bDims.size() - 2] != k)
    userError(node.describe(), ": inner dimensions do not match: ", shapeStr(a.type().shape), " x ",
              shapeStr(b.type().shape));
  std::vector<int64_t> aBatch(aDims.begin(), aDims.end() - 2);
  std::vector<int64_t> bBatch(bDims.begin(), bDims.end() - 2);
  std::vector<int64_t> batch = broadcastDims(node, {aBatch, bBatch});
  std::vector<int64_t> outDims = batch;
  if (!rowVector)
    outDims.push_back(m);
  if (!columnVector)
    outDims.push_back(n);

  Tensor out(a.dtype(), outDims);
  BroadcastIndexer aIndex(aBatch, batch), bIndex(bBatch, batch);
  int64_t batchCount = productOf(batch);
  visitDType<NumericDTypes>(node, a.dtype(), [&](auto tag) {
    constexpr DType D = decltype(tag)::value;
    for (int64_t batchIndex = 0; batchIndex < batchCount; ++batchIndex) {
      int64_t aBase = aIndex(batchIndex) * m * k;
      int64_t bBase = bIndex(batchIndex) * k * n;
      int64_t outBase = batchIndex * m * n;
      for (int64_t row = 0; row < m; ++row)
        for (int64_t column = 0; column < n; ++column) {
          Accumulator<D> sum = 0;
          for (int64_t i = 0; i < k; ++i)
            sum = multiplyAdd(sum, loadAccumulator<D>(a, aBase + row * k + i),
                              loadAccumulator<D>(b, bBase + i * n + column));
          storeElement<D>(out, outBase + row * n + column, convertValue<D>(sum));
        }
    }
  });
  return {out};
}

// ---- Gemm -----------------------------------------------------------------------------------

// Y = alpha * A' * B' + beta * C, with A' = transA ? A^T : A (likewise B'), and C broadcast to
// [M, N] one way (its dims are 1 or equal to Y's).
Outputs evalGemm(const Node &node, const Inputs &inputs) {
  const Tensor &a = requiredInput(node, inputs, 0);
  const Tensor &b = requiredInput(node, inputs, 1);
  const Tensor *c = optionalInput(inputs, 2);
  requireSameDTypes(node, inputs, {0, 1, 2});
  if (a.rank() != 2 || b.rank() != 2)
    userError(node.describe(), ": Gemm operands A and B must be 2-D, got ",
              shapeStr(a.type().shape), " and ", shapeStr(b.type().shape));
  bool transA = node.attrInt("transA", 0) != 0, transB = node.attrInt("transB", 0) != 0;
  double alpha = node.attrFloat("alpha", 1.0f), beta = node.attrFloat("beta", 1.0f);
  int64_t m = transA ? a.dims()[1] : a.dims()[0];
  int64_t k = transA ? a.dims()[0] : a.dims()[1];
  int64_t kb = transB ? b.dims()[1] : b.dims()[0];
  int64_t n = transB ? b.dims()[0] : b.dims()[1];
  if (k != kb)
    userError(node.describe(), ": inner dimensions do not match: A' is [", m, ",", k, "], B' is [",
              kb, ",", n, "]");
  std::vector<int64_t> outDims = {m, n};
  if (c) {
    bool broadcastable = c->rank() <= 2;
    for (int i = 0; broadcastable && i < c->rank(); ++i) {
      int64_t want = outDims[2 - c->rank() + i];
      broadcastable = c->dims()[i] == 1 || c->dims()[i] == want;
    }
    if (!broadcastable)
      userError(node.describe(), ": C of shape ", shapeStr(c->type().shape),
                " does not broadcast to [", m, ",", n, "]");
  }

  Tensor out(a.dtype(), outDims);
  BroadcastIndexer cIndex(c ? c->dims() : std::vector<int64_t>{}, outDims);
  visitDType<NumericDTypes>(node, a.dtype(), [&](auto tag) {
    constexpr DType D = decltype(tag)::value;
    using A = Accumulator<D>;
    // Integer Gemm stays exact when alpha and beta are whole numbers.
    bool integral = std::is_integral_v<A> && alpha == std::trunc(alpha) && beta == std::trunc(beta);
    for (int64_t row = 0; row < m; ++row)
      for (int64_t column = 0; column < n; ++column) {
        A dot = 0;
        for (int64_t i = 0; i < k; ++i) {
          int64_t aAt = transA ? i * m + row : row * k + i;
          int64_t bAt = transB ? column * k + i : i * n + column;
          dot = multiplyAdd(dot, loadAccumulator<D>(a, aAt), loadAccumulator<D>(b, bAt));
        }
        int64_t outAt = row * n + column;
        A cValue = c ? loadAccumulator<D>(*c, cIndex(outAt)) : A(0);
        if constexpr (std::is_integral_v<A>) {
          if (integral) {
            A value = wrappingMul<A>(static_cast<A>(alpha), dot);
            if (c)
              value = multiplyAdd<A>(value, static_cast<A>(beta), cValue);
            storeElement<D>(out, outAt, convertValue<D>(value));
            continue;
          }
        }
        double value = alpha * static_cast<double>(dot);
        if (c)
          value += beta * static_cast<double>(cValue);
        storeElement<D>(out, outAt, convertValue<D>(value));
      }
  });
  return {out};
}

// ---- Einsum ---------------------------------------------------------------------------------

/// The equation over the inputs' dims (ir/einsum.h).
EinsumPlan planEinsum(const Node &node, const Inputs &inputs) {
  std::vector<std::vector<int64_t>> dims;
  for (size_t i = 0; i < inputs.size(); ++i)
    dims.push_back(requiredInput(node, inputs, int(i)).dims());
  return sinter::planEinsum(node, dims);
}

// Each output element sums, over every value of the labels not in the output, the product of the
// inputs at those labels. A label repeated within one input walks its diagonal.
Outputs evalEinsum(const Node &node, const Inputs &inputs) {
  if (inputs.empty())
    userError(node.describe(), ": Einsum needs at least one input");
  std::vector<int> indices;
  for (size_t i = 0; i < inputs.size(); ++i)
    indices.push_back(int(i));
  requireSameDTypes(node, inputs, indices);
  EinsumPlan plan = planEinsum(node, inputs);

  std::vector<int> labels = plan.outputLabels;
  for (auto [label, extent] : plan.sizes)
    if (!std::count(plan.outputLabels.begin(), plan.outputLabels.end(), label))
      labels.push_back(label);
  size_t outputRank = plan.outputLabels.size();
  std::vector<int64_t> outDims, sumDims;
  for (size_t i = 0; i < labels.size(); ++i)
    (i < outputRank ? outDims : sumDims).push_back(plan.sizes[labels[i]]);

  // strides[i][j]: how far input i moves when label j steps (0 where the input broadcasts).
  std::vector<std::vector<int64_t>> strides(inputs.size(), std::vector<int64_t>(labels.size(), 0));
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::vector<int64_t> inputStrides = stridesOf(inputs[i]->dims());
    for (size_t d = 0; d < plan.inputLabels[i].size(); ++d) {
      int label = plan.inputLabels[i][d];
      size_t j = std::find(labels.begin(), labels.end(), label) - labels.begin();
      if (inputs[i]->dims()[d] != 1 || plan.sizes[label] == 1)
        strides[i][j] += inputStrides[d];
    }
  }

  DType dtype = inputs[0]->dtype();
  Tensor out(dtype, outDims);
  if (out.elementCount() == 0)
    return {out};
  bool emptySum = productOf(sumDims) == 0;
  visitDType<NumericDTypes>(node, dtype, [&](auto tag) {
    constexpr DType D = decltype(tag)::value;
    using A = Accumulator<D>;
    std::vector<int64_t> outAt(outDims.size(), 0);
    for (int64_t outIndex = 0; outIndex < out.elementCount(); ++outIndex) {
      A sum = 0;
      std::vector<int64_t> sumAt(sumDims.size(), 0);
      while (!emptySum) {
        A product = 1;
        for (size_t i = 0; i < inputs.size(); ++i) {
          int64_t offset = 0;
          for (size_t j = 0; j < labels.size(); ++j)
            offset += (j < outputRank ? outAt[j] : sumAt[j - outputRank]) * strides[i][j];
          A value = loadAccumulator<D>(*inputs[i], offset);
          product = multiplyAdd<A>(A(0), product, value);
        }
        sum = multiplyAdd<A>(sum, product, A(1));
        if (!nextIndex(sumAt, sumDims))
          break;
      }
      storeElement<D>(out, outIndex, convertValue<D>(sum));
      nextIndex(outAt, outDims);
    }
  });
  return {out};
}

} // namespace

namespace {

// Det: the determinant of each [M, M] matrix of [..., M, M], by LU decomposition with partial
// pivoting in double.
Outputs evalDet(const Node &node, const Inputs &inputs) {
  const Tensor &x = requiredInput(node, inputs, 0);
  if (x.rank() < 2 || x.dims()[x.rank() - 1] != x.dims()[x.rank() - 2])
    userError(node.describe(), ": the input must be [..., M, M]");
  int64_t m = x.dims().back();
  std::vector<int64_t> outDims(x.dims().begin(), x.dims().end() - 2);
  int64_t matrices = 1;
  for (int64_t d : outDims)
    matrices *= d;
  std::vector<double> values = toDoubles(x), out(static_cast<size_t>(matrices));
  for (int64_t k = 0; k < matrices; ++k) {
    double *a = &values[size_t(k * m * m)];
    double det = 1;
    for (int64_t col = 0; col < m && det != 0; ++col) {
      int64_t pivot = col;
      for (int64_t row = col + 1; row < m; ++row)
        if (std::abs(a[row * m + col]) > std::abs(a[pivot * m + col]))
          pivot = row;
      if (a[pivot * m + col] == 0) {
        det = 0;
        break;
      }
      if (pivot != col) {
        for (int64_t j = 0; j < m; ++j)
          std::swap(a[pivot * m + j], a[col * m + j]);
        det = -det;
      }
      det *= a[col * m + col];
      for (int64_t row = col + 1; row < m; ++row) {
        double factor = a[row * m + col] / a[col * m + col];
        for (int64_t j = col; j < m; ++j)
          a[row * m + j] -= factor * a[col * m + j];
      }
    }
    out[size_t(k)] = det;
  }
  return {fromDoubles(x.dtype(), outDims, out)};
}

} // namespace

void registerContractionRules(RuleTable &table) {
  table.add(OpKind::Det, evalDet);
  table.add(OpKind::MatMul, evalMatMul);
  table.add(OpKind::Gemm, evalGemm);
  table.add(OpKind::Einsum, evalEinsum);
}

} // namespace sinter::reference
