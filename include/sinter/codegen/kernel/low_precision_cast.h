// Private to codegen: conversions to and from the low-precision types (float8, f4e2m1 and the
// 4- and 2-bit integers) as kernel-IR integer bit arithmetic, so every backend computes them the
// same way without knowing the formats. The rules are low_precision.h's, bit for bit:
//
//   into a float8 / f4e2m1 code   from the source's IEEE bits (f32, or f64 for f64 and integer
//                                 sources): round to nearest even at the target's precision,
//                                 subnormals included, then NaN, infinity and overflow as
//                                 `saturate` says
//   into f8e8m0                   from the f32 bits: the exponent, rounded up / down / nearest
//   out of a float code           the exact f32 value (built from its bits; subnormals multiply
//                                 the mantissa by a power of two), then an ordinary cast
//   4- and 2-bit integers         sign-extend (or mask) the low bits; into them, integers keep the
//                                 low bits and floats truncate, then keep the low bits (fmod)
#pragma once

#include "sinter/codegen/kernel/kernel_ir.h"
#include "sinter/ir/graph.h"
#include "sinter/ir/low_precision.h"

namespace sinter::codegen {

/// `a` converted to `to` where `a`'s type or `to` (or both) is a low-precision type.
ExprRef castLowPrecision(ExprRef a, DType to, LowPrecisionRounding rounding);

/// UserError when `node` reads or writes a low-precision type and is not an op the code
/// generators handle on them: ops that only move or select elements, Cast, CastLike, BitCast,
/// QuantizeLinear and DequantizeLinear. (Other ops would compute on the elements' bytes.)
void checkLowPrecisionLowering(const Node &node);

} // namespace sinter::codegen
