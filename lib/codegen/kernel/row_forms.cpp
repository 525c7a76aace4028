// The rules, for a subexpression x = start(row) + s * column (s = 0 or 1) with start in [lo, hi],
// a multiple of g, over columns 0 .. L-1:
//
//   constant k               s = 0, [k, k], multiple |k|
//   gid                      s = 1, [0, N - L], multiple L
//   a + b, a - b             slopes add (must stay 0 or 1), intervals add, gcd of multiples
//   a * b                    both invariant; or one of them the constant 1 (0: the constant 0)
//   x / d, x % d (d > 0)     x >= 0 throughout; invariant x: invariant; unit x: when
//                            start mod d <= d - L at every row (g a multiple of d and L <= d, or
//                            d a multiple of g and L <= g): x / d invariant, x % d unit; when
//                            all of x's values lie in [0, d): x / d is 0 and x % d is x
//   min, max                 both invariant; or the intervals decide which side it is
//   comparisons, select      invariant operands (or a decided comparison, a constant choice)
//   anything else            invariant when every operand is
//
// Integer intervals are kept only while they fit comfortably in int64 (and in int32 for an Int32
// result, which wraps); a rule that needs one fails without it.
#include "sinter/codegen/kernel/row_forms.h"

#include <algorithm>
#include <numeric>

namespace sinter::codegen {
namespace {

constexpr __int128 kLimit = __int128(1) << 60;

bool fits(__int128 value) { return value > -kLimit && value < kLimit; }

bool integral(DType type) { return type == DType::Int64 || type == DType::Int32 || type == DType::Bool; }

} // namespace

RowForms::RowForms(int64_t extent, int64_t length) : extent_(extent), length_(length) {}

AlongRow RowForms::classify(const ExprRef &e) {
  Form f = form(e);
  if (!f.proved)
    return AlongRow::Neither;
  return f.slope == 0 ? AlongRow::Invariant : AlongRow::Unit;
}

std::optional<int64_t> RowForms::fixedStart(const ExprRef &e) {
  Form f = form(e);
  if (!f.proved || !f.bounded || f.lo != f.hi)
    return std::nullopt;
  return f.lo;
}

RowForms::Form RowForms::form(const ExprRef &e) {
  if (auto found = done_.find(e.get()); found != done_.end())
    return found->second;
  Form f = compute(*e);
  // An Int32 result wraps: keep its interval only where it cannot.
  if (f.proved && f.bounded && e->type == DType::Int32 &&
      (f.lo < INT32_MIN || highest(f) > INT32_MAX))
    f = f.slope == 0 ? Form{true, 0, false, 0, 0, 1} : Form{};
  done_[e.get()] = f;
  return f;
}

RowForms::Form RowForms::constant(int64_t value) const {
  const int64_t multiple = value == INT64_MIN ? 1 : value < 0 ? -value : value;
  return Form{true, 0, true, value, value, multiple};
}

// Invariant when every operand is (the node is then a function of the row alone).
RowForms::Form RowForms::invariantOf(const Expr &e) {
  for (const ExprRef &operand : e.operands) {
    Form f = form(operand);
    if (!f.proved || f.slope != 0)
      return Form{};
  }
  return Form{true, 0, false, 0, 0, 1};
}

bool RowForms::staysWithin(const Form &x, int64_t d) const {
  if (x.multiple % d == 0)
    return length_ <= d;
  return x.multiple > 0 && d % x.multiple == 0 && length_ <= x.multiple;
}

RowForms::Form RowForms::divide(const Form &x, int64_t d, bool remainder) const {
  if (!x.bounded || x.lo < 0)
    return Form{};
  if (highest(x) < d) // every value in [0, d)
    return remainder ? x : constant(0);
  if (x.slope == 1 && !staysWithin(x, d))
    return Form{};
  Form f{true, remainder ? x.slope : 0, true, 0, 0, 1};
  if (remainder) {
    f.lo = 0;
    f.hi = x.slope == 1 ? d - length_ : d - 1;
    f.multiple = std::gcd(x.multiple, d);
  } else {
    f.lo = x.lo / d;
    f.hi = x.hi / d;
    f.multiple = x.multiple % d == 0 ? x.multiple / d : 1;
  }
  return f;
}

RowForms::Form RowForms::choose(BinaryOp op, const Form &a, const Form &b) const {
  const bool isMin = op == BinaryOp::Min;
  if (a.bounded && b.bounded) {
    // One side is the answer at every point.
    if (isMin ? highest(a) <= b.lo : a.lo >= highest(b))
      return a;
    if (isMin ? highest(b) <= a.lo : b.lo >= highest(a))
      return b;
  }
  if (a.slope != 0 || b.slope != 0)
    return Form{};
  Form f{true, 0, a.bounded && b.bounded, 0, 0, std::gcd(a.multiple, b.multiple)};
  f.lo = isMin ? std::min(a.lo, b.lo) : std::max(a.lo, b.lo);
  f.hi = isMin ? std::min(a.hi, b.hi) : std::max(a.hi, b.hi);
  return f;
}

RowForms::Form RowForms::compare(BinaryOp op, const Form &a, const Form &b) const {
  if (a.bounded && b.bounded) {
    // Decided by the intervals of all values: a constant.
    const int64_t aLo = a.lo, aHi = highest(a), bLo = b.lo, bHi = highest(b);
    switch (op) {
    case BinaryOp::Lt: if (aHi < bLo) return constant(1); if (aLo >= bHi) return constant(0); break;
    case BinaryOp::Le: if (aHi <= bLo) return constant(1); if (aLo > bHi) return constant(0); break;
    case BinaryOp::Gt: if (aLo > bHi) return constant(1); if (aHi <= bLo) return constant(0); break;
    case BinaryOp::Ge: if (aLo >= bHi) return constant(1); if (aHi < bLo) return constant(0); break;
    default: break;
    }
  }
  if (a.slope != 0 || b.slope != 0)
    return Form{};
  return Form{true, 0, true, 0, 1, 1};
}

RowForms::Form RowForms::compute(const Expr &e) {
  switch (e.kind) {
  case ExprKind::Constant:
    return integral(e.type) ? constant(e.intValue) : Form{true, 0, false, 0, 0, 1};
  case ExprKind::Var:
    if (e.id != 0)
      return Form{};
    return Form{true, 1, true, 0, extent_ - length_, length_};
  case ExprKind::Load:
    return Form{};
  case ExprKind::Binary: {
    Form a = form(e.operands[0]), b = form(e.operands[1]);
    if (!a.proved || !b.proved)
      return Form{};
    if (!integral(e.type))
      return a.slope == 0 && b.slope == 0 ? Form{true, 0, false, 0, 0, 1} : Form{};
    switch (e.binary) {
    case BinaryOp::Add:
    case BinaryOp::Sub: {
      const bool add = e.binary == BinaryOp::Add;
      const int64_t slope = add ? a.slope + b.slope : a.slope - b.slope;
      if (slope != 0 && slope != 1)
        return Form{};
      Form f{true, slope, false, 0, 0, std::gcd(a.multiple, b.multiple)};
      if (a.bounded && b.bounded) {
        __int128 lo = add ? __int128(a.lo) + b.lo : __int128(a.lo) - b.hi;
        __int128 hi = add ? __int128(a.hi) + b.hi : __int128(a.hi) - b.lo;
        if (fits(lo) && fits(hi))
          f = Form{true, slope, true, int64_t(lo), int64_t(hi), f.multiple};
      }
      return f;
    }
    case BinaryOp::Mul: {
      if (a.slope != 0 && b.slope != 0)
        return Form{};
      const Form &unit = a.slope != 0 ? a : b, &other = a.slope != 0 ? b : a;
      if (unit.slope != 0) { // unit times a constant 0 or 1
        if (!other.bounded || other.lo != other.hi || (other.lo != 0 && other.lo != 1))
          return Form{};
        return other.lo == 0 ? constant(0) : unit;
      }
      __int128 product = __int128(a.multiple) * b.multiple;
      Form f{true, 0, false, 0, 0, fits(product) ? int64_t(product) : 1};
      if (a.bounded && b.bounded) {
        __int128 corners[] = {__int128(a.lo) * b.lo, __int128(a.lo) * b.hi, __int128(a.hi) * b.lo,
                              __int128(a.hi) * b.hi};
        __int128 lo = *std::min_element(std::begin(corners), std::end(corners));
        __int128 hi = *std::max_element(std::begin(corners), std::end(corners));
        if (fits(lo) && fits(hi)) {
          f.bounded = true;
          f.lo = int64_t(lo);
          f.hi = int64_t(hi);
        }
      }
      return f;
    }
    case BinaryOp::Div:
    case BinaryOp::Rem:
      if (e.operands[1]->kind != ExprKind::Constant || e.operands[1]->intValue <= 0)
        return a.slope == 0 && b.slope == 0 ? Form{true, 0, false, 0, 0, 1} : Form{};
      return divide(a, e.operands[1]->intValue, e.binary == BinaryOp::Rem);
    case BinaryOp::Min:
    case BinaryOp::Max:
      return choose(e.binary, a, b);
    case BinaryOp::Lt:
    case BinaryOp::Le:
    case BinaryOp::Gt:
    case BinaryOp::Ge:
    case BinaryOp::Eq:
    case BinaryOp::Ne:
      return compare(e.binary, a, b);
    default:
      return a.slope == 0 && b.slope == 0 ? Form{true, 0, false, 0, 0, 1} : Form{};
    }
  }
  case ExprKind::Select: {
    Form c = form(e.operands[0]), a = form(e.operands[1]), b = form(e.operands[2]);
    if (!c.proved || c.slope != 0 || !a.proved || !b.proved)
      return Form{};
    if (c.bounded && c.lo == c.hi)
      return c.lo != 0 ? a : b;
    if (a.slope != b.slope)
      return Form{};
    Form f{true, a.slope, a.bounded && b.bounded, std::min(a.lo, b.lo), std::max(a.hi, b.hi),
           std::gcd(a.multiple, b.multiple)};
    return f;
  }
  case ExprKind::Cast: {
    Form x = form(e.operands[0]);
    if (!x.proved)
      return Form{};
    const DType from = e.operands[0]->type;
    // Between integer types the value is kept (an Int32 result's wrapping is checked in form());
    // to bool it is x != 0.
    if (integral(from) && (e.type == DType::Int64 || e.type == DType::Int32))
      return x;
    return x.slope == 0 ? Form{true, 0, e.type == DType::Bool, 0, 1, 1} : Form{};
  }
  case ExprKind::Unary:
    if (e.unary == UnaryOp::Neg && integral(e.type)) {
      Form x = form(e.operands[0]);
      if (!x.proved || x.slope != 0)
        return Form{};
      return Form{true, 0, x.bounded, -x.hi, -x.lo, x.multiple};
    }
    return invariantOf(e);
  case ExprKind::BitCast:
    return invariantOf(e);
  }
  return Form{};
}

} // namespace sinter::codegen
