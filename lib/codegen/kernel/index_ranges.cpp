#include "sinter/codegen/kernel/index_ranges.h"

#include <algorithm>
#include <limits>
#include <numeric>

namespace sinter::codegen {
namespace {

constexpr int64_t kMin32 = std::numeric_limits<int32_t>::min();
constexpr int64_t kMax32 = std::numeric_limits<int32_t>::max();

std::optional<IndexRange> checked(__int128 lo, __int128 hi) {
  if (lo < std::numeric_limits<int64_t>::min() || hi > std::numeric_limits<int64_t>::max())
    return std::nullopt;
  return IndexRange{int64_t(lo), int64_t(hi)};
}

/// a * b, when it fits int64.
std::optional<int64_t> product(int64_t a, int64_t b) {
  std::optional<IndexRange> range = checked(__int128(a) * b, __int128(a) * b);
  return range ? std::optional<int64_t>(range->lo) : std::nullopt;
}

IndexRange unite(IndexRange a, IndexRange b) { return {std::min(a.lo, b.lo), std::max(a.hi, b.hi)}; }

/// The values a narrow integer type can hold.
std::optional<IndexRange> typeRange(DType type) {
  switch (type) {
  case DType::Bool: return IndexRange{0, 1};
  case DType::Int8: return IndexRange{-128, 127};
  case DType::Uint8: return IndexRange{0, 255};
  case DType::Int16: return IndexRange{-32768, 32767};
  case DType::Uint16: return IndexRange{0, 65535};
  case DType::Int32: return IndexRange{kMin32, kMax32};
  default: return std::nullopt;
  }
}

} // namespace

IndexRanges::IndexRanges(const Kernel &kernel) {
  variables_[0] = IndexRange{0, std::max<int64_t>(kernel.parallelExtent - 1, 0)};
  collect(kernel.body);
}

void IndexRanges::collect(const std::vector<StmtRef> &statements) {
  for (const StmtRef &s : statements) {
    if (s->kind == StmtKind::Assign)
      assigned_[s->id].push_back(s->a);
    if (s->kind == StmtKind::For)
      loops_[s->id].push_back(s->a);
    collect(s->body);
    collect(s->orElse);
  }
}

void IndexRanges::setVariable(int id, IndexRange range) {
  variables_[id] = range;
  memo_.clear();
  fits_.clear();
  simplified_.clear();
}

std::optional<IndexRange> IndexRanges::variable(int id) {
  if (auto it = variables_.find(id); it != variables_.end())
    return it->second;
  if (inProgress_.count(id))
    return std::nullopt; // assigned from itself: an accumulator, not an index
  inProgress_.insert(id);
  std::optional<IndexRange> range;
  bool unknown = !assigned_.count(id) && !loops_.count(id);
  for (const ExprRef &extent : loops_[id]) {
    std::optional<IndexRange> e = of(extent);
    if (!e) {
      unknown = true;
      break;
    }
    IndexRange loop{0, std::max<int64_t>(e->hi - 1, 0)};
    range = range ? unite(*range, loop) : loop;
  }
  for (const ExprRef &value : assigned_[id]) {
    if (unknown)
      break;
    std::optional<IndexRange> v = of(value);
    if (!v) {
      unknown = true;
      break;
    }
    range = range ? unite(*range, *v) : *v;
  }
  inProgress_.erase(id);
  // Variables start at 0 (the backends zero-initialise them).
  if (!unknown && range)
    range = unite(*range, IndexRange{0, 0});
  variables_[id] = unknown ? std::nullopt : range;
  // Results computed while this variable was in progress may be too pessimistic.
  memo_.clear();
  simplified_.clear();
  return variables_[id];
}

std::optional<IndexRange> IndexRanges::of(const ExprRef &e) {
  if (isFloat(e->type))
    return std::nullopt;
  if (auto it = memo_.find(e.get()); it != memo_.end())
    return it->second.second;
  std::optional<IndexRange> result;
  switch (e->kind) {
  case ExprKind::Constant: result = IndexRange{e->intValue, e->intValue}; break;
  case ExprKind::Var: result = variable(e->id); break;
  case ExprKind::Load: result = typeRange(e->type); break;
  case ExprKind::Cast: {
    std::optional<IndexRange> inner = isFloat(e->operands[0]->type) ? std::nullopt : of(e->operands[0]);
    std::optional<IndexRange> target = typeRange(e->type);
    if (e->type == DType::Int64 && inner)
      result = inner;
    else if (target && inner && inner->lo >= target->lo && inner->hi <= target->hi)
      result = inner;
    else
      result = target;
    break;
  }
  case ExprKind::BitCast: result = typeRange(e->type); break;
  case ExprKind::Select: {
    std::optional<IndexRange> a = of(e->operands[1]), b = of(e->operands[2]);
    if (a && b)
      result = unite(*a, *b);
    break;
  }
  case ExprKind::Unary: result = typeRange(e->type); break;
  case ExprKind::Binary: {
    if (isComparison(e->binary)) {
      result = IndexRange{0, 1};
      break;
    }
    std::optional<IndexRange> a = of(e->operands[0]), b = of(e->operands[1]);
    if (!a || !b)
      break;
    __int128 alo = a->lo, ahi = a->hi, blo = b->lo, bhi = b->hi;
    switch (e->binary) {
    case BinaryOp::Add: result = checked(alo + blo, ahi + bhi); break;
    case BinaryOp::Sub: result = checked(alo - bhi, ahi - blo); break;
    case BinaryOp::Mul: {
      __int128 c[] = {alo * blo, alo * bhi, ahi * blo, ahi * bhi};
      result = checked(*std::min_element(c, c + 4), *std::max_element(c, c + 4));
      break;
    }
    case BinaryOp::Div:
      // Truncating division by a positive constant is monotonic.
      if (blo == bhi && blo > 0)
        result = IndexRange{int64_t(alo / blo), int64_t(ahi / blo)};
      break;
    case BinaryOp::Rem:
      if (blo == bhi && blo > 0) {
        int64_t bound = int64_t(blo) - 1;
        result = a->lo >= 0 ? IndexRange{0, std::min(a->hi, bound)} : IndexRange{-bound, bound};
      }
      break;
    case BinaryOp::Min: result = IndexRange{std::min(a->lo, b->lo), std::min(a->hi, b->hi)}; break;
    case BinaryOp::Max: result = IndexRange{std::max(a->lo, b->lo), std::max(a->hi, b->hi)}; break;
    default: result = typeRange(e->type); break;
    }
    break;
  }
  }
  memo_[e.get()] = {e, result};
  return result;
}

bool IndexRanges::fits32(const ExprRef &e) {
  if (e->type != DType::Int64)
    return false;
  if (auto it = fits_.find(e.get()); it != fits_.end())
    return it->second.second;
  std::optional<IndexRange> range = of(e);
  bool fits = range && range->lo >= kMin32 && range->hi <= kMax32;
  if (fits) {
    switch (e->kind) {
    case ExprKind::Constant:
    case ExprKind::Var: break;
    case ExprKind::Binary:
      fits = fits32(e->operands[0]) && fits32(e->operands[1]);
      if (fits && e->binary != BinaryOp::Add && e->binary != BinaryOp::Sub && e->binary != BinaryOp::Mul &&
          e->binary != BinaryOp::Div && e->binary != BinaryOp::Rem && e->binary != BinaryOp::Min &&
          e->binary != BinaryOp::Max)
        fits = false;
      break;
    case ExprKind::Select: fits = fits32(e->operands[1]) && fits32(e->operands[2]); break;
    default: fits = false; break; // loads and casts keep their own arithmetic
    }
  }
  fits_[e.get()] = {e, fits};
  return fits;
}

namespace {

bool isIntConstant(const ExprRef &e) { return e->kind == ExprKind::Constant && isInteger(e->type); }

/// The terms of `scale` * e as a sum: through Add, and through products by constants, which
/// distribute ((a * 64 + r) * 128 is a * 8192 + r * 128). False if a coefficient overflows.
bool flattenSum(const ExprRef &e, int64_t scale, std::vector<ExprRef> &terms) {
  if (e->kind == ExprKind::Binary && e->binary == BinaryOp::Add)
    return flattenSum(e->operands[0], scale, terms) && flattenSum(e->operands[1], scale, terms);
  if (e->kind == ExprKind::Binary && e->binary == BinaryOp::Mul)
    for (int side = 0; side < 2; ++side)
      if (isIntConstant(e->operands[side])) {
        std::optional<int64_t> coefficient = product(scale, e->operands[side]->intValue);
        return coefficient && flattenSum(e->operands[1 - side], *coefficient, terms);
      }
  if (isIntConstant(e)) {
    std::optional<int64_t> value = product(scale, e->intValue);
    if (!value)
      return false;
    terms.push_back(intConstant(*value, e->type));
  } else {
    terms.push_back(scale == 1 ? e : binary(BinaryOp::Mul, e, intConstant(scale, e->type)));
  }
  return true;
}

ExprRef sumOf(const std::vector<ExprRef> &terms, DType type) {
  ExprRef sum;
  for (const ExprRef &term : terms)
    sum = sum ? binary(BinaryOp::Add, sum, term) : term;
  return sum ? sum : intConstant(0, type);
}

/// term / n for a term that multipleOf(term, n) shows divisible; null when its form is not one
/// this divides (then the term is not treated as a multiple).
ExprRef divideExact(const ExprRef &term, int64_t n) {
  if (isIntConstant(term))
    return term->intValue % n == 0 ? intConstant(term->intValue / n, term->type) : nullptr;
  if (term->kind != ExprKind::Binary)
    return nullptr;
  const ExprRef &a = term->operands[0], &b = term->operands[1];
  switch (term->binary) {
  case BinaryOp::Mul:
    for (int side = 0; side < 2; ++side) {
      const ExprRef &factor = side ? a : b, &other = side ? b : a;
      if (isIntConstant(factor) && factor->intValue % n == 0)
        return factor->intValue == n ? other : binary(BinaryOp::Mul, other, intConstant(factor->intValue / n, factor->type));
    }
    for (int side = 0; side < 2; ++side) {
      const ExprRef &factor = side ? b : a, &other = side ? a : b;
      if (multipleOf(factor, n))
        if (ExprRef divided = divideExact(factor, n))
          return binary(BinaryOp::Mul, divided, other);
    }
    return nullptr;
  case BinaryOp::Add:
  case BinaryOp::Sub: {
    ExprRef left = divideExact(a, n), right = divideExact(b, n);
    return left && right ? binary(term->binary, left, right) : nullptr;
  }
  default: return nullptr;
  }
}

/// `sum` with each pair of terms div(x, n) * (n * c) and rem(x, n) * c replaced by x * c (an
/// identity for any x and n != 0: an index unravelled over dims and ravelled back, as a plane's
/// position r read as (r / W, r % W) is (r / W) * W + r % W). `sum` itself when there is none.
ExprRef recombinedQuotients(const ExprRef &sum) {
  std::vector<ExprRef> terms;
  if (!flattenSum(sum, 1, terms))
    return sum;
  // A term as (factor, coefficient): factor * coefficient, the coefficient 1 when there is none.
  auto split = [](const ExprRef &term) -> std::pair<ExprRef, int64_t> {
    if (term->kind == ExprKind::Binary && term->binary == BinaryOp::Mul && isIntConstant(term->operands[1]))
      return {term->operands[0], term->operands[1]->intValue};
    return {term, 1};
  };
  auto byConstant = [](const ExprRef &e, BinaryOp op) {
    return e->kind == ExprKind::Binary && e->binary == op && isIntConstant(e->operands[1]) &&
           e->operands[1]->intValue != 0;
  };
  bool changed = false;
  for (size_t q = 0; q < terms.size(); ++q) {
    auto [quotient, scaled] = split(terms[q]);
    if (!byConstant(quotient, BinaryOp::Div))
      continue;
    const int64_t n = quotient->operands[1]->intValue;
    for (size_t r = 0; r < terms.size(); ++r) {
      auto [remainder, c] = split(terms[r]);
      if (r == q || !byConstant(remainder, BinaryOp::Rem) || remainder->operands[1]->intValue != n ||
          product(n, c) != std::optional<int64_t>(scaled) ||
          !structurallyEqual(quotient->operands[0], remainder->operands[0]))
        continue;
      const ExprRef &x = quotient->operands[0];
      terms[q] = c == 1 ? x : binary(BinaryOp::Mul, x, intConstant(c, x->type));
      terms.erase(terms.begin() + long(r));
      q -= r < q ? 1 : 0;
      changed = true;
      break;
    }
  }
  return changed ? sumOf(terms, sum->type) : sum;
}

} // namespace

ExprRef IndexRanges::simplify(const ExprRef &e) {
  if (e->operands.empty())
    return e;
  // Each distinct node once, so that a shared subexpression stays shared in the result.
  if (auto done = simplified_.find(e.get()); done != simplified_.end())
    return done->second.second;
  ExprRef result = simplifyNode(e);
  simplified_[e.get()] = {e, result};
  return result;
}

ExprRef IndexRanges::simplifyNode(const ExprRef &e) {
  std::vector<ExprRef> operands;
  bool changed = false;
  for (const ExprRef &operand : e->operands) {
    operands.push_back(simplify(operand));
    changed |= operands.back() != operand;
  }
  ExprRef current = e;
  if (changed) {
    auto copy = std::make_shared<Expr>(*e);
    copy->operands = operands;
    current = copy;
  }
  if (current->kind == ExprKind::Binary && current->binary == BinaryOp::Add && isInteger(current->type))
    return recombinedQuotients(current);
  if (current->kind != ExprKind::Binary || !isInteger(current->type) ||
      (current->binary != BinaryOp::Div && current->binary != BinaryOp::Rem) || !isIntConstant(current->operands[1]) ||
      current->operands[1]->intValue <= 0)
    return current;
  const int64_t n = current->operands[1]->intValue;
  const ExprRef &dividend = current->operands[0];
  const DType type = current->type;
  // div(div(x, a), n) = div(x, a * n) for x >= 0.
  if (current->binary == BinaryOp::Div && dividend->kind == ExprKind::Binary && dividend->binary == BinaryOp::Div &&
      isIntConstant(dividend->operands[1]) && dividend->operands[1]->intValue > 0) {
    std::optional<IndexRange> inner = of(dividend->operands[0]);
    std::optional<int64_t> divisor = product(dividend->operands[1]->intValue, n);
    if (inner && inner->lo >= 0 && divisor)
      return simplify(binary(BinaryOp::Div, dividend->operands[0], intConstant(*divisor, type)));
  }
  std::vector<ExprRef> terms;
  if (!flattenSum(dividend, 1, terms))
    return current;
  // A divisor d of n that splits the terms into multiples of d (non-negative in sum) and a rest
  // in [0, d): then div(sum, n) = div(multiples / d, n / d), and rem(sum, n) =
  // rem(multiples / d, n / d) * d + rest. The candidates are n's common factors with the
  // terms' coefficients, largest first (d = n takes the division out altogether).
  auto coefficient = [](const ExprRef &term) -> int64_t {
    if (isIntConstant(term))
      return term->intValue;
    if (term->kind == ExprKind::Binary && term->binary == BinaryOp::Mul && isIntConstant(term->operands[1]))
      return term->operands[1]->intValue;
    return 1;
  };
  std::vector<int64_t> candidates = {n};
  for (const ExprRef &term : terms) {
    int64_t c = coefficient(term), d = std::gcd(c < 0 ? -c : c, n);
    if (c != 0 && d > 1)
      candidates.push_back(d);
  }
  std::sort(candidates.rbegin(), candidates.rend());
  candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
  for (int64_t d : candidates) {
    std::vector<ExprRef> multiples, quotients, rest;
    for (const ExprRef &term : terms) {
      ExprRef quotient = multipleOf(term, d) ? divideExact(term, d) : nullptr;
      if (quotient) {
        multiples.push_back(term);
        quotients.push_back(quotient);
      } else {
        rest.push_back(term);
      }
    }
    if (multiples.empty() || (d < n && rest.empty()))
      continue;
    std::optional<IndexRange> multipleRange = of(sumOf(multiples, type));
    ExprRef restSum = sumOf(rest, type);
    std::optional<IndexRange> restRange = of(restSum);
    if (!multipleRange || multipleRange->lo < 0 || !restRange || restRange->lo < 0)
      continue;
    ExprRef quotient = sumOf(quotients, type);
    if (restRange->hi >= d) {
      // A rest of any size, when d = n: div(n * q + rest, n) = q + div(rest, n) and
      // rem(n * q + rest, n) = rem(rest, n), both sides non-negative. A head index read back
      // through [batch * heads] is (position * 384 + bh) / 12: position * 32 + bh / 12, whose
      // remainder by 32 is then bh / 12 alone.
      if (d != n || rest.empty())
        continue;
      ExprRef restPart = simplify(binary(current->binary, restSum, intConstant(n, type)));
      return current->binary == BinaryOp::Div ? binary(BinaryOp::Add, quotient, restPart) : restPart;
    }
    if (d == n)
      return current->binary == BinaryOp::Div ? quotient : restSum;
    ExprRef reduced = simplify(binary(current->binary, quotient, intConstant(n / d, type)));
    if (current->binary == BinaryOp::Div)
      return reduced;
    ExprRef scaled = binary(BinaryOp::Mul, reduced, intConstant(d, type));
    return rest.empty() ? scaled : binary(BinaryOp::Add, scaled, restSum);
  }
  return current;
}

StmtRef IndexRanges::simplify(const StmtRef &statement) {
  return withExpressions(statement, [&](const ExprRef &e) { return simplify(e); });
}

Kernel withSimplifiedIndices(const Kernel &kernel) {
  IndexRanges ranges(kernel);
  Kernel simplified = kernel;
  for (StmtRef &statement : simplified.body)
    statement = ranges.simplify(statement);
  return simplified;
}

} // namespace sinter::codegen
