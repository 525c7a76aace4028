// Reference rules for ops that work along one axis (ai.onnx opset 23): Softmax, LogSoftmax and
// Hardmax (opset-13 form: one axis, not a 2-D coercion), CumSum and TopK. Floats compute in double
// and round once on store.
#include "reduction.h"

#include "dispatch.h"
#include "tensor_index.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace sinter::reference {
namespace {

enum class SoftmaxKind { Softmax, LogSoftmax, Hardmax };

/// Softmax family along `axis`: each slice is shifted by its maximum before exp, so large inputs
/// do not overflow. Hardmax puts 1 at the first maximum of each slice (a NaN counts as the
/// maximum, as in numpy.argmax) and 0 elsewhere.
Tensor softmaxOf(const Node &node, const Tensor &x, SoftmaxKind kind) {
  // A scalar is one slice of one element, whatever the axis.
  int64_t axis = x.rank() == 0 ? 0 : normalizeAxis(node, node.attrInt("axis", -1), x.rank());
  AxisSplit split = splitAtAxis(x.dims(), axis);
  return visitDType<FloatDTypes>(node, x.dtype(), [&](auto tag) {
    constexpr DType D = decltype(tag)::value;
    Tensor out(D, x.dims());
    std::vector<double> slice(split.size);
    for (int64_t o = 0; o < split.outer; ++o) {
      for (int64_t i = 0; i < split.inner; ++i) {
        if (split.size == 0)
          continue;
        for (int64_t k = 0; k < split.size; ++k)
          slice[k] = loadElement<D>(x, split.at(o, k, i));
        int64_t argMax = 0;
        for (int64_t k = 1; k < split.size; ++k)
          if (!std::isnan(slice[argMax]) && (std::isnan(slice[k]) || slice[k] > slice[argMax]))
            argMax = k;
        double largest = slice[argMax];
        double sum = 0;
        for (int64_t k = 0; k < split.size; ++k)
          sum += std::exp(slice[k] - largest);
        for (int64_t k = 0; k < split.size; ++k) {
          double result;
          if (kind == SoftmaxKind::Softmax)
            result = std::exp(slice[k] - largest) / sum;
          else if (kind == SoftmaxKind::LogSoftmax)
            result = slice[k] - largest - std::log(sum);
          else
            result = k == argMax ? 1.0 : 0.0;
          storeElement<D>(out, split.at(o, k, i), convertValue<D>(result));
        }
      }
    }
    return out;
  });
}

/// CumSum (or CumProd, opset 26) along the axis given by input 1: inclusive or exclusive, forward
/// or reverse. Integers add or multiply in wrapping integer arithmetic, floats in double.
Tensor cumulativeSum(const Node &node, const Inputs &inputs) {
  bool product = node.kind() == OpKind::CumProd;
  const Tensor &x = *inputs[0];
  if (x.rank() == 0)
    userError(node.describe(), ": the input must have rank 1 or more");
  int64_t axis = normalizeAxis(node, scalarIntInput(node, inputs[1], 1, 0), x.rank());
  bool exclusive = node.attrInt("exclusive", 0) != 0;
  bool reverse = node.attrInt("reverse", 0) != 0;
  AxisSplit split = splitAtAxis(x.dims(), axis);
  return visitDType<NumericDTypes>(node, x.dtype(), [&](auto tag) {
    constexpr DType D = decltype(tag)::value;
    using T = ComputeType<D>;
    using Accumulator = std::conditional_t<kIsFloat<D>, double, T>;
    Tensor out(D, x.dims());
    for (int64_t o = 0; o < split.outer; ++o) {
      for (int64_t i = 0; i < split.inner; ++i) {
        Accumulator sum = product ? 1 : 0;
        for (int64_t step = 0; step < split.size; ++step) {
          int64_t k = reverse ? split.size - 1 - step : step;
          Accumulator value = loadElement<D>(x, split.at(o, k, i));
          Accumulator before = sum;
          if constexpr (kIsFloat<D>)
            sum = product ? sum * value : sum + value;
          else
            sum = product ? wrappingMul<T>(sum, value) : wrappingAdd<T>(sum, value);
          storeElement<D>(out, split.at(o, k, i), convertValue<D>(exclusive ? before : sum));
        }
      }
    }
    return out;
  });
}

/// TopK along `axis`: the K largest (or smallest) elements of each slice with their indices.
/// Order: by value, ties by lower index; NaN ranks above every number (as numpy sorts it last).
/// With sorted=0 ONNX leaves the order open; this evaluator still returns it sorted.
Outputs topK(const Node &node, const Inputs &inputs) {
  const Tensor &x = *inputs[0];
  if (x.rank() == 0)
    userError(node.describe(), ": the input must have rank 1 or more");
  int64_t axis = normalizeAxis(node, node.attrInt("axis", -1), x.rank());
  bool largest = node.attrInt("largest", 1) != 0;
  int64_t k = scalarIntInput(node, inputs[1], 1, 0);
  AxisSplit split = splitAtAxis(x.dims(), axis);
  if (k < 0 || k > split.size)
    userError(node.describe(), ": K is ", k, " but axis ", axis, " has size ", split.size);
  std::vector<int64_t> outDims = x.dims();
  outDims[axis] = k;
  Tensor indices(DType::Int64, outDims);
  AxisSplit outSplit = splitAtAxis(outDims, axis);
  Tensor values = visitDType<NumericDTypes>(node, x.dtype(), [&](auto tag) {
    constexpr DType D = decltype(tag)::value;
    using T = ComputeType<D>;
    // a ranks below b (NaN is the greatest value; two NaNs are equal).
    auto below = [](T a, T b) {
      if constexpr (kIsFloat<D>)
        if (std::isnan(a) || std::isnan(b))
          return !std::isnan(a);
      return a < b;
    };
    Tensor out(D, outDims);
    std::vector<T> slice(split.size);
    std::vector<int64_t> order(split.size);
    for (int64_t o = 0; o < split.outer; ++o) {
      for (int64_t i = 0; i < split.inner; ++i) {
        for (int64_t j = 0; j < split.size; ++j)
          slice[j] = loadElement<D>(x, split.at(o, j, i));
        std::iota(order.begin(), order.end(), int64_t(0));
        std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
          return largest ? below(slice[b], slice[a]) : below(slice[a], slice[b]);
        });
        for (int64_t j = 0; j < k; ++j) {
          storeElement<D>(out, outSplit.at(o, j, i), slice[order[j]]);
          indices.data<int64_t>()[outSplit.at(o, j, i)] = order[j];
        }
      }
    }
    return out;
  });
  Outputs outputs;
  outputs.push_back(std::move(values));
  outputs.push_back(std::move(indices));
  return outputs;
}

} // namespace

void registerAxisRules(RuleTable &table) {
  table.add(OpKind::Softmax, [](const Node &node, const Inputs &inputs) -> Outputs {
    return {softmaxOf(node, *inputs[0], SoftmaxKind::Softmax)};
  });
  table.add(OpKind::LogSoftmax, [](const Node &node, const Inputs &inputs) -> Outputs {
    return {softmaxOf(node, *inputs[0], SoftmaxKind::LogSoftmax)};
  });
  table.add(OpKind::Hardmax, [](const Node &node, const Inputs &inputs) -> Outputs {
    return {softmaxOf(node, *inputs[0], SoftmaxKind::Hardmax)};
  });
  for (OpKind kind : {OpKind::CumSum, OpKind::CumProd})
    table.add(kind, [](const Node &node, const Inputs &inputs) -> Outputs {
      return {cumulativeSum(node, inputs)};
    });
  table.add(OpKind::TopK, [](const Node &node, const Inputs &inputs) -> Outputs {
    return topK(node, inputs);
  });
}

} // namespace sinter::reference
