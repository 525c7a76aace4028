// Private to the reference evaluator: element-type dispatch and typed element access.
//
// A rule that does arithmetic picks the C++ types for a tensor's dtype with visitDType:
//
//   return visitDType<NumericDTypes>(node, x.dtype(), [&](auto tag) {
//     constexpr DType D = decltype(tag)::value;
//     using T = ComputeType<D>;            // double for f32/f64, float for f16/bf16, else itself
//     Tensor out(D, x.dims());
//     for (int64_t i = 0; i < x.elementCount(); ++i)
//       storeElement<D>(out, i, loadElement<D>(x, i) * T(2));
//     return out;
//   });
//
// Only the dtypes in the list are instantiated, so a body may use operations (bit shifts, %) that
// only some types have; any other dtype is a UserError naming the node.
//
// Compute types follow the evaluator's float rule (evaluator.h): f32 computes in double and rounds
// on store, f16 and bf16 compute in float32. Integers compute in their own type; the wrapping
// helpers below keep signed overflow defined (two's complement, as the IR specifies).
#pragma once

#include "sinter/ir/graph.h"
#include "sinter/ir/low_precision.h"
#include "sinter/ir/tensor.h"
#include "sinter/support/error.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <type_traits>
#include <vector>

namespace sinter::reference {

template <DType D> using DTypeConstant = std::integral_constant<DType, D>;

/// Per-dtype C++ types. Storage: the element as it lies in memory. Compute: the type rules do
/// arithmetic in (see the note at the top of this file).
template <DType D> struct DTypeTraits;
#define SINTER_DTYPE_TRAITS(D, StorageT, ComputeT)                                                 \
  template <> struct DTypeTraits<DType::D> {                                                       \
    using Storage = StorageT;                                                                      \
    using Compute = ComputeT;                                                                      \
  };
SINTER_DTYPE_TRAITS(Float32, float, double)
SINTER_DTYPE_TRAITS(Float64, double, double)
SINTER_DTYPE_TRAITS(Float16, uint16_t, float)
SINTER_DTYPE_TRAITS(BFloat16, uint16_t, float)
SINTER_DTYPE_TRAITS(Int8, int8_t, int8_t)
SINTER_DTYPE_TRAITS(Int16, int16_t, int16_t)
SINTER_DTYPE_TRAITS(Int32, int32_t, int32_t)
SINTER_DTYPE_TRAITS(Int64, int64_t, int64_t)
SINTER_DTYPE_TRAITS(Uint8, uint8_t, uint8_t)
SINTER_DTYPE_TRAITS(Uint16, uint16_t, uint16_t)
SINTER_DTYPE_TRAITS(Uint32, uint32_t, uint32_t)
SINTER_DTYPE_TRAITS(Uint64, uint64_t, uint64_t)
SINTER_DTYPE_TRAITS(Bool, uint8_t, bool)
// Low-precision storage types (low_precision.h): floats load as their exact float value, the
// 4- and 2-bit integers as their value in a byte-sized integer.
SINTER_DTYPE_TRAITS(Float8E4M3FN, uint8_t, float)
SINTER_DTYPE_TRAITS(Float8E4M3FNUZ, uint8_t, float)
SINTER_DTYPE_TRAITS(Float8E5M2, uint8_t, float)
SINTER_DTYPE_TRAITS(Float8E5M2FNUZ, uint8_t, float)
SINTER_DTYPE_TRAITS(Float8E8M0, uint8_t, float)
SINTER_DTYPE_TRAITS(Float4E2M1, uint8_t, float)
SINTER_DTYPE_TRAITS(Int4, uint8_t, int8_t)
SINTER_DTYPE_TRAITS(Int2, uint8_t, int8_t)
SINTER_DTYPE_TRAITS(Uint4, uint8_t, uint8_t)
SINTER_DTYPE_TRAITS(Uint2, uint8_t, uint8_t)
#undef SINTER_DTYPE_TRAITS

template <DType D> using StorageType = typename DTypeTraits<D>::Storage;
template <DType D> using ComputeType = typename DTypeTraits<D>::Compute;

template <DType D> constexpr bool kIsFloat =
    D == DType::Float32 || D == DType::Float64 || D == DType::Float16 || D == DType::BFloat16;
template <DType D> constexpr bool kIsBool = D == DType::Bool;
template <DType D> constexpr bool kIsLowPrecisionFloat =
    D == DType::Float8E4M3FN || D == DType::Float8E4M3FNUZ || D == DType::Float8E5M2 ||
    D == DType::Float8E5M2FNUZ || D == DType::Float8E8M0 || D == DType::Float4E2M1;
template <DType D> constexpr bool kIsLowPrecisionInteger =
    D == DType::Int4 || D == DType::Uint4 || D == DType::Int2 || D == DType::Uint2;
/// The integers sinter computes in (not bool, not the 4- and 2-bit storage types).
template <DType D> constexpr bool kIsInteger =
    !kIsFloat<D> && !kIsBool<D> && !kIsLowPrecisionFloat<D> && !kIsLowPrecisionInteger<D>;

// ---- Dtype lists and dispatch ---------------------------------------------------------------

template <DType... Ds> struct DTypeList {};

using FloatDTypes = DTypeList<DType::Float32, DType::Float64, DType::Float16, DType::BFloat16>;
using SignedIntegerDTypes = DTypeList<DType::Int8, DType::Int16, DType::Int32, DType::Int64>;
using UnsignedIntegerDTypes = DTypeList<DType::Uint8, DType::Uint16, DType::Uint32, DType::Uint64>;
using IntegerDTypes = DTypeList<DType::Int8, DType::Int16, DType::Int32, DType::Int64,
                                DType::Uint8, DType::Uint16, DType::Uint32, DType::Uint64>;
/// Floats and integers (not bool).
using NumericDTypes = DTypeList<DType::Float32, DType::Float64, DType::Float16, DType::BFloat16,
                                DType::Int8, DType::Int16, DType::Int32, DType::Int64, DType::Uint8,
                                DType::Uint16, DType::Uint32, DType::Uint64>;
/// Floats and signed integers (ops whose result may be negative, e.g. Neg, Sign).
using SignedNumericDTypes = DTypeList<DType::Float32, DType::Float64, DType::Float16,
                                      DType::BFloat16, DType::Int8, DType::Int16, DType::Int32,
                                      DType::Int64>;
using AllDTypes = DTypeList<DType::Float32, DType::Float64, DType::Float16, DType::BFloat16,
                            DType::Int8, DType::Int16, DType::Int32, DType::Int64, DType::Uint8,
                            DType::Uint16, DType::Uint32, DType::Uint64, DType::Bool>;
using BoolDTypes = DTypeList<DType::Bool>;
/// The storage-only types (low_precision.h); rules that only move bytes take them as well.
using LowPrecisionDTypes =
    DTypeList<DType::Float8E4M3FN, DType::Float8E4M3FNUZ, DType::Float8E5M2,
              DType::Float8E5M2FNUZ, DType::Float8E8M0, DType::Float4E2M1, DType::Int4,
              DType::Uint4, DType::Int2, DType::Uint2>;

/// UserError: `node` does not support element type `dtype`.
[[noreturn]] inline void unsupportedDType(const Node &node, DType dtype) {
  userError(node.describe(), ": element type ", dtypeName(dtype), " is not supported by ",
            node.opName());
}

namespace detail {
template <typename Fn, DType First, DType... Rest>
decltype(auto) visitDTypeIn(const Node &node, DType dtype, Fn &&fn) {
  if (dtype == First)
    return fn(DTypeConstant<First>{});
  if constexpr (sizeof...(Rest) == 0)
    unsupportedDType(node, dtype);
  else
    return visitDTypeIn<Fn, Rest...>(node, dtype, std::forward<Fn>(fn));
}
template <typename List> struct Visitor;
template <DType... Ds> struct Visitor<DTypeList<Ds...>> {
  template <typename Fn> static decltype(auto) visit(const Node &node, DType dtype, Fn &&fn) {
    return visitDTypeIn<Fn, Ds...>(node, dtype, std::forward<Fn>(fn));
  }
};
} // namespace detail

/// Calls `fn(DTypeConstant<D>{})` for the D equal to `dtype`, instantiating `fn` only for the
/// dtypes in `List`; any other dtype is a UserError naming `node`. Every instantiation must return
/// the same type.
template <typename List, typename Fn> decltype(auto) visitDType(const Node &node, DType dtype, Fn &&fn) {
  return detail::Visitor<List>::visit(node, dtype, std::forward<Fn>(fn));
}

/// True when `dtype` is in `List`.
template <DType... Ds> constexpr bool dtypeIn(DTypeList<Ds...>, DType dtype) {
  return ((dtype == Ds) || ...);
}

// ---- Rounding between floats ----------------------------------------------------------------

/// Rounds a double to the nearest float16 / bfloat16 (ties to even) with a single rounding: the
/// double is first narrowed to float with round-to-odd, which float's 13 spare bits make exact.
inline float narrowToFloatRoundToOdd(double value) {
  float narrowed = static_cast<float>(value);
  if (!std::isfinite(value) || static_cast<double>(narrowed) == value)
    return narrowed;
  if (std::fabs(static_cast<double>(narrowed)) > std::fabs(value))
    narrowed = std::nextafter(narrowed, 0.0f); // truncate toward zero (inf becomes FLT_MAX)
  return std::bit_cast<float>(std::bit_cast<uint32_t>(narrowed) | 1u);
}
inline uint16_t doubleToHalf(double value) { return floatToHalf(narrowToFloatRoundToOdd(value)); }
inline uint16_t doubleToBfloat16(double value) {
  return floatToBfloat16(narrowToFloatRoundToOdd(value));
}

// ---- Element access -------------------------------------------------------------------------

/// Element `i` of `tensor` (whose dtype must be D) in D's compute type.
template <DType D> ComputeType<D> loadElement(const Tensor &tensor, int64_t i) {
  StorageType<D> stored = tensor.data<StorageType<D>>()[i];
  if constexpr (D == DType::Float16)
    return halfToFloat(stored);
  else if constexpr (D == DType::BFloat16)
    return bfloat16ToFloat(stored);
  else if constexpr (D == DType::Bool)
    return stored != 0;
  else if constexpr (kIsLowPrecisionFloat<D>)
    return lowPrecisionFloatValue(D, stored);
  else if constexpr (kIsLowPrecisionInteger<D>)
    return static_cast<ComputeType<D>>(lowPrecisionIntegerValue(D, stored));
  else
    return stored;
}

/// Stores `value` (D's compute type) into element `i`, rounding floats to nearest even (into a
/// low-precision float with Cast's default rules: saturating, f8e8m0 rounding up).
template <DType D> void storeElement(Tensor &tensor, int64_t i, ComputeType<D> value) {
  StorageType<D> *data = tensor.data<StorageType<D>>();
  if constexpr (kIsLowPrecisionFloat<D>)
    data[i] = encodeLowPrecisionFloat(D, value);
  else if constexpr (kIsLowPrecisionInteger<D>)
    data[i] = wrapToLowPrecisionInteger(D, value);
  else if constexpr (D == DType::Float16)
    data[i] = floatToHalf(value);
  else if constexpr (D == DType::BFloat16)
    data[i] = floatToBfloat16(value);
  else if constexpr (D == DType::Bool)
    data[i] = value ? 1 : 0;
  else
    data[i] = static_cast<StorageType<D>>(value);
}

// ---- Conversions between element types -----------------------------------------------------

/// A float converted to integer type T: truncated toward zero, NaN to 0, and saturated to T's
/// range (ONNX leaves out-of-range conversions undefined; saturating keeps them deterministic).
template <typename T> T saturatingFloatToInteger(double value) {
  if (std::isnan(value))
    return T(0);
  value = std::trunc(value);
  // Both limits are powers of two (or zero), exactly representable as double.
  constexpr double low = static_cast<double>(std::numeric_limits<T>::min());
  constexpr double high = static_cast<double>(std::numeric_limits<T>::max()) + 1.0;
  if (value < low)
    return std::numeric_limits<T>::min();
  if (value >= high)
    return std::numeric_limits<T>::max();
  return static_cast<T>(value);
}

/// Converts a value of type From (a compute type) into To's compute type, with Cast's rules:
/// float to integer truncates and saturates (above); integer to integer wraps; anything to bool is
/// "not zero" (NaN is true); float to narrower float rounds to nearest even once. Into the 4- and
/// 2-bit integers a float truncates and then wraps like an integer (what ONNX's reference does).
template <DType To, typename From> ComputeType<To> convertValue(From value) {
  using Target = ComputeType<To>;
  if constexpr (To == DType::Bool) {
    return value != From(0);
  } else if constexpr (std::is_same_v<From, bool>) {
    return Target(value ? 1 : 0);
  } else if constexpr (kIsLowPrecisionFloat<To>) {
    // Rounded once, from the exact value, with Cast's default rules (saturating).
    return lowPrecisionFloatValue(To, encodeLowPrecisionFloat(To, static_cast<double>(value)));
  } else if constexpr (kIsLowPrecisionInteger<To>) {
    uint8_t byte = std::is_floating_point_v<From>
                       ? truncateToLowPrecisionInteger(To, static_cast<double>(value))
                       : wrapToLowPrecisionInteger(To, static_cast<int64_t>(value));
    return static_cast<Target>(lowPrecisionIntegerValue(To, byte));
  } else if constexpr (kIsInteger<To>) {
    if constexpr (std::is_floating_point_v<From>)
      return saturatingFloatToInteger<Target>(static_cast<double>(value));
    else
      return static_cast<Target>(value); // modular (C++20)
  } else if constexpr (To == DType::Float16) {
    // Target is float; keep the value exactly representable in float so the store rounds once.
    if constexpr (std::is_same_v<From, double>)
      return halfToFloat(doubleToHalf(value));
    else if constexpr (std::is_integral_v<From>)
      return halfToFloat(doubleToHalf(static_cast<double>(value)));
    else
      return value;
  } else if constexpr (To == DType::BFloat16) {
    if constexpr (std::is_same_v<From, double>)
      return bfloat16ToFloat(doubleToBfloat16(value));
    else if constexpr (std::is_integral_v<From>)
      return bfloat16ToFloat(doubleToBfloat16(static_cast<double>(value)));
    else
      return value;
  } else if constexpr (To == DType::Float32) {
    // Round to float once (int64 -> double -> float would round twice), then widen.
    return static_cast<double>(static_cast<float>(value));
  } else {
    return static_cast<double>(value);
  }
}

/// Element `i` of any tensor as double (exact for every dtype except 64-bit integers > 2^53).
double loadAsDouble(const Tensor &tensor, int64_t i);
/// Stores a double into element `i` with convertValue's rules (float to integer saturates).
void storeFromDouble(Tensor &tensor, int64_t i, double value);
/// Converts a whole tensor to `to` with Cast's rules; `rounding` is Cast's saturate and
/// round_mode, for the low-precision floats.
Tensor convertTensor(const Node &node, const Tensor &input, DType to,
                     LowPrecisionRounding rounding = {});

// ---- Wrapping integer arithmetic ------------------------------------------------------------

/// Two's complement a + b, a - b, a * b in T (no undefined signed overflow).
template <typename T> T wrappingAdd(T a, T b) {
  return static_cast<T>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
template <typename T> T wrappingSub(T a, T b) {
  return static_cast<T>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
template <typename T> T wrappingMul(T a, T b) {
  return static_cast<T>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}
template <typename T> T wrappingNeg(T a) { return wrappingSub<T>(T(0), a); }

// ---- Small input helpers --------------------------------------------------------------------

/// The integer values of an optional 1-D or scalar int32/int64 input (e.g. axes), or nullopt when
/// the input is absent. UserError naming the node and input index for another dtype.
std::optional<std::vector<int64_t>> optionalIntsInput(const Node &node, const Tensor *input,
                                                      int inputIndex);
/// The single value of a scalar (or one-element) integer input; `fallback` when it is absent.
int64_t scalarIntInput(const Node &node, const Tensor *input, int inputIndex, int64_t fallback);

} // namespace sinter::reference
