#include "sinter/codegen/kernel/index_program.h"

#include "sinter/support/error.h"

#include <algorithm>
#include <limits>

namespace sinter::codegen {

namespace {

bool isIndexType(DType type) { return type == DType::Int64 || type == DType::Int32 || type == DType::Bool; }

int64_t wrap(uint64_t bits, DType type) {
  switch (type) {
  case DType::Bool: return bits != 0;
  case DType::Int32: return int32_t(uint32_t(bits));
  default: return int64_t(bits);
  }
}

} // namespace

std::optional<IndexProgram> IndexProgram::compile(const ExprRef &expr) {
  IndexProgram program;
  std::unordered_map<const Expr *, int> seen;
  bool ok = true;
  program.add(expr, seen, ok);
  if (!ok)
    return std::nullopt;
  return program;
}

int IndexProgram::add(const ExprRef &expr, std::unordered_map<const Expr *, int> &seen, bool &ok) {
  if (!ok)
    return -1;
  if (auto it = seen.find(expr.get()); it != seen.end())
    return it->second;
  const Expr &e = *expr;
  if (!isIndexType(e.type)) {
    ok = false;
    return -1;
  }
  Instruction instruction{};
  instruction.type = e.type;
  switch (e.kind) {
  case ExprKind::Constant:
    instruction.op = Op::Constant;
    instruction.value = e.intValue;
    break;
  case ExprKind::Var:
    instruction.op = Op::Var;
    instruction.value = e.id;
    break;
  case ExprKind::Cast:
    if (!isIndexType(e.operands[0]->type)) {
      ok = false;
      return -1;
    }
    instruction.op = Op::Wrap;
    instruction.a = add(e.operands[0], seen, ok);
    break;
  case ExprKind::Unary:
    if (e.unary != UnaryOp::Neg && e.unary != UnaryOp::Not) {
      ok = false;
      return -1;
    }
    instruction.op = Op::Unary;
    instruction.unary = e.unary;
    instruction.a = add(e.operands[0], seen, ok);
    break;
  case ExprKind::Binary:
    switch (e.binary) {
    case BinaryOp::Add: case BinaryOp::Sub: case BinaryOp::Mul: case BinaryOp::Div: case BinaryOp::Rem:
    case BinaryOp::Min: case BinaryOp::Max: case BinaryOp::Lt: case BinaryOp::Le: case BinaryOp::Gt:
    case BinaryOp::Ge: case BinaryOp::Eq: case BinaryOp::Ne: case BinaryOp::LogicalAnd: case BinaryOp::LogicalOr:
      break;
    default: ok = false; return -1;
    }
    instruction.op = Op::Binary;
    instruction.binary = e.binary;
    instruction.isSigned = true; // Int64, Int32 and Bool are signed or 0/1
    instruction.a = add(e.operands[0], seen, ok);
    instruction.b = add(e.operands[1], seen, ok);
    break;
  case ExprKind::Select:
    instruction.op = Op::Select;
    instruction.a = add(e.operands[0], seen, ok);
    instruction.b = add(e.operands[1], seen, ok);
    instruction.c = add(e.operands[2], seen, ok);
    break;
  default: ok = false; return -1;
  }
  if (!ok)
    return -1;
  if (instruction.op == Op::Var)
    variables_.resize(std::max(variables_.size(), size_t(instruction.value) + 1), 0);
  instructions_.push_back(instruction);
  int slot = int(instructions_.size() - 1);
  seen[expr.get()] = slot;
  return slot;
}

void IndexProgram::setVariable(int variable, int64_t value) {
  if (size_t(variable) < variables_.size())
    variables_[size_t(variable)] = value;
}

std::span<const int64_t> IndexProgram::evaluate(int varying, int64_t first, int64_t count) {
  const size_t n = size_t(count);
  slots_.resize(instructions_.size() * n);
  for (size_t s = 0; s < instructions_.size(); ++s) {
    const Instruction &in = instructions_[s];
    int64_t *out = slots_.data() + s * n;
    const int64_t *a = in.a >= 0 ? slots_.data() + size_t(in.a) * n : nullptr;
    const int64_t *b = in.b >= 0 ? slots_.data() + size_t(in.b) * n : nullptr;
    const int64_t *c = in.c >= 0 ? slots_.data() + size_t(in.c) * n : nullptr;
    switch (in.op) {
    case Op::Constant: std::fill(out, out + n, in.value); break;
    case Op::Var:
      if (in.value == varying)
        for (size_t x = 0; x < n; ++x)
          out[x] = wrap(uint64_t(first + int64_t(x)), in.type);
      else
        std::fill(out, out + n, variables_[size_t(in.value)]);
      break;
    case Op::Wrap:
      for (size_t x = 0; x < n; ++x)
        out[x] = in.type == DType::Bool ? a[x] != 0 : wrap(uint64_t(a[x]), in.type);
      break;
    case Op::Unary:
      for (size_t x = 0; x < n; ++x)
        out[x] = in.unary == UnaryOp::Not ? a[x] == 0 : wrap(~uint64_t(a[x]) + 1, in.type);
      break;
    case Op::Select:
      for (size_t x = 0; x < n; ++x)
        out[x] = a[x] ? b[x] : c[x];
      break;
    case Op::Binary: {
      auto each = [&](auto f) {
        for (size_t x = 0; x < n; ++x)
          out[x] = f(a[x], b[x]);
      };
      auto wrapped = [&](auto f) {
        for (size_t x = 0; x < n; ++x)
          out[x] = wrap(f(uint64_t(a[x]), uint64_t(b[x])), in.type);
      };
      switch (in.binary) {
      case BinaryOp::Add: wrapped([](uint64_t p, uint64_t q) { return p + q; }); break;
      case BinaryOp::Sub: wrapped([](uint64_t p, uint64_t q) { return p - q; }); break;
      case BinaryOp::Mul: wrapped([](uint64_t p, uint64_t q) { return p * q; }); break;
      case BinaryOp::Div:
        for (size_t x = 0; x < n; ++x) {
          SINTER_ASSERT(b[x] != 0, "integer division by zero in a constant index expression");
          out[x] = wrap(a[x] == std::numeric_limits<int64_t>::min() && b[x] == -1 ? uint64_t(a[x])
                                                                                  : uint64_t(a[x] / b[x]),
                        in.type);
        }
        break;
      case BinaryOp::Rem:
        for (size_t x = 0; x < n; ++x) {
          SINTER_ASSERT(b[x] != 0, "integer remainder by zero in a constant index expression");
          out[x] = wrap(b[x] == -1 ? 0 : uint64_t(a[x] % b[x]), in.type);
        }
        break;
      case BinaryOp::Min: each([](int64_t p, int64_t q) { return std::min(p, q); }); break;
      case BinaryOp::Max: each([](int64_t p, int64_t q) { return std::max(p, q); }); break;
      case BinaryOp::Lt: each([](int64_t p, int64_t q) -> int64_t { return p < q; }); break;
      case BinaryOp::Le: each([](int64_t p, int64_t q) -> int64_t { return p <= q; }); break;
      case BinaryOp::Gt: each([](int64_t p, int64_t q) -> int64_t { return p > q; }); break;
      case BinaryOp::Ge: each([](int64_t p, int64_t q) -> int64_t { return p >= q; }); break;
      case BinaryOp::Eq: each([](int64_t p, int64_t q) -> int64_t { return p == q; }); break;
      case BinaryOp::Ne: each([](int64_t p, int64_t q) -> int64_t { return p != q; }); break;
      case BinaryOp::LogicalAnd: each([](int64_t p, int64_t q) -> int64_t { return p && q; }); break;
      case BinaryOp::LogicalOr: each([](int64_t p, int64_t q) -> int64_t { return p || q; }); break;
      default: SINTER_ASSERT(false, "IndexProgram compiled an unsupported binary operation");
      }
      break;
    }
    }
  }
  return {slots_.data() + (instructions_.size() - 1) * n, n};
}

} // namespace sinter::codegen
