// Reference rules for the reductions (ai.onnx opset 23): Reduce* with axes from the optional
// second input, and ArgMax/ArgMin. The ops that work along one axis (Softmax family, CumSum,
// TopK) are in reduction_axis.cpp.
//
// Each output element reduces one group of input elements, visited in input order. Floats
// accumulate in double and round once on store; integers accumulate in wrapping integer
// arithmetic (exact, and equal to accumulating in the element type), except ReduceL2, ReduceLogSum
// and ReduceLogSumExp, which compute in double and truncate back as Cast does. Reducing an empty
// group gives the operation's identity: 0 for sums, 1 for products, -inf (or the type's lowest
// value) for ReduceMax, +inf (or the highest) for ReduceMin, -inf for the log-sums, and NaN for the
// float mean (0 for integers).
#include "reduction.h"

#include "dispatch.h"
#include "tensor_index.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace sinter::reference {

ReductionPlan planReduction(const Node &node, const std::vector<int64_t> &dims,
                            const std::vector<int64_t> &axes, bool keepDims) {
  int64_t rank = static_cast<int64_t>(dims.size());
  ReductionPlan plan;
  plan.reduced.assign(dims.size(), false);
  for (int64_t axis : axes) {
    int64_t normalized = normalizeAxis(node, axis, rank);
    if (rank == 0)
      continue; // a scalar reduces to itself; axis 0 or -1 is tolerated
    if (plan.reduced[normalized])
      userError(node.describe(), ": axis ", axis, " is listed twice");
    plan.reduced[normalized] = true;
  }
  std::vector<int64_t> keptDims;
  for (int64_t d = 0; d < rank; ++d) {
    if (!plan.reduced[d])
      keptDims.push_back(dims[d]);
    if (!plan.reduced[d] || keepDims)
      plan.outDims.push_back(plan.reduced[d] ? 1 : dims[d]);
  }
  // Map each input element to its output element, walking the input with an odometer.
  int64_t count = productOf(dims);
  plan.outIndexOf.resize(count);
  std::vector<int64_t> at(dims.size(), 0);
  std::vector<int64_t> kept;
  for (int64_t i = 0; i < count; ++i) {
    kept.clear();
    for (int64_t d = 0; d < rank; ++d)
      if (!plan.reduced[d])
        kept.push_back(at[d]);
    plan.outIndexOf[i] = ravel(kept, keptDims);
    nextIndex(at, dims);
  }
  plan.outCount = productOf(keptDims);
  return plan;
}

namespace {

enum class Reduce { L1, L2, LogSum, LogSumExp, Max, Mean, Min, Prod, Sum, SumSquare };

/// Reduces one group of values (in input order) of element type D.
template <DType D> ComputeType<D> reduceGroup(Reduce op, const std::vector<ComputeType<D>> &values) {
  using T = ComputeType<D>;
  if constexpr (kIsBool<D>) {
    // Bool has only ReduceMax (any) and ReduceMin (all).
    bool any = std::find(values.begin(), values.end(), true) != values.end();
    bool all = std::find(values.begin(), values.end(), false) == values.end();
    return op == Reduce::Max ? any : all;
  } else if constexpr (kIsFloat<D>) {
    double result = 0;
    switch (op) {
    case Reduce::Max:
    case Reduce::Min: {
      result = op == Reduce::Max ? -INFINITY : INFINITY;
      for (T value : values) {
        if (std::isnan(value))
          return value; // NaN propagates, as numpy.maximum.reduce
        result = op == Reduce::Max ? std::max<double>(result, value) : std::min<double>(result, value);
      }
      break;
    }
    case Reduce::Prod:
      result = 1;
      for (T value : values)
        result *= value;
      break;
    case Reduce::LogSumExp: {
      double largest = -INFINITY;
      for (T value : values)
        largest = std::isnan(value) || value > largest ? double(value) : largest;
      if (std::isnan(largest) || std::isinf(largest))
        return static_cast<T>(largest); // NaN, +inf, or -inf for an empty or all -inf group
      double sum = 0;
      for (T value : values)
        sum += std::exp(double(value) - largest);
      result = largest + std::log(sum);
      break;
    }
    default:
      for (T value : values) {
        double v = value;
        result += op == Reduce::L1 ? std::fabs(v) : (op == Reduce::L2 || op == Reduce::SumSquare) ? v * v : v;
      }
      if (op == Reduce::L2)
        result = std::sqrt(result);
      else if (op == Reduce::LogSum)
        result = std::log(result);
      else if (op == Reduce::Mean)
        result /= static_cast<double>(values.size()); // 0 / 0 is NaN for an empty group
      break;
    }
    return convertValue<D>(result);
  } else {
    // Integers. The wide accumulator has T's signedness and wraps.
    using Wide = std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>;
    switch (op) {
    case Reduce::Max:
    case Reduce::Min: {
      T result = op == Reduce::Max ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
      for (T value : values)
        result = op == Reduce::Max ? std::max(result, value) : std::min(result, value);
      return result;
    }
    case Reduce::L2:
    case Reduce::LogSum:
    case Reduce::LogSumExp: {
      double sum = 0;
      for (T value : values)
        sum += op == Reduce::L2 ? double(value) * double(value)
               : op == Reduce::LogSum ? double(value)
                                      : std::exp(double(value));
      return convertValue<D>(op == Reduce::L2 ? std::sqrt(sum) : std::log(sum));
    }
    default: {
      Wide result = op == Reduce::Prod ? 1 : 0;
      for (T value : values) {
        Wide v = value;
        if (op == Reduce::Prod)
          result = wrappingMul<Wide>(result, v);
        else if (op == Reduce::SumSquare)
          result = wrappingAdd<Wide>(result, wrappingMul<Wide>(v, v));
        else if (op == Reduce::L1 && v < 0)
          result = wrappingSub<Wide>(result, v);
        else
          result = wrappingAdd<Wide>(result, v);
      }
      if (op == Reduce::Mean)
        result = values.empty() ? 0 : result / static_cast<Wide>(values.size()); // truncates
      return static_cast<T>(result); // modular, as the element type would have wrapped
    }
    }
  }
}

template <typename List> Tensor reduceTensor(const Node &node, const Inputs &inputs, Reduce op) {
  const Tensor &x = *inputs[0];
  bool keepDims = node.attrInt("keepdims", 1) != 0;
  bool noopWithEmptyAxes = node.attrInt("noop_with_empty_axes", 0) != 0;
  std::optional<std::vector<int64_t>> axes =
      optionalIntsInput(node, inputs.size() > 1 ? inputs[1] : nullptr, 1);
  std::vector<int64_t> reduceAxes = axes ? *axes : std::vector<int64_t>{};
  if (reduceAxes.empty()) {
    if (noopWithEmptyAxes)
      return visitDType<List>(node, x.dtype(), [&](auto) { return x; });
    for (int64_t d = 0; d < x.rank(); ++d)
      reduceAxes.push_back(d);
  }
  ReductionPlan plan = planReduction(node, x.dims(), reduceAxes, keepDims);
  return visitDType<List>(node, x.dtype(), [&](auto tag) {
    constexpr DType D = decltype(tag)::value;
    std::vector<std::vector<ComputeType<D>>> groups(plan.outCount);
    for (int64_t i = 0; i < x.elementCount(); ++i)
      groups[plan.outIndexOf[i]].push_back(loadElement<D>(x, i));
    Tensor out(D, plan.outDims);
    for (int64_t o = 0; o < plan.outCount; ++o)
      storeElement<D>(out, o, reduceGroup<D>(op, groups[o]));
    return out;
  });
}

using MaxMinDTypes = DTypeList<DType::Float32, DType::Float64, DType::Float16, DType::BFloat16,
                               DType::Int8, DType::Int16, DType::Int32, DType::Int64, DType::Uint8,
                               DType::Uint16, DType::Uint32, DType::Uint64, DType::Bool>;

/// ArgMax / ArgMin along one axis, as numpy.argmax: the first extreme wins (the last with
/// select_last_index), and NaN counts as the extreme.
Tensor argExtreme(const Node &node, const Tensor &x, bool max) {
  int64_t axis = normalizeAxis(node, node.attrInt("axis", 0), x.rank());
  bool keepDims = node.attrInt("keepdims", 1) != 0;
  bool selectLast = node.attrInt("select_last_index", 0) != 0;
  if (x.rank() == 0)
    userError(node.describe(), ": the input must have rank 1 or more");
  AxisSplit split = splitAtAxis(x.dims(), axis);
  if (split.size == 0)
    userError(node.describe(), ": axis ", axis, " has size 0, so there is no extreme to pick");
  std::vector<int64_t> outDims = x.dims();
  if (keepDims)
    outDims[axis] = 1;
  else
    outDims.erase(outDims.begin() + axis);
  Tensor out(DType::Int64, outDims);
  visitDType<NumericDTypes>(node, x.dtype(), [&](auto tag) {
    constexpr DType D = decltype(tag)::value;
    using T = ComputeType<D>;
    auto isNaN = [](T value) {
      if constexpr (kIsFloat<D>)
        return std::isnan(value);
      else
        return false;
    };
    for (int64_t o = 0; o < split.outer; ++o) {
      for (int64_t i = 0; i < split.inner; ++i) {
        int64_t best = 0;
        T bestValue = loadElement<D>(x, split.at(o, 0, i));
        for (int64_t k = 1; k < split.size; ++k) {
          T value = loadElement<D>(x, split.at(o, k, i));
          bool better;
          if (isNaN(bestValue))
            better = selectLast && isNaN(value);
          else if (isNaN(value))
            better = true;
          else
            better = max ? value > bestValue : value < bestValue;
          if (better || (selectLast && value == bestValue)) {
            best = k;
            bestValue = value;
          }
        }
        out.data<int64_t>()[o * split.inner + i] = best;
      }
    }
  });
  return out;
}

} // namespace

void registerReductionRules(RuleTable &table) {
  using enum Reduce;
  table.add(OpKind::ReduceL1, [](const Node &node, const Inputs &inputs) -> Outputs {
    return {reduceTensor<NumericDTypes>(node, inputs, L1)};
  });
  table.add(OpKind::ReduceL2, [](const Node &node, const Inputs &inputs) -> Outputs {
    return {reduceTensor<NumericDTypes>(node, inputs, L2)};
  });
  table.add(OpKind::ReduceLogSum, [](const Node &node, const Inputs &inputs) -> Outputs {
    return {reduceTensor<NumericDTypes>(node, inputs, LogSum)};
  });
  table.add(OpKind::ReduceLogSumExp, [](const Node &node, const Inputs &inputs) -> Outputs {
    return {reduceTensor<NumericDTypes>(node, inputs, LogSumExp)};
  });
  table.add(OpKind::ReduceMax, [](const Node &node, const Inputs &inputs) -> Outputs {
    return {reduceTensor<MaxMinDTypes>(node, inputs, Max)};
  });
  table.add(OpKind::ReduceMean, [](const Node &node, const Inputs &inputs) -> Outputs {
    return {reduceTensor<NumericDTypes>(node, inputs, Mean)};
  });
  table.add(OpKind::ReduceMin, [](const Node &node, const Inputs &inputs) -> Outputs {
    return {reduceTensor<MaxMinDTypes>(node, inputs, Min)};
  });
  table.add(OpKind::ReduceProd, [](const Node &node, const Inputs &inputs) -> Outputs {
    return {reduceTensor<NumericDTypes>(node, inputs, Prod)};
  });
  table.add(OpKind::ReduceSum, [](const Node &node, const Inputs &inputs) -> Outputs {
    return {reduceTensor<NumericDTypes>(node, inputs, Sum)};
  });
  table.add(OpKind::ReduceSumSquare, [](const Node &node, const Inputs &inputs) -> Outputs {
    return {reduceTensor<NumericDTypes>(node, inputs, SumSquare)};
  });
  table.add(OpKind::ArgMax, [](const Node &node, const Inputs &inputs) -> Outputs {
    return {argExtreme(node, *inputs[0], true)};
  });
  table.add(OpKind::ArgMin, [](const Node &node, const Inputs &inputs) -> Outputs {
    return {argExtreme(node, *inputs[0], false)};
  });
  registerAxisRules(table);
}

} // namespace sinter::reference
