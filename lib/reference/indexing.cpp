// Reference rules for indexed reads and writes: Gather, GatherElements, GatherND, ScatterElements,
// ScatterND, TensorScatter (a KV cache's update) and Compress (the slices along `axis`, or the
// elements of the flattened input without `axis`, whose entry in the bool `condition` is true; a
// condition shorter than the axis leaves the rest out).
//
// Indices are int32 or int64; a negative index counts from the end of its axis, and one outside
// [-extent, extent) is a UserError naming the node. Reads and plain writes copy bytes (exact for
// every dtype); the scatter reductions (add, mul, max, min) compute in the dtype's compute type and
// apply the updates in index order, so duplicate indices accumulate.
#include "tensor_index.h"
#include "registry.h"
#include "tensor_helpers.h"

#include "sinter/ir/op_attributes.h"

#include <cmath>
#include <utility>

namespace sinter::reference {
namespace {

/// UserError unless input `inputIndex` holds integer indices.
void requireIndices(const Node &node, const Tensor &indices, int inputIndex) {
  if (indices.dtype() != DType::Int64 && indices.dtype() != DType::Int32)
    userError(node.describe(), ": input ", inputIndex, " (indices) must be int32 or int64, not ",
              dtypeName(indices.dtype()));
}

/// An index into an axis of `extent`, with negative values counted from the end.
int64_t resolveIndex(const Node &node, int64_t index, int64_t extent, int inputIndex) {
  if (index < -extent || index >= extent)
    userError(node.describe(), ": index ", index, " in input ", inputIndex,
              " is out of range for an axis of extent ", extent);
  return index < 0 ? index + extent : index;
}

// ---- Gather ---------------------------------------------------------------------------------

// out[a..., i..., b...] = data[a..., indices[i...], b...], the indices replacing dim `axis`.
Outputs evalGather(const Node &node, const Inputs &inputs) {
  const Tensor &data = requiredInput(node, inputs, 0);
  const Tensor &indices = requiredInput(node, inputs, 1);
  requireIndices(node, indices, 1);
  if (data.rank() == 0)
    userError(node.describe(), ": cannot gather from a scalar");
  int64_t axis = normalizeAxis(node, node.attrInt("axis", 0), data.rank());
  const std::vector<int64_t> &dims = data.dims();
  std::vector<int64_t> outDims(dims.begin(), dims.begin() + axis);
  outDims.insert(outDims.end(), indices.dims().begin(), indices.dims().end());
  outDims.insert(outDims.end(), dims.begin() + axis + 1, dims.end());
  AxisSplit from = splitAtAxis(dims, axis);
  int64_t count = indices.elementCount();

  Tensor out(data.dtype(), outDims);
  for (int64_t j = 0; j < count; ++j) {
    int64_t index = resolveIndex(node, indices.getInt(j), from.size, 1);
    for (int64_t o = 0; o < from.outer; ++o)
      copyElements(data, from.at(o, index, 0), out, (o * count + j) * from.inner, from.inner);
  }
  return {out};
}

/// For each position u of `indices` (same rank as the data), the data element that u reaches with
/// its coordinate along `axis` replaced by indices[u]: GatherElements reads it, ScatterElements
/// writes it.
std::vector<int64_t> elementTargets(const Node &node, const std::vector<int64_t> &dataDims,
                                    const Tensor &indices, int64_t axis) {
  if (indices.rank() != int(dataDims.size()))
    userError(node.describe(), ": indices ", shapeStr(indices.type().shape), " and data ",
              shapeStr(shapeOf(dataDims)), " differ in rank");
  for (size_t d = 0; d < dataDims.size(); ++d)
    if (int64_t(d) != axis && indices.dims()[d] > dataDims[d])
      userError(node.describe(), ": indices ", shapeStr(indices.type().shape), " exceed data ",
                shapeStr(shapeOf(dataDims)), " along axis ", d);
  std::vector<int64_t> dataStrides = stridesOf(dataDims), at(dataDims.size(), 0);
  std::vector<int64_t> targets(static_cast<size_t>(indices.elementCount()));
  for (int64_t u = 0; u < indices.elementCount(); ++u, nextIndex(at, indices.dims())) {
    int64_t target = 0;
    for (size_t d = 0; d < dataDims.size(); ++d) {
      int64_t coordinate =
          int64_t(d) == axis ? resolveIndex(node, indices.getInt(u), dataDims[d], 1) : at[d];
      target += coordinate * dataStrides[d];
    }
    targets[u] = target;
  }
  return targets;
}

Outputs evalGatherElements(const Node &node, const Inputs &inputs) {
  const Tensor &data = requiredInput(node, inputs, 0);
  const Tensor &indices = requiredInput(node, inputs, 1);
  requireIndices(node, indices, 1);
  if (data.rank() == 0)
    userError(node.describe(), ": cannot gather from a scalar");
  int64_t axis = normalizeAxis(node, node.attrInt("axis", 0), data.rank());
  std::vector<int64_t> targets = elementTargets(node, data.dims(), indices, axis);
  Tensor out(data.dtype(), indices.dims());
  for (int64_t u = 0; u < out.elementCount(); ++u)
    copyElements(data, targets[u], out, u);
  return {out};
}

/// For GatherND and ScatterND: the data offset of each index tuple (the last dim of `indices`)
/// and the size of the slice it selects. With `batchDims` = b, the first b dims of data and
/// indices are a shared batch: tuple t of batch β indexes data[β, ...].
struct TupleTargets {
  std::vector<int64_t> offsets; ///< one per tuple, in row-major order of indices[:-1]
  int64_t sliceSize = 1;
  std::vector<int64_t> sliceDims; ///< data dims past the batch and the indexed dims
};

TupleTargets tupleTargets(const Node &node, const std::vector<int64_t> &dataDims,
                          const Tensor &indices, int64_t batchDims) {
  int64_t dataRank = int64_t(dataDims.size()), indicesRank = indices.rank();
  if (indicesRank < 1)
    userError(node.describe(), ": indices must have rank >= 1");
  if (batchDims < 0 || batchDims >= std::min(dataRank, indicesRank))
    userError(node.describe(), ": batch_dims ", batchDims, " must be below the ranks of data (",
              dataRank, ") and indices (", indicesRank, ")");
  for (int64_t d = 0; d < batchDims; ++d)
    if (dataDims[d] != indices.dims()[d])
      userError(node.describe(), ": batch dim ", d, " is ", dataDims[d], " in data but ",
                indices.dims()[d], " in indices");
  int64_t depth = indices.dims().back();
  if (depth < 1 || depth > dataRank - batchDims)
    userError(node.describe(), ": index tuples of length ", depth, " do not fit data of rank ",
              dataRank, " with ", batchDims, " batch dims");

  TupleTargets result;
  result.sliceDims.assign(dataDims.begin() + batchDims + depth, dataDims.end());
  result.sliceSize = productOf(result.sliceDims);
  std::vector<int64_t> dataStrides = stridesOf(dataDims);
  int64_t batchCount = productOf({dataDims.begin(), dataDims.begin() + batchDims});
  int64_t tuples = depth > 0 ? indices.elementCount() / depth : 0;
  int64_t tuplesPerBatch = batchCount > 0 ? tuples / batchCount : 0;
  int64_t batchStride = batchDims > 0 ? dataStrides[batchDims - 1] : 0;
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t offset = (tuplesPerBatch > 0 ? t / tuplesPerBatch : 0) * batchStride;
    for (int64_t j = 0; j < depth; ++j) {
      int64_t d = batchDims + j;
      offset += resolveIndex(node, indices.getInt(t * depth + j), dataDims[d], 1) * dataStrides[d];
    }
    result.offsets.push_back(offset);
  }
  return result;
}

// GatherND: out[indices dims except the last..., slice dims...].
Outputs evalGatherND(const Node &node, const Inputs &inputs) {
  const Tensor &data = requiredInput(node, inputs, 0);
  const Tensor &indices = requiredInput(node, inputs, 1);
  requireIndices(node, indices, 1);
  TupleTargets targets = tupleTargets(node, data.dims(), indices, node.attrInt("batch_dims", 0));
  std::vector<int64_t> outDims(indices.dims().begin(), indices.dims().end() - 1);
  outDims.insert(outDims.end(), targets.sliceDims.begin(), targets.sliceDims.end());
  Tensor out(data.dtype(), outDims);
  for (size_t t = 0; t < targets.offsets.size(); ++t)
    copyElements(data, targets.offsets[t], out, int64_t(t) * targets.sliceSize, targets.sliceSize);
  return {out};
}

// ---- Scatter --------------------------------------------------------------------------------

using Reduction = ScatterReduction;

template <DType D> ComputeType<D> reduce(Reduction reduction, ComputeType<D> a, ComputeType<D> b) {
  using T = ComputeType<D>;
  if constexpr (kIsBool<D>) {
    return reduction == Reduction::Add || reduction == Reduction::Max ? (a || b) : (a && b);
  } else if constexpr (kIsInteger<D>) {
    switch (reduction) {
    case Reduction::Add:
      return wrappingAdd<T>(a, b);
    case Reduction::Mul:
      return wrappingMul<T>(a, b);
    case Reduction::Max:
      return std::max(a, b);
    default:
      return std::min(a, b);
    }
  } else {
    if ((reduction == Reduction::Max || reduction == Reduction::Min) &&
        (std::isnan(a) || std::isnan(b)))
      return std::nan("");
    switch (reduction) {
    case Reduction::Add:
      return a + b;
    case Reduction::Mul:
      return a * b;
    case Reduction::Max:
      return std::max(a, b);
    default:
      return std::min(a, b);
    }
  }
}

/// Starts from a copy of `data` and applies each (target, update) pair in order.
Tensor scatter(const Node &node, const Tensor &data, const Tensor &updates,
               const std::vector<std::pair<int64_t, int64_t>> &writes) {
  if (updates.dtype() != data.dtype())
    userError(node.describe(), ": updates are ", dtypeName(updates.dtype()), " but data is ",
              dtypeName(data.dtype()));
  Tensor out(data.dtype(), data.dims());
  copyElements(data, 0, out, 0, data.elementCount());
  Reduction reduction = scatterReduction(node);
  if (reduction == Reduction::None) {
    for (auto [target, update] : writes)
      copyElements(updates, update, out, target);
    return out;
  }
  visitDType<AllDTypes>(node, data.dtype(), [&](auto tag) {
    constexpr DType D = decltype(tag)::value;
    for (auto [target, update] : writes)
      storeElement<D>(
          out, target,
          reduce<D>(reduction, loadElement<D>(out, target), loadElement<D>(updates, update)));
  });
  return out;
}

Outputs evalScatterElements(const Node &node, const Inputs &inputs) {
  const Tensor &data = requiredInput(node, inputs, 0);
  const Tensor &indices = requiredInput(node, inputs, 1);
  const Tensor &updates = requiredInput(node, inputs, 2);
  requireIndices(node, indices, 1);
  if (data.rank() == 0)
    userError(node.describe(), ": cannot scatter into a scalar");
  if (updates.dims() != indices.dims())
    userError(node.describe(), ": updates ", shapeStr(updates.type().shape), " and indices ",
              shapeStr(indices.type().shape), " differ in shape");
  int64_t axis = normalizeAxis(node, node.attrInt("axis", 0), data.rank());
  std::vector<int64_t> targets = elementTargets(node, data.dims(), indices, axis);
  std::vector<std::pair<int64_t, int64_t>> writes;
  for (size_t u = 0; u < targets.size(); ++u)
    writes.emplace_back(targets[u], int64_t(u));
  return {scatter(node, data, updates, writes)};
}

// ScatterND: updates are [indices dims except the last..., slice dims...]; each index tuple
// selects a slice of data that the matching slice of updates is written into.
Outputs evalScatterND(const Node &node, const Inputs &inputs) {
  const Tensor &data = requiredInput(node, inputs, 0);
  const Tensor &indices = requiredInput(node, inputs, 1);
  const Tensor &updates = requiredInput(node, inputs, 2);
  requireIndices(node, indices, 1);
  TupleTargets targets = tupleTargets(node, data.dims(), indices, 0);
  std::vector<int64_t> expected(indices.dims().begin(), indices.dims().end() - 1);
  expected.insert(expected.end(), targets.sliceDims.begin(), targets.sliceDims.end());
  if (updates.dims() != expected)
    userError(node.describe(), ": updates are ", shapeStr(updates.type().shape), " but must be ",
              shapeStr(shapeOf(expected)));
  std::vector<std::pair<int64_t, int64_t>> writes;
  for (size_t t = 0; t < targets.offsets.size(); ++t)
    for (int64_t e = 0; e < targets.sliceSize; ++e)
      writes.emplace_back(targets.offsets[t] + e, int64_t(t) * targets.sliceSize + e);
  return {scatter(node, data, updates, writes)};
}

Outputs evalCompress(const Node &node, const Inputs &inputs) {
  const Tensor &x = requiredInput(node, inputs, 0);
  const Tensor &condition = requiredInput(node, inputs, 1);
  if (condition.rank() != 1)
    userError(node.describe(), ": condition must be 1-D");
  auto keep = [&](int64_t i) { return i < condition.elementCount() && condition.getInt(i) != 0; };
  if (!node.hasAttr("axis")) {
    std::vector<int64_t> kept;
    for (int64_t i = 0; i < x.elementCount(); ++i)
      if (keep(i))
        kept.push_back(i);
    Tensor out(x.dtype(), {int64_t(kept.size())});
    for (size_t i = 0; i < kept.size(); ++i)
      copyElements(x, kept[i], out, int64_t(i));
    return {out};
  }
  int64_t axis = normalizeAxis(node, node.attrInt("axis", 0), x.rank());
  int64_t outer = 1, inner = 1, length = x.dims()[axis];
  for (int64_t d = 0; d < axis; ++d)
    outer *= x.dims()[d];
  for (int64_t d = axis + 1; d < x.rank(); ++d)
    inner *= x.dims()[d];
  std::vector<int64_t> kept;
  for (int64_t i = 0; i < length; ++i)
    if (keep(i))
      kept.push_back(i);
  std::vector<int64_t> dims = x.dims();
  dims[axis] = int64_t(kept.size());
  Tensor out(x.dtype(), dims);
  for (int64_t o = 0; o < outer; ++o)
    for (size_t k = 0; k < kept.size(); ++k)
      copyElements(x, (o * length + kept[k]) * inner, out, (o * int64_t(kept.size()) + int64_t(k)) * inner, inner);
  return {out};
}

// TensorScatter (opset 24): a copy of past_cache with update written along `axis` (default -2)
// from write_indices[b] (0 when absent) for each batch b; mode "circular" wraps positions
// modulo the cache length, "linear" (the default) must stay inside it.
Outputs evalTensorScatter(const Node &node, const Inputs &inputs) {
  const Tensor &cache = requiredInput(node, inputs, 0);
  const Tensor &update = requiredInput(node, inputs, 1);
  const Tensor *writeIndices = optionalInput(inputs, 2);
  std::string mode = node.attrString("mode", "linear");
  if (mode != "linear" && mode != "circular")
    userError(node.describe(), ": mode '", mode, "' is not linear or circular");
  int rank = cache.rank();
  int64_t axis = node.attrInt("axis", -2);
  if (axis < -rank || axis >= rank || rank < 1)
    userError(node.describe(), ": axis ", axis, " is out of range for rank ", rank);
  if (axis < 0)
    axis += rank;
  if (axis == 0)
    userError(node.describe(), ": axis must not be the batch axis");
  if (update.rank() != rank || update.dtype() != cache.dtype())
    userError(node.describe(), ": update must have the cache's rank and type");
  for (int d = 0; d < rank; ++d)
    if (d == axis ? update.dims()[d] > cache.dims()[d] : update.dims()[d] != cache.dims()[d])
      userError(node.describe(), ": update ", shapeStr(shapeOf(update.dims())), " does not fit cache ",
                shapeStr(shapeOf(cache.dims())), " along axis ", axis);
  Tensor out = cache;
  int64_t length = cache.dims()[axis], steps = update.dims()[axis];
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d)
    outer *= cache.dims()[d];
  for (int d = axis + 1; d < rank; ++d)
    inner *= cache.dims()[d];
  int64_t perBatch = outer / std::max<int64_t>(cache.dims()[0], 1);
  for (int64_t o = 0; o < outer; ++o) {
    int64_t batch = perBatch == 0 ? 0 : o / perBatch;
    int64_t start = writeIndices ? writeIndices->getInt(batch) : 0;
    for (int64_t step = 0; step < steps; ++step) {
      int64_t position = start + step;
      if (mode == "circular")
        position = ((position % length) + length) % length;
      if (position < 0 || position >= length)
        userError(node.describe(), ": write position ", position, " is outside the cache of length ", length);
      copyElements(update, (o * steps + step) * inner, out, (o * length + position) * inner, inner);
    }
  }
  return {out};
}

} // namespace

void registerIndexingRules(RuleTable &table) {
  table.add(OpKind::Gather, evalGather);
  table.add(OpKind::GatherElements, evalGatherElements);
  table.add(OpKind::GatherND, evalGatherND);
  table.add(OpKind::ScatterElements, evalScatterElements);
  table.add(OpKind::ScatterND, evalScatterND);
  table.add(OpKind::Compress, evalCompress);
  table.add(OpKind::TensorScatter, evalTensorScatter);
}

} // namespace sinter::reference
