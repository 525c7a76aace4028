// A compiled form of an integer index expression for evaluating it at compile time over many
// points at once: a backend computing a packed constant or a table of offsets evaluates one
// index per element, millions of times for a model's weights, which the tree walk of
// ExprEvaluator does at a few hundred nanoseconds each. IndexProgram flattens the expression
// (a DAG: shared subtrees once) into instructions over slots and runs each instruction over a
// run of values of one variable, so the cost per element is a few arithmetic operations.
//
// It accepts what index arithmetic is made of: integer and bool constants and variables, the
// integer binary operations and comparisons, LogicalAnd/Or, Not, Neg, Select, and Casts between
// Int64, Int32 and Bool; compile() returns nullopt for anything else (loads, floats), and the
// caller falls back to ExprEvaluator. Semantics are ExprEvaluator's: Int64 and Int32 wrap,
// Div and Rem truncate toward zero.
//
//   std::optional<IndexProgram> program = IndexProgram::compile(index);
//   program->setVariable(spec.i, 3);
//   std::span<const int64_t> at = program->evaluate(spec.r, 0, spec.k); // r = 0 .. k-1
#pragma once

#include "sinter/codegen/kernel/kernel_ir.h"

#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

namespace sinter::codegen {

class IndexProgram {
public:
  /// The program of `expr`, or nullopt when it holds something other than index arithmetic.
  static std::optional<IndexProgram> compile(const ExprRef &expr);

  /// Sets a variable the expression reads (variables it reads but never given read as 0).
  void setVariable(int variable, int64_t value);

  /// The expression's values for variable `varying` = first, first + 1, ..., first + count - 1,
  /// the other variables as set. The span lives until the next call.
  std::span<const int64_t> evaluate(int varying, int64_t first, int64_t count);

private:
  enum class Op : uint8_t { Constant, Var, Unary, Binary, Select, Wrap };
  struct Instruction {
    Op op;
    DType type;  ///< the result's type (Int64, Int32 or Bool)
    bool isSigned = true; ///< of the operands, for Div, Rem, Min, Max and comparisons
    UnaryOp unary{};
    BinaryOp binary{};
    int a = -1, b = -1, c = -1; ///< operand slots
    int64_t value = 0;          ///< Constant: the value; Var: the variable id
  };

  int add(const ExprRef &expr, std::unordered_map<const Expr *, int> &seen, bool &ok);

  std::vector<Instruction> instructions_; ///< slot s is computed by instruction s
  std::vector<int64_t> variables_;
  std::vector<int64_t> slots_; ///< instructions_.size() runs of `count`
};

} // namespace sinter::codegen
