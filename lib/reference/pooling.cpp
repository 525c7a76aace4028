// Reference rules for pooling: MaxPool, AveragePool, LpPool, GlobalAveragePool and GlobalMaxPool
// (MaxUnpool is in pooling_unpool.cpp). Tensors are [N, C, D1 .. Dn] with any number of spatial
// dims; the window geometry is windowGeometry's (sinter/ir/op_attributes.h), which lowering
// resolves the same way.
//
// AveragePool divides by the window elements inside the input (count_include_pad = 0) or inside
// the input and its explicit pads (count_include_pad = 1); the part of a ceil_mode window that
// hangs past the end padding never counts.
//
// Values are read as double and every sum is in double; results round once on store.
#include "registry.h"
#include "tensor_helpers.h"
#include "tensor_index.h"

#include "sinter/ir/op_attributes.h"

#include <cmath>
#include <limits>

namespace sinter::reference {
namespace {

// ---- Pools ----------------------------------------------------------------------------------

enum class PoolKind { Max, Average, Lp };

/// Shared by MaxPool, AveragePool and LpPool: walks every window and hands its elements to the
/// per-kind reduction.
Outputs evalPool(const Node &node, const Inputs &inputs, PoolKind kind) {
  const Tensor &x = requiredInput(node, inputs, 0);
  requireImage(node, x, 3);
  if (kind == PoolKind::Max) {
    if (!isFloat(x.dtype()) && x.dtype() != DType::Int8 && x.dtype() != DType::Uint8)
      unsupportedDType(node, x.dtype());
  } else {
    requireFloat(node, x);
  }
  std::vector<int64_t> kernel = node.attrInts("kernel_shape");
  if (kernel.size() != size_t(x.rank() - 2))
    userError(node.describe(), ": kernel_shape has ", kernel.size(), " values but the input has ",
              x.rank() - 2, " spatial dims");
  WindowGeometry g = windowGeometry(node, spatialDims(x), kernel);
  bool countPadding = node.attrInt("count_include_pad", 0) != 0;
  bool columnMajor = node.attrInt("storage_order", 0) != 0;
  double p = double(node.attrInt("p", 2));
  bool wantIndices = kind == PoolKind::Max && node.numOutputs() > 1;

  int64_t batch = x.dims()[0], channels = x.dims()[1];
  std::vector<int64_t> outDims = {batch, channels};
  outDims.insert(outDims.end(), g.output.begin(), g.output.end());
  int64_t inSize = productOf(g.input), outSize = productOf(g.output),
          kernelSize = productOf(kernel);
  std::vector<int64_t> inStrides = stridesOf(g.input);
  // Column-major (storage_order = 1) strides for the Indices output: first spatial dim fastest.
  std::vector<int64_t> columnStrides(g.rank(), 1);
  for (size_t i = 1; i < g.rank(); ++i)
    columnStrides[i] = columnStrides[i - 1] * g.input[i - 1];

  std::vector<double> xs = toDoubles(x);
  std::vector<double> ys(static_cast<size_t>(productOf(outDims)), 0.0);
  Tensor indices(DType::Int64, outDims);
  for (int64_t plane = 0; plane < batch * channels; ++plane) {
    const double *values = xs.data() + plane * inSize;
    std::vector<int64_t> outAt(g.rank(), 0);
    for (int64_t o = 0; o < outSize; ++o, nextIndex(outAt, g.output)) {
      double best = -std::numeric_limits<double>::infinity(), sum = 0;
      int64_t bestIndex = -1, count = 0;
      std::vector<int64_t> kernelAt(g.rank(), 0);
      for (int64_t k = 0; k < kernelSize; ++k, nextIndex(kernelAt, kernel)) {
        int64_t offset = 0, columnOffset = 0;
        bool inInput = true, inPadded = true;
        for (size_t i = 0; i < g.rank(); ++i) {
          int64_t at = g.position(i, outAt[i], kernelAt[i]);
          inInput = inInput && at >= 0 && at < g.input[i];
          inPadded = inPadded && at < g.input[i] + g.padEnd[i];
          offset += at * inStrides[i];
          columnOffset += at * columnStrides[i];
        }
        if (kind == PoolKind::Average && (countPadding ? inPadded : inInput))
          ++count;
        if (!inInput)
          continue;
        double value = values[offset];
        if (kind == PoolKind::Max && value > best) { // NaN never wins
          best = value;
          bestIndex = plane * inSize + (columnMajor ? columnOffset : offset);
        }
        sum += kind == PoolKind::Lp ? std::pow(std::fabs(value), p) : value;
      }
      int64_t outIndex = plane * outSize + o;
      if (kind == PoolKind::Max) {
        ys[outIndex] = best;
        indices.data<int64_t>()[outIndex] = bestIndex;
      } else if (kind == PoolKind::Average) {
        ys[outIndex] = sum / double(count);
      } else {
        ys[outIndex] = std::pow(sum, 1.0 / p);
      }
    }
  }
  Outputs outputs = {fromDoubles(x.dtype(), outDims, ys)};
  if (wantIndices)
    outputs.push_back(std::move(indices));
  return outputs;
}

Outputs evalMaxPool(const Node &node, const Inputs &inputs) {
  return evalPool(node, inputs, PoolKind::Max);
}

Outputs evalAveragePool(const Node &node, const Inputs &inputs) {
  return evalPool(node, inputs, PoolKind::Average);
}

Outputs evalLpPool(const Node &node, const Inputs &inputs) {
  return evalPool(node, inputs, PoolKind::Lp);
}

/// GlobalAveragePool and GlobalMaxPool: one window covering all spatial dims, kept as 1s.
Outputs evalGlobalPool(const Node &node, const Inputs &inputs, bool average) {
  const Tensor &x = requiredInput(node, inputs, 0);
  requireImage(node, x, 2);
  requireFloat(node, x);
  int64_t planes = x.dims()[0] * x.dims()[1];
  int64_t planeSize = productOf(spatialDims(x));
  std::vector<int64_t> outDims = {x.dims()[0], x.dims()[1]};
  outDims.resize(size_t(x.rank()), 1);
  std::vector<double> xs = toDoubles(x), ys(static_cast<size_t>(planes));
  for (int64_t plane = 0; plane < planes; ++plane) {
    double sum = 0, best = -std::numeric_limits<double>::infinity();
    for (int64_t i = 0; i < planeSize; ++i) {
      double value = xs[plane * planeSize + i];
      sum += value;
      best = std::isnan(value) || std::isnan(best) ? std::nan("") : std::max(best, value);
    }
    ys[plane] = average ? sum / double(planeSize) : best;
  }
  return {fromDoubles(x.dtype(), outDims, ys)};
}

Outputs evalGlobalAveragePool(const Node &node, const Inputs &inputs) {
  return evalGlobalPool(node, inputs, true);
}

Outputs evalGlobalMaxPool(const Node &node, const Inputs &inputs) {
  return evalGlobalPool(node, inputs, false);
}

} // namespace

void registerPoolingRules(RuleTable &table) {
  table.add(OpKind::MaxPool, evalMaxPool);
  table.add(OpKind::AveragePool, evalAveragePool);
  table.add(OpKind::LpPool, evalLpPool);
  table.add(OpKind::GlobalAveragePool, evalGlobalAveragePool);
  table.add(OpKind::GlobalMaxPool, evalGlobalMaxPool);
}

} // namespace sinter::reference
