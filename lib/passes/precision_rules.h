// The precision table that reduce-precision (reduce_precision.h) reads: for each op, whether it
// may read and write float32 data stored as f16/bf16, and which of its inputs carry that data.
// The rules are written once, as a table in precision_rules.cpp; docs/precision.md explains each
// class and why each op family is where it is. An op the table does not list computes and stores
// in float32 (always correct: it sees the types the model declared).
#pragma once

#include "sinter/ir/op.h"

#include <cstdint>

namespace sinter::passes {

enum class PrecisionClass : uint8_t {
  /// Computes in f32 inside its kernel from reduced-precision inputs and stores its result in the
  /// storage type, rounding once: arithmetic, activations, contractions, pooling.
  Reduced,
  /// Moves or selects data without arithmetic: it stores in the type its data arrives in (f32 if
  /// any non-constant data input is f32), so a value kept in f32 passes through views unchanged.
  Follow,
  /// Computes and stores in f32: inputs stored reduced are cast up (the Cast fuses into the
  /// op's kernel as a prologue, so memory traffic stays reduced). Ops whose results leave the
  /// f16 range (Pow, sums).
  Float32,
  /// Float32, and the values it reads are also produced in f32 (their producers do not round):
  /// normalisation statistics, softmax logits, arguments of Exp and of trigonometry (whose
  /// absolute error becomes the result's relative error), and results that are decisions
  /// (indices, comparisons), which a rounding could flip.
  Float32Inputs,
  /// Reads only the shape of its input (Shape, Size): any storage type will do.
  Agnostic,
};

struct PrecisionRule {
  PrecisionClass precision = PrecisionClass::Float32;
  /// Bit i set: input i carries the op's float data (the element type its outputs share). For
  /// variadic ops every bit is set.
  uint32_t dataInputs = 0;
  bool carriesData(int input) const { return input < 32 && (dataInputs >> input & 1u) != 0; }
};

/// The rule for an op; ops the table does not list get {Float32, all inputs}.
const PrecisionRule &precisionRule(OpKind kind);

/// The normalisations whose statistics subtract a mean (Float32Inputs in the table): with
/// --norm-inputs stored they read their inputs as stored, pinning nothing.
bool subtractsMean(OpKind kind);

} // namespace sinter::passes
