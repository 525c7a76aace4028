// Evaluates kernel-IR expressions (kernel_ir.h) on the host, at compile time: a backend uses it to
// compute an operand that reads only constants (a convolution's weights, a MatMul's initializer
// B) into the layout its loops read, so the kernel loads pre-packed data.
//
// Semantics follow kernel_ir.h: integers wrap, Div and Rem truncate toward zero, Min and Max
// propagate NaN, f32 results are rounded to f32 after every operation; float-to-integer casts
// saturate (NaN gives 0), as the LLVM emitter's fptosi.sat does.
//
//   ExprEvaluator eval(kernel);
//   eval.setBuffer(1, weights.data());   // buffer 1 of the kernel is a constant
//   eval.setVariable(spec.i, 3);
//   double w = eval.evaluate(spec.lhs).floatValue;
#pragma once

#include "sinter/codegen/kernel/kernel_ir.h"

#include <cstdint>
#include <vector>

namespace sinter::codegen {

/// A scalar of some dtype: floats in `floatValue`, integers and bools in `intValue` (u64 as its
/// two's-complement bits).
struct ScalarValue {
  double floatValue = 0;
  int64_t intValue = 0;
};

class ExprEvaluator {
public:
  explicit ExprEvaluator(const Kernel &kernel);

  /// The data of buffer `buffer` (dtype and element count as the kernel declares them).
  void setBuffer(int buffer, const void *data);
  /// Sets an integer variable (loop counters, indices) or a float one.
  void setVariable(int variable, int64_t value);
  void setFloatVariable(int variable, double value);

  /// Whether `expr` reads only buffers given to setBuffer and uses only operations this
  /// evaluator implements (everything but the transcendental unary functions it lacks).
  bool canEvaluate(const ExprRef &expr) const;

  /// The value of `expr`. Throws InternalError when canEvaluate(expr) is false or a load is out
  /// of its buffer's bounds.
  ScalarValue evaluate(const ExprRef &expr) const;

private:
  ScalarValue load(const Expr &e) const;

  const Kernel &kernel_;
  std::vector<const void *> buffers_;
  std::vector<ScalarValue> variables_;
};

} // namespace sinter::codegen
