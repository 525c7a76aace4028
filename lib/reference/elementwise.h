// Private to the reference evaluator: the loops behind elementwise rules (a map over one tensor,
// a broadcast over two), and the per-file registration of the elementwise family.
#pragma once

#include "dispatch.h"
#include "tensor_index.h"
#include "registry.h"

namespace sinter::reference {

/// Out = fn(x) element by element, for x's dtype in `List`; the output has x's dtype and dims.
/// `fn` takes and returns the dtype's compute type (any type convertible to it).
template <typename List, typename Fn> Tensor mapUnary(const Node &node, const Tensor &x, Fn fn) {
  return visitDType<List>(node, x.dtype(), [&](auto tag) {
    constexpr DType D = decltype(tag)::value;
    Tensor out(D, x.dims());
    for (int64_t i = 0; i < x.elementCount(); ++i)
      storeElement<D>(out, i, fn(loadElement<D>(x, i)));
    return out;
  });
}

/// As mapUnary, but the output has dtype Out; `fn` returns Out's compute type.
template <DType Out, typename List, typename Fn>
Tensor mapUnaryTo(const Node &node, const Tensor &x, Fn fn) {
  return visitDType<List>(node, x.dtype(), [&](auto tag) {
    constexpr DType D = decltype(tag)::value;
    Tensor out(Out, x.dims());
    for (int64_t i = 0; i < x.elementCount(); ++i)
      storeElement<Out>(out, i, fn(loadElement<D>(x, i)));
    return out;
  });
}

/// UserError unless inputs `first` and `second` of `node` have the same dtype.
void requireSameDType(const Node &node, const Inputs &inputs, int first, int second);

/// Out = fn(a, b) with numpy broadcasting, for a's dtype D in `List` (b must have the same dtype).
/// The output dtype is D, or Bool when `fn` returns bool and `kBoolResult` is set (comparisons).
template <typename List, bool kBoolResult = false, typename Fn>
Tensor mapBinary(const Node &node, const Inputs &inputs, Fn fn) {
  requireSameDType(node, inputs, 0, 1);
  const Tensor &a = *inputs[0];
  const Tensor &b = *inputs[1];
  std::vector<int64_t> dims = broadcastDims(node, {a.dims(), b.dims()});
  BroadcastIndexer aIndex(a.dims(), dims), bIndex(b.dims(), dims);
  return visitDType<List>(node, a.dtype(), [&](auto tag) {
    constexpr DType D = decltype(tag)::value;
    constexpr DType Out = kBoolResult ? DType::Bool : D;
    Tensor out(Out, dims);
    for (int64_t i = 0; i < out.elementCount(); ++i)
      storeElement<Out>(out, i, fn(loadElement<D>(a, aIndex(i)), loadElement<D>(b, bIndex(i))));
    return out;
  });
}

// The elementwise family is registered from elementwise.cpp, in parts.
void registerUnaryMathRules(RuleTable &table);  // elementwise_unary.cpp
void registerActivationRules(RuleTable &table); // elementwise_unary.cpp
void registerBinaryRules(RuleTable &table);     // elementwise_binary.cpp
void registerVariadicRules(RuleTable &table);   // elementwise_binary.cpp

} // namespace sinter::reference
