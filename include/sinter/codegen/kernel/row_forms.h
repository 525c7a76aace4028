// What an index expression of a kernel's parallel index is along rows, proved from the
// expression's structure: with gid = row * L + column (0 <= column < L, rows starting at
// multiples of L, gid < N), an integer or bool expression of gid alone is *invariant* when it has
// the same value at every column of each row, and *unit* when it is its value at the row's start
// plus the column. A backend that runs a flat kernel in rows (the CPU's cpu_rows.cpp) computes
// such expressions once per row.
//
// The proof carries, for the part of each subexpression that is fixed within a row (its value at
// the row's start), an interval over all rows and a number every such value is a multiple of;
// that is what decides whether a division or remainder of a unit expression stays the same, or
// stays one more per column, across a row:
//
//   gid                      unit,      starts 0 .. N - L, multiples of L
//   div(gid, 14), L = 14     invariant  (each row start is a multiple of 14)
//   rem(div(gid, 196), 232)  invariant  for L dividing 196
//   min(max(x, 0), 115)      x's form   when x's values lie in [0, 115]
//
// It is a sufficient test (what it proves holds at every point; what it cannot prove may still
// hold) and costs nothing per point, so its answer does not depend on N.
#pragma once

#include "sinter/codegen/kernel/kernel_ir.h"

#include <cstdint>
#include <optional>
#include <unordered_map>

namespace sinter::codegen {

enum class AlongRow { Invariant, Unit, Neither };

class RowForms {
public:
  /// Rows of `length` points over a parallel index (variable 0) of `extent` points; `length`
  /// divides `extent`.
  RowForms(int64_t extent, int64_t length);

  /// What `e` (an expression of variable 0 alone, integer or bool) is along a row; Neither when
  /// not proved.
  AlongRow classify(const ExprRef &e);

  /// The value of `e` at the start of every row, when it is proved the same for all rows (a
  /// unit `rem(gid, L)` starts every row at 0).
  std::optional<int64_t> fixedStart(const ExprRef &e);

private:
  /// A subexpression's proved form: value = start(row) + slope * column, slope 0 or 1, with
  /// start(row) in [lo, hi] (when `bounded`) and a multiple of `multiple` (0: always zero).
  struct Form {
    bool proved = false;
    int64_t slope = 0;
    bool bounded = false;
    int64_t lo = 0, hi = 0;
    int64_t multiple = 1;
  };

  Form form(const ExprRef &e);
  int64_t highest(const Form &f) const { return f.hi + f.slope * (length_ - 1); } ///< of the values
  Form compute(const Expr &e);
  Form constant(int64_t value) const;
  Form invariantOf(const Expr &e);
  Form divide(const Form &x, int64_t d, bool remainder) const;
  Form choose(BinaryOp op, const Form &a, const Form &b) const;
  Form compare(BinaryOp op, const Form &a, const Form &b) const;
  /// Whether start mod d <= d - L at every row: a unit expression's floor(x / d) is then the
  /// same across a row, and x mod d one more per column.
  bool staysWithin(const Form &x, int64_t d) const;

  int64_t extent_, length_;
  std::unordered_map<const Expr *, Form> done_;
};

} // namespace sinter::codegen
