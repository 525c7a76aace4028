// Reference rule for Unique: the distinct elements of X (flattened), or its distinct slices
// along `axis`, in ascending (lexicographic, for slices) order when sorted (the default) or in
// order of first occurrence. Outputs: Y; indices (each Y entry's first occurrence in X);
// inverse_indices (each X entry's place in Y); counts. Slices compare element by element in
// row-major order of the dims other than the axis, as numpy.unique does.
#include "tensor_index.h"
#include "registry.h"
#include "tensor_helpers.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace sinter::reference {
namespace {

template <DType D> Outputs uniqueOf(const Node &node, const Tensor &x) {
  using T = ComputeType<D>;
  bool byAxis = node.hasAttr("axis");
  int64_t axis = byAxis ? normalizeAxis(node, node.attrInt("axis", 0), x.rank()) : 0;
  std::vector<int64_t> dims = byAxis ? x.dims() : std::vector<int64_t>{x.elementCount()};
  AxisSplit split = splitAtAxis(dims, axis);
  // The elements of slice s, in comparison order.
  auto element = [&](int64_t s, int64_t e) { return loadElement<D>(x, split.at(e / split.inner, s, e % split.inner)); };
  int64_t width = split.outer * split.inner;
  // A total order: NaNs after every number and equal to each other.
  auto before = [](T u, T v) {
    if constexpr (kIsFloat<D>) {
      if (std::isnan(u) || std::isnan(v))
        return !std::isnan(u) && std::isnan(v);
    }
    return u < v;
  };
  auto less = [&](int64_t a, int64_t b) {
    for (int64_t e = 0; e < width; ++e) {
      T u = element(a, e), v = element(b, e);
      if (before(u, v))
        return true;
      if (before(v, u))
        return false;
    }
    return false;
  };
  auto equal = [&](int64_t a, int64_t b) { return !less(a, b) && !less(b, a); };

  // Slices in order (stable, so equal slices keep their first occurrence first).
  std::vector<int64_t> order(size_t(split.size));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), less);
  std::vector<int64_t> firsts, groupOf(size_t(split.size)), counts;
  for (size_t i = 0; i < order.size(); ++i) {
    if (i == 0 || !equal(order[i - 1], order[i])) {
      firsts.push_back(order[i]);
      counts.push_back(0);
    }
    groupOf[size_t(order[i])] = int64_t(firsts.size()) - 1;
    ++counts.back();
  }
  // Unsorted: groups in order of their first occurrence.
  std::vector<int64_t> rank(firsts.size());
  std::iota(rank.begin(), rank.end(), 0);
  if (node.attrInt("sorted", 1) == 0)
    std::sort(rank.begin(), rank.end(), [&](int64_t a, int64_t b) { return firsts[size_t(a)] < firsts[size_t(b)]; });
  std::vector<int64_t> place(rank.size());
  for (size_t i = 0; i < rank.size(); ++i)
    place[size_t(rank[i])] = int64_t(i);

  int64_t unique = int64_t(firsts.size());
  std::vector<int64_t> yDims = dims;
  yDims[size_t(axis)] = unique;
  Tensor y(x.dtype(), yDims), indices(DType::Int64, {unique}), inverse(DType::Int64, {split.size}),
      countTensor(DType::Int64, {unique});
  for (int64_t i = 0; i < unique; ++i) {
    int64_t group = rank[size_t(i)], first = firsts[size_t(group)];
    for (int64_t o = 0; o < split.outer; ++o)
      for (int64_t e = 0; e < split.inner; ++e)
        copyElements(x, split.at(o, first, e), y, (o * unique + i) * split.inner + e);
    indices.data<int64_t>()[i] = first;
    countTensor.data<int64_t>()[i] = counts[size_t(group)];
  }
  for (int64_t s = 0; s < split.size; ++s)
    inverse.data<int64_t>()[s] = place[size_t(groupOf[size_t(s)])];
  Outputs outputs = {y, indices, inverse, countTensor};
  outputs.resize(size_t(node.numOutputs()));
  return outputs;
}

Outputs evalUnique(const Node &node, const Inputs &inputs) {
  const Tensor &x = requiredInput(node, inputs, 0);
  return visitDType<AllDTypes>(node, x.dtype(), [&](auto tag) { return uniqueOf<decltype(tag)::value>(node, x); });
}

} // namespace

void registerUniqueRules(RuleTable &table) { table.add(OpKind::Unique, evalUnique); }

} // namespace sinter::reference
