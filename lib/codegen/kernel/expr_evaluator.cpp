// The host evaluator of kernel-IR expressions: a direct walk of the expression tree. It runs once
// per element of a packed constant at compile time, so it favours plainness over speed.
#include "sinter/codegen/kernel/expr_evaluator.h"

#include "sinter/ir/tensor.h"
#include "sinter/support/error.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

namespace sinter::codegen {

namespace {

bool isFloatType(DType type) { return isFloat(type); }

/// Wraps an integer to the width and signedness of `type` (bool: 0 or 1). A low-precision
/// value is its byte (sign-extended for i4 and i2).
int64_t wrapInteger(uint64_t bits, DType type) {
  if (isLowPrecision(type))
    return type == DType::Int4 || type == DType::Int2 ? int8_t(uint8_t(bits)) : uint8_t(bits);
  switch (type) {
  case DType::Bool: return bits != 0;
  case DType::Int8: return int8_t(uint8_t(bits));
  case DType::Uint8: return uint8_t(bits);
  case DType::Int16: return int16_t(uint16_t(bits));
  case DType::Uint16: return uint16_t(bits);
  case DType::Int32: return int32_t(uint32_t(bits));
  case DType::Uint32: return uint32_t(bits);
  default: return int64_t(bits);
  }
}

/// Rounds a float result to the precision of its type.
double roundFloat(double value, DType type) {
  return type == DType::Float64 ? value : double(float(value));
}

/// float -> integer as fptosi.sat / fptoui.sat: clamps to the type's range, NaN gives 0.
int64_t saturateToInteger(double value, DType type) {
  if (std::isnan(value))
    return 0;
  double lowest = 0, highest = 0;
  switch (type) {
  case DType::Int8: lowest = -128, highest = 127; break;
  case DType::Uint8: lowest = 0, highest = 255; break;
  case DType::Int16: lowest = -32768, highest = 32767; break;
  case DType::Uint16: lowest = 0, highest = 65535; break;
  case DType::Int32: lowest = -2147483648.0, highest = 2147483647.0; break;
  case DType::Uint32: lowest = 0, highest = 4294967295.0; break;
  case DType::Int64:
    if (value <= -9223372036854775808.0)
      return std::numeric_limits<int64_t>::min();
    if (value >= 9223372036854775808.0)
      return std::numeric_limits<int64_t>::max();
    return int64_t(std::trunc(value));
  case DType::Uint64:
    if (value <= 0)
      return 0;
    if (value >= 18446744073709551616.0)
      return int64_t(~uint64_t(0));
    return int64_t(uint64_t(std::trunc(value)));
  default: break;
  }
  return int64_t(std::trunc(std::min(std::max(value, lowest), highest)));
}

bool isUnsigned(DType type) {
  return type == DType::Uint8 || type == DType::Uint16 || type == DType::Uint32 || type == DType::Uint64;
}

bool unaryImplemented(UnaryOp op) {
  switch (op) {
  case UnaryOp::Neg: case UnaryOp::Not: case UnaryOp::BitNot: case UnaryOp::Abs: case UnaryOp::Sign:
  case UnaryOp::Exp: case UnaryOp::Log: case UnaryOp::Sqrt: case UnaryOp::Tanh: case UnaryOp::Sigmoid:
  case UnaryOp::Floor: case UnaryOp::Ceil: case UnaryOp::RoundEven: case UnaryOp::Trunc:
  case UnaryOp::IsNaN: case UnaryOp::IsInf:
    return true;
  default: return false;
  }
}

bool binaryImplemented(BinaryOp op) { return op != BinaryOp::Pow; }

} // namespace

ExprEvaluator::ExprEvaluator(const Kernel &kernel)
    : kernel_(kernel), buffers_(kernel.buffers.size(), nullptr), variables_(kernel.variables.size()) {}

void ExprEvaluator::setBuffer(int buffer, const void *data) { buffers_.at(size_t(buffer)) = data; }

void ExprEvaluator::setVariable(int variable, int64_t value) {
  variables_.at(size_t(variable)).intValue = value;
}

void ExprEvaluator::setFloatVariable(int variable, double value) {
  variables_.at(size_t(variable)).floatValue = value;
}

bool ExprEvaluator::canEvaluate(const ExprRef &expr) const {
  return !anyNode(expr, [&](const Expr &e) {
    switch (e.kind) {
    case ExprKind::Load: return e.id < 0 || size_t(e.id) >= buffers_.size() || !buffers_[size_t(e.id)];
    case ExprKind::Unary: return !unaryImplemented(e.unary);
    case ExprKind::Binary: return !binaryImplemented(e.binary);
    case ExprKind::Cast: return e.type == DType::Float16 || e.type == DType::BFloat16;
    default: return false;
    }
  });
}

ScalarValue ExprEvaluator::load(const Expr &e) const {
  int64_t index = evaluate(e.operands[0]).intValue;
  const BufferParam &buffer = kernel_.buffers.at(size_t(e.id));
  SINTER_ASSERT(index >= 0 && index < buffer.elements, "a load of ", buffer.name, " at ", index,
                " is out of its ", buffer.elements, " elements");
  const void *data = buffers_.at(size_t(e.id));
  SINTER_ASSERT(data, "buffer ", buffer.name, " has no data to evaluate a load from");
  auto read = [&](auto typed) {
    decltype(typed) value;
    std::memcpy(&value, static_cast<const char *>(data) + index * int64_t(sizeof(value)), sizeof(value));
    return value;
  };
  ScalarValue v;
  switch (buffer.dtype) {
  case DType::Float32: v.floatValue = read(float()); break;
  case DType::Float64: v.floatValue = read(double()); break;
  case DType::Float16: v.floatValue = halfToFloat(read(uint16_t())); break;
  case DType::BFloat16: v.floatValue = bfloat16ToFloat(read(uint16_t())); break;
  case DType::Bool: v.intValue = read(uint8_t()) != 0; break;
  case DType::Int8: v.intValue = read(int8_t()); break;
  case DType::Uint8: v.intValue = read(uint8_t()); break;
  case DType::Int16: v.intValue = read(int16_t()); break;
  case DType::Uint16: v.intValue = read(uint16_t()); break;
  case DType::Int32: v.intValue = read(int32_t()); break;
  case DType::Uint32: v.intValue = read(uint32_t()); break;
  case DType::Int64: case DType::Uint64: v.intValue = read(int64_t()); break;
  case DType::Int4: case DType::Int2: v.intValue = read(int8_t()); break;
  case DType::Float8E4M3FN: case DType::Float8E4M3FNUZ: case DType::Float8E5M2:
  case DType::Float8E5M2FNUZ: case DType::Float8E8M0: case DType::Float4E2M1:
  case DType::Uint4: case DType::Uint2: v.intValue = read(uint8_t()); break;
  }
  return v;
}

ScalarValue ExprEvaluator::evaluate(const ExprRef &expr) const {
  const Expr &e = *expr;
  ScalarValue result;
  switch (e.kind) {
  case ExprKind::Constant:
    result.floatValue = isFloatType(e.type) ? roundFloat(e.floatValue, e.type) : e.floatValue;
    result.intValue = e.intValue;
    return result;
  case ExprKind::Var: return variables_.at(size_t(e.id));
  case ExprKind::Load: return load(e);
  case ExprKind::Select:
    return evaluate(e.operands[0]).intValue ? evaluate(e.operands[1]) : evaluate(e.operands[2]);
  case ExprKind::BitCast: {
    DType from = e.operands[0]->type;
    ScalarValue a = evaluate(e.operands[0]);
    if (e.type == DType::Float32)
      result.floatValue = std::bit_cast<float>(uint32_t(a.intValue));
    else if (e.type == DType::Float64)
      result.floatValue = std::bit_cast<double>(uint64_t(a.intValue));
    else if (from == DType::Float32)
      result.intValue = wrapInteger(std::bit_cast<uint32_t>(float(a.floatValue)), e.type);
    else if (from == DType::Float64)
      result.intValue = wrapInteger(std::bit_cast<uint64_t>(a.floatValue), e.type);
    else
      result.intValue = wrapInteger(uint64_t(a.intValue), e.type);
    return result;
  }
  case ExprKind::Cast: {
    DType from = e.operands[0]->type;
    ScalarValue a = evaluate(e.operands[0]);
    SINTER_ASSERT(e.type != DType::Float16 && e.type != DType::BFloat16,
                  "the expression evaluator does not round to 16-bit floats");
    if (e.type == DType::Bool)
      result.intValue = isFloatType(from) ? a.floatValue != 0 : a.intValue != 0;
    else if (isFloatType(e.type))
      result.floatValue = roundFloat(isFloatType(from) ? a.floatValue
                                     : from == DType::Uint64 ? double(uint64_t(a.intValue))
                                                             : double(a.intValue),
                                     e.type);
    else if (isFloatType(from))
      result.intValue = saturateToInteger(a.floatValue, e.type);
    else
      result.intValue = wrapInteger(uint64_t(a.intValue), e.type);
    return result;
  }
  case ExprKind::Unary: {
    ScalarValue a = evaluate(e.operands[0]);
    DType type = e.operands[0]->type;
    if (isFloatType(type)) {
      double x = a.floatValue, y = 0;
      switch (e.unary) {
      case UnaryOp::Neg: y = -x; break;
      case UnaryOp::Abs: y = std::fabs(x); break;
      case UnaryOp::Sign: y = std::isnan(x) ? x : double((x > 0) - (x < 0)); break;
      case UnaryOp::Exp: y = std::exp(x); break;
      case UnaryOp::Log: y = std::log(x); break;
      case UnaryOp::Sqrt: y = std::sqrt(x); break;
      case UnaryOp::Tanh: y = std::tanh(x); break;
      case UnaryOp::Sigmoid: y = 1.0 / (1.0 + std::exp(-x)); break;
      case UnaryOp::Floor: y = std::floor(x); break;
      case UnaryOp::Ceil: y = std::ceil(x); break;
      case UnaryOp::RoundEven: y = std::nearbyint(x); break;
      case UnaryOp::Trunc: y = std::trunc(x); break;
      case UnaryOp::IsNaN: result.intValue = std::isnan(x); return result;
      case UnaryOp::IsInf: result.intValue = std::isinf(x); return result;
      default: SINTER_ASSERT(false, "unary ", unaryOpName(e.unary), " is not evaluated on floats");
      }
      result.floatValue = roundFloat(y, e.type);
      return result;
    }
    uint64_t x = uint64_t(a.intValue), y = 0;
    switch (e.unary) {
    case UnaryOp::Neg: y = ~x + 1; break;
    case UnaryOp::Not: y = x == 0; break;
    case UnaryOp::BitNot: y = ~x; break;
    case UnaryOp::Abs: y = isUnsigned(type) || a.intValue >= 0 ? x : ~x + 1; break;
    case UnaryOp::Sign:
      y = isUnsigned(type) ? uint64_t(x != 0) : uint64_t(int64_t((a.intValue > 0) - (a.intValue < 0)));
      break;
    case UnaryOp::Floor: case UnaryOp::Ceil: case UnaryOp::RoundEven: case UnaryOp::Trunc: y = x; break;
    case UnaryOp::IsNaN: case UnaryOp::IsInf: y = 0; break;
    default: SINTER_ASSERT(false, "unary ", unaryOpName(e.unary), " is not evaluated on integers");
    }
    result.intValue = wrapInteger(y, e.type);
    return result;
  }
  case ExprKind::Binary: {
    ScalarValue a = evaluate(e.operands[0]), b = evaluate(e.operands[1]);
    DType type = e.operands[0]->type;
    if (e.binary == BinaryOp::LogicalAnd || e.binary == BinaryOp::LogicalOr) {
      result.intValue = e.binary == BinaryOp::LogicalAnd ? (a.intValue && b.intValue) : (a.intValue || b.intValue);
      return result;
    }
    if (isFloatType(type)) {
      double x = a.floatValue, y = b.floatValue, z = 0;
      switch (e.binary) {
      case BinaryOp::Add: z = x + y; break;
      case BinaryOp::Sub: z = x - y; break;
      case BinaryOp::Mul: z = x * y; break;
      case BinaryOp::Div: z = x / y; break;
      case BinaryOp::Rem: z = std::fmod(x, y); break;
      case BinaryOp::Min: z = std::isnan(x) || std::isnan(y) ? std::nan("") : std::min(x, y); break;
      case BinaryOp::Max: z = std::isnan(x) || std::isnan(y) ? std::nan("") : std::max(x, y); break;
      case BinaryOp::Lt: result.intValue = x < y; return result;
      case BinaryOp::Le: result.intValue = x <= y; return result;
      case BinaryOp::Gt: result.intValue = x > y; return result;
      case BinaryOp::Ge: result.intValue = x >= y; return result;
      case BinaryOp::Eq: result.intValue = x == y; return result;
      case BinaryOp::Ne: result.intValue = x != y; return result;
      default: SINTER_ASSERT(false, "binary ", binaryOpName(e.binary), " is not evaluated on floats");
      }
      // f32 operations round once: the double result of one f32 add, sub, mul or div is exact
      // before this rounding, so it equals the f32 operation.
      result.floatValue = roundFloat(z, e.type);
      return result;
    }
    bool isSignedType = !isUnsigned(type);
    uint64_t x = uint64_t(a.intValue), y = uint64_t(b.intValue), z = 0;
    int64_t sx = a.intValue, sy = b.intValue;
    auto compare = [&](auto less) { return isSignedType ? less(sx, sy) : less(x, y); };
    switch (e.binary) {
    case BinaryOp::Add: z = x + y; break;
    case BinaryOp::Sub: z = x - y; break;
    case BinaryOp::Mul: z = x * y; break;
    case BinaryOp::Div:
      SINTER_ASSERT(y != 0, "integer division by zero in a constant expression");
      z = isSignedType ? (sx == std::numeric_limits<int64_t>::min() && sy == -1 ? x : uint64_t(sx / sy)) : x / y;
      break;
    case BinaryOp::Rem:
      SINTER_ASSERT(y != 0, "integer remainder by zero in a constant expression");
      z = isSignedType ? (sy == -1 ? 0 : uint64_t(sx % sy)) : x % y;
      break;
    case BinaryOp::Min: z = compare([](auto p, auto q) { return p < q; }) ? x : y; break;
    case BinaryOp::Max: z = compare([](auto p, auto q) { return p < q; }) ? y : x; break;
    case BinaryOp::BitAnd: z = x & y; break;
    case BinaryOp::BitOr: z = x | y; break;
    case BinaryOp::BitXor: z = x ^ y; break;
    case BinaryOp::Shl: z = y >= 64 ? 0 : x << y; break;
    case BinaryOp::Shr:
      if (y >= 64)
        z = isSignedType && sx < 0 ? ~uint64_t(0) : 0;
      else
        z = isSignedType ? uint64_t(sx >> y) : x >> y;
      break;
    case BinaryOp::Lt: result.intValue = compare([](auto p, auto q) { return p < q; }); return result;
    case BinaryOp::Le: result.intValue = compare([](auto p, auto q) { return p <= q; }); return result;
    case BinaryOp::Gt: result.intValue = compare([](auto p, auto q) { return p > q; }); return result;
    case BinaryOp::Ge: result.intValue = compare([](auto p, auto q) { return p >= q; }); return result;
    case BinaryOp::Eq: result.intValue = x == y; return result;
    case BinaryOp::Ne: result.intValue = x != y; return result;
    default: SINTER_ASSERT(false, "binary ", binaryOpName(e.binary), " is not evaluated on integers");
    }
    result.intValue = wrapInteger(z, e.type);
    return result;
  }
  }
  SINTER_ASSERT(false, "unhandled expression kind");
}

} // namespace sinter::codegen
