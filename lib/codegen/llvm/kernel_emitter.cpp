#include "sinter/codegen/llvm/kernel_emitter.h"

#include "sinter/codegen/kernel/index_runs.h"
#include "inline_math.h"

#include "sinter/support/error.h"

#include <llvm/IR/Intrinsics.h>

#include <optional>

namespace sinter::codegen::llvmgen {

llvm::Type *storageType(llvm::LLVMContext &c, DType type) {
  switch (type) {
  case DType::Float32: return llvm::Type::getFloatTy(c);
  case DType::Float64: return llvm::Type::getDoubleTy(c);
  case DType::Float16: case DType::BFloat16: case DType::Int16: case DType::Uint16:
    return llvm::Type::getInt16Ty(c);
  case DType::Int8: case DType::Uint8: case DType::Bool: return llvm::Type::getInt8Ty(c);
  case DType::Int32: case DType::Uint32: return llvm::Type::getInt32Ty(c);
  case DType::Int64: case DType::Uint64: return llvm::Type::getInt64Ty(c);
  // Low-precision types are their byte (kernel_ir.h); casts on them are integer arithmetic.
  case DType::Float8E4M3FN: case DType::Float8E4M3FNUZ: case DType::Float8E5M2:
  case DType::Float8E5M2FNUZ: case DType::Float8E8M0: case DType::Float4E2M1:
  case DType::Int4: case DType::Uint4: case DType::Int2: case DType::Uint2:
    return llvm::Type::getInt8Ty(c);
  }
  return nullptr;
}

llvm::Type *valueType(llvm::LLVMContext &c, DType type) {
  return type == DType::Bool ? llvm::Type::getInt1Ty(c) : storageType(c, type);
}

namespace {

class HostMathLibrary final : public MathLibrary {
public:
  llvm::Value *call(MathFunction function, llvm::ArrayRef<llvm::Value *> operands,
                    llvm::IRBuilder<> &builder, llvm::Module &module) const override {
    switch (function) {
    case MathFunction::Exp:
      if (operands[0]->getType()->isFloatTy())
        return inlineExpF32(builder, module, operands[0]);
      return intrinsic(llvm::Intrinsic::exp, operands, builder, module);
    case MathFunction::Log: return intrinsic(llvm::Intrinsic::log, operands, builder, module);
    case MathFunction::Sqrt: return intrinsic(llvm::Intrinsic::sqrt, operands, builder, module);
    case MathFunction::Sin: return intrinsic(llvm::Intrinsic::sin, operands, builder, module);
    case MathFunction::Cos: return intrinsic(llvm::Intrinsic::cos, operands, builder, module);
    case MathFunction::Pow: return intrinsic(llvm::Intrinsic::pow, operands, builder, module);
    case MathFunction::Fmod: return builder.CreateFRem(operands[0], operands[1]);
    case MathFunction::Tan: return libm("tanf", "tan", operands[0], builder, module);
    case MathFunction::Asin: return libm("asinf", "asin", operands[0], builder, module);
    case MathFunction::Acos: return libm("acosf", "acos", operands[0], builder, module);
    case MathFunction::Atan: return libm("atanf", "atan", operands[0], builder, module);
    case MathFunction::Sinh: return libm("sinhf", "sinh", operands[0], builder, module);
    case MathFunction::Cosh: return libm("coshf", "cosh", operands[0], builder, module);
    case MathFunction::Tanh:
      if (operands[0]->getType()->isFloatTy())
        return inlineTanhF32(builder, module, operands[0]);
      return libm("tanhf", "tanh", operands[0], builder, module);
    case MathFunction::Asinh: return libm("asinhf", "asinh", operands[0], builder, module);
    case MathFunction::Acosh: return libm("acoshf", "acosh", operands[0], builder, module);
    case MathFunction::Atanh: return libm("atanhf", "atanh", operands[0], builder, module);
    case MathFunction::Erf:
      if (operands[0]->getType()->isFloatTy())
        return inlineErfF32(builder, module, operands[0]);
      return libm("erff", "erf", operands[0], builder, module);
    }
    SINTER_ASSERT(false, "unhandled math function");
  }

private:
  static llvm::Value *intrinsic(llvm::Intrinsic::ID id, llvm::ArrayRef<llvm::Value *> operands,
                                llvm::IRBuilder<> &builder, llvm::Module &module) {
    llvm::Function *fn = llvm::Intrinsic::getDeclaration(&module, id, {operands[0]->getType()});
    return builder.CreateCall(fn, operands);
  }

  static llvm::Value *libm(const char *floatName, const char *doubleName, llvm::Value *a,
                           llvm::IRBuilder<> &builder, llvm::Module &module) {
    bool isDouble = a->getType()->isDoubleTy();
    llvm::FunctionCallee fn = module.getOrInsertFunction(
        isDouble ? doubleName : floatName,
        llvm::FunctionType::get(a->getType(), {a->getType()}, false));
    if (auto *f = llvm::dyn_cast<llvm::Function>(fn.getCallee())) {
      f->setDoesNotThrow();
      f->setOnlyAccessesInaccessibleMemory();
    }
    return builder.CreateCall(fn, {a});
  }
};

std::optional<MathFunction> mathFunctionOf(const Expr &e) {
  if (e.kind == ExprKind::Unary) {
    switch (e.unary) {
    case UnaryOp::Exp: case UnaryOp::Sigmoid: return MathFunction::Exp;
    case UnaryOp::Log: return MathFunction::Log;
    case UnaryOp::Sqrt: return MathFunction::Sqrt;
    case UnaryOp::Sin: return MathFunction::Sin;
    case UnaryOp::Cos: return MathFunction::Cos;
    case UnaryOp::Tan: return MathFunction::Tan;
    case UnaryOp::Asin: return MathFunction::Asin;
    case UnaryOp::Acos: return MathFunction::Acos;
    case UnaryOp::Atan: return MathFunction::Atan;
    case UnaryOp::Sinh: return MathFunction::Sinh;
    case UnaryOp::Cosh: return MathFunction::Cosh;
    case UnaryOp::Tanh: return MathFunction::Tanh;
    case UnaryOp::Asinh: return MathFunction::Asinh;
    case UnaryOp::Acosh: return MathFunction::Acosh;
    case UnaryOp::Atanh: return MathFunction::Atanh;
    case UnaryOp::Erf: case UnaryOp::NormalCdf: return MathFunction::Erf;
    default: return std::nullopt;
    }
  }
  if (e.kind == ExprKind::Binary && e.binary == BinaryOp::Pow)
    return MathFunction::Pow;
  if (e.kind == ExprKind::Binary && e.binary == BinaryOp::Rem && isFloat(e.operands[0]->type))
    return MathFunction::Fmod;
  return std::nullopt;
}

void collectMathFunctions(const ExprRef &e, std::set<const Expr *> &seen,
                          std::set<MathFunction> &used) {
  if (!e || !seen.insert(e.get()).second)
    return;
  if (std::optional<MathFunction> function = mathFunctionOf(*e))
    used.insert(*function);
  for (const ExprRef &operand : e->operands)
    collectMathFunctions(operand, seen, used);
}

void collectMathFunctions(const std::vector<StmtRef> &list, std::set<const Expr *> &seen,
                          std::set<MathFunction> &used) {
  for (const StmtRef &s : list) {
    collectMathFunctions(s->a, seen, used);
    collectMathFunctions(s->b, seen, used);
    collectMathFunctions(s->body, seen, used);
    collectMathFunctions(s->orElse, seen, used);
  }
}

} // namespace

const MathLibrary &hostMathLibrary() {
  static const HostMathLibrary library;
  return library;
}

std::set<MathFunction> mathFunctionsUsed(const Kernel &kernel) {
  std::set<const Expr *> seen;
  std::set<MathFunction> used;
  collectMathFunctions(kernel.body, seen, used);
  return used;
}

KernelEmitter::KernelEmitter(const Kernel &kernel, llvm::IRBuilder<> &builder, llvm::Module &module,
                             std::vector<llvm::Value *> buffers, const MathLibrary &math,
                             bool nativeHalfConversions)
    : kernel_(kernel), b_(builder), module_(module), ctx_(module.getContext()),
      buffers_(std::move(buffers)), math_(math), nativeHalfConversions_(nativeHalfConversions) {
  llvm::BasicBlock &entry = b_.GetInsertBlock()->getParent()->getEntryBlock();
  llvm::IRBuilder<> entryBuilder(&entry, entry.begin());
  variables_.push_back(nullptr); // gid is a value, not a variable
  for (size_t i = 1; i < kernel_.variables.size(); ++i)
    variables_.push_back(entryBuilder.CreateAlloca(valueType(ctx_, kernel_.variables[i].type), nullptr,
                                                   kernel_.variables[i].name));
}

static bool isSignedInt(DType type) {
  return type == DType::Int8 || type == DType::Int16 || type == DType::Int32 || type == DType::Int64;
}

void KernelEmitter::emitBody(llvm::Value *gid) {
  cache_.clear();
  gid_ = gid;
  stmts(kernel_.body);
}

llvm::Value *KernelEmitter::intrinsic(llvm::Intrinsic::ID id, std::vector<llvm::Value *> args) {
  llvm::Function *fn = llvm::Intrinsic::getDeclaration(&module_, id, {args[0]->getType()});
  return b_.CreateCall(fn, args);
}

llvm::Value *KernelEmitter::math(MathFunction function, std::vector<llvm::Value *> operands) {
  return math_.call(function, operands, b_, module_);
}

llvm::Value *KernelEmitter::expr(const ExprRef &e) {
  auto cached = cache_.find(e.get());
  if (cached != cache_.end())
    return cached->second;
  llvm::Value *result = nullptr;
  switch (e->kind) {
  case ExprKind::Constant:
    if (isFloat(e->type) && e->type != DType::Float16 && e->type != DType::BFloat16)
      result = llvm::ConstantFP::get(valueType(ctx_, e->type), e->floatValue);
    else if (e->type == DType::Bool)
      result = b_.getInt1(e->intValue != 0);
    else
      result = llvm::ConstantInt::get(valueType(ctx_, e->type), uint64_t(e->intValue), true);
    break;
  case ExprKind::Var:
    result = e->id == 0 ? gid_
                        : b_.CreateLoad(valueType(ctx_, kernel_.variables[e->id].type), variables_[e->id]);
    break;
  case ExprKind::Load: {
    llvm::Type *type = storageType(ctx_, e->type);
    llvm::Value *address = b_.CreateInBoundsGEP(type, buffers_[e->id], expr(e->operands[0]));
    result = b_.CreateLoad(type, address);
    if (e->type == DType::Bool)
      result = b_.CreateICmpNE(result, b_.getInt8(0));
    break;
  }
  case ExprKind::Unary: result = unaryExpr(*e); break;
  case ExprKind::Binary: result = binaryExpr(*e); break;
  case ExprKind::Select:
    result = b_.CreateSelect(expr(e->operands[0]), expr(e->operands[1]), expr(e->operands[2]));
    break;
  case ExprKind::Cast: result = castValue(expr(e->operands[0]), e->operands[0]->type, e->type); break;
  case ExprKind::BitCast: {
    llvm::Value *value = expr(e->operands[0]);
    llvm::Type *target = valueType(ctx_, e->type);
    result = value->getType() == target ? value : b_.CreateBitCast(value, target);
    break;
  }
  }
  cache_[e.get()] = result;
  return result;
}

llvm::Value *KernelEmitter::unaryExpr(const Expr &e) {
  const ExprRef &operand = e.operands[0];
  llvm::Value *a = expr(operand);
  DType type = operand->type;
  bool floating = isFloat(type);
  switch (e.unary) {
  case UnaryOp::Neg: return floating ? b_.CreateFNeg(a) : b_.CreateNeg(a);
  case UnaryOp::Not: return b_.CreateNot(a);
  case UnaryOp::BitNot: return b_.CreateNot(a);
  case UnaryOp::Abs:
    if (floating)
      return intrinsic(llvm::Intrinsic::fabs, {a});
    return isSignedInt(type) ? intrinsic(llvm::Intrinsic::abs, {a, b_.getFalse()}) : a;
  case UnaryOp::Sign: {
    if (floating) {
      llvm::Value *zero = llvm::ConstantFP::get(a->getType(), 0.0);
      llvm::Value *one = llvm::ConstantFP::get(a->getType(), 1.0);
      llvm::Value *positive = b_.CreateSelect(b_.CreateFCmpOGT(a, zero), one, a);
      return b_.CreateSelect(b_.CreateFCmpOLT(a, zero), llvm::ConstantFP::get(a->getType(), -1.0), positive);
    }
    llvm::Value *zero = llvm::ConstantInt::get(a->getType(), 0);
    llvm::Value *greater = b_.CreateZExt(isSignedInt(type) ? b_.CreateICmpSGT(a, zero) : b_.CreateICmpUGT(a, zero), a->getType());
    llvm::Value *less = isSignedInt(type) ? b_.CreateZExt(b_.CreateICmpSLT(a, zero), a->getType()) : zero;
    return b_.CreateSub(greater, less);
  }
  case UnaryOp::Exp: return math(MathFunction::Exp, {a});
  case UnaryOp::Log: return math(MathFunction::Log, {a});
  case UnaryOp::Sqrt: return math(MathFunction::Sqrt, {a});
  case UnaryOp::Sin: return math(MathFunction::Sin, {a});
  case UnaryOp::Cos: return math(MathFunction::Cos, {a});
  case UnaryOp::Floor: return intrinsic(llvm::Intrinsic::floor, {a});
  case UnaryOp::Ceil: return intrinsic(llvm::Intrinsic::ceil, {a});
  case UnaryOp::RoundEven: return intrinsic(llvm::Intrinsic::roundeven, {a});
  case UnaryOp::Trunc: return intrinsic(llvm::Intrinsic::trunc, {a});
  case UnaryOp::Erf: return math(MathFunction::Erf, {a});
  case UnaryOp::Tanh: return math(MathFunction::Tanh, {a});
  case UnaryOp::Tan: return math(MathFunction::Tan, {a});
  case UnaryOp::Asin: return math(MathFunction::Asin, {a});
  case UnaryOp::Acos: return math(MathFunction::Acos, {a});
  case UnaryOp::Atan: return math(MathFunction::Atan, {a});
  case UnaryOp::Sinh: return math(MathFunction::Sinh, {a});
  case UnaryOp::Cosh: return math(MathFunction::Cosh, {a});
  case UnaryOp::Asinh: return math(MathFunction::Asinh, {a});
  case UnaryOp::Acosh: return math(MathFunction::Acosh, {a});
  case UnaryOp::Atanh: return math(MathFunction::Atanh, {a});
  case UnaryOp::Sigmoid: {
    llvm::Value *one = llvm::ConstantFP::get(a->getType(), 1.0);
    llvm::Value *e1 = math(MathFunction::Exp, {b_.CreateFNeg(a)});
    return b_.CreateFDiv(one, b_.CreateFAdd(one, e1));
  }
  case UnaryOp::NormalCdf: { // (1 + erf(x / sqrt 2)) / 2, by the math library's erf
    llvm::Value *half = llvm::ConstantFP::get(a->getType(), 0.5);
    llvm::Value *scaled = b_.CreateFMul(a, llvm::ConstantFP::get(a->getType(), 0.7071067811865476));
    return b_.CreateFAdd(half, b_.CreateFMul(half, math(MathFunction::Erf, {scaled})));
  }
  case UnaryOp::IsNaN: return b_.CreateFCmpUNO(a, a);
  case UnaryOp::IsInf: {
    llvm::Value *magnitude = intrinsic(llvm::Intrinsic::fabs, {a});
    return b_.CreateFCmpOEQ(magnitude, llvm::ConstantFP::getInfinity(a->getType()));
  }
  }
  SINTER_ASSERT(false, "unhandled unary op ", unaryOpName(e.unary));
}

llvm::Value *KernelEmitter::binaryExpr(const Expr &e) {
  DType type = e.operands[0]->type;
  llvm::Value *a = expr(e.operands[0]);
  llvm::Value *c = expr(e.operands[1]);
  bool floating = isFloat(type);
  bool isSigned = isSignedInt(type);
  switch (e.binary) {
  case BinaryOp::Add: return floating ? b_.CreateFAdd(a, c) : b_.CreateAdd(a, c);
  case BinaryOp::Sub: return floating ? b_.CreateFSub(a, c) : b_.CreateSub(a, c);
  case BinaryOp::Mul: return floating ? b_.CreateFMul(a, c) : b_.CreateMul(a, c);
  case BinaryOp::Div: return floating ? b_.CreateFDiv(a, c) : isSigned ? b_.CreateSDiv(a, c) : b_.CreateUDiv(a, c);
  case BinaryOp::Rem: return floating ? math(MathFunction::Fmod, {a, c}) : isSigned ? b_.CreateSRem(a, c) : b_.CreateURem(a, c);
  case BinaryOp::Min:
    if (floating) return intrinsic(llvm::Intrinsic::minimum, {a, c});
    return intrinsic(isSigned ? llvm::Intrinsic::smin : llvm::Intrinsic::umin, {a, c});
  case BinaryOp::Max:
    if (floating) return intrinsic(llvm::Intrinsic::maximum, {a, c});
    return intrinsic(isSigned ? llvm::Intrinsic::smax : llvm::Intrinsic::umax, {a, c});
  case BinaryOp::Pow:
    if (floating)
      return math(MathFunction::Pow, {a, c});
    // Integer power by repeated squaring is rare; go through double, exact up to 2^53.
    return castValue(math(MathFunction::Pow, {castValue(a, type, DType::Float64),
                                              castValue(c, type, DType::Float64)}),
                     DType::Float64, type);
  case BinaryOp::BitAnd: return b_.CreateAnd(a, c);
  case BinaryOp::BitOr: return b_.CreateOr(a, c);
  case BinaryOp::BitXor: return b_.CreateXor(a, c);
  case BinaryOp::Shl: case BinaryOp::Shr: {
    // Shifting by the width or more gives 0 (ONNX), not poison.
    unsigned bits = a->getType()->getIntegerBitWidth();
    llvm::Value *tooFar = b_.CreateICmpUGE(c, llvm::ConstantInt::get(c->getType(), bits));
    llvm::Value *shifted = e.binary == BinaryOp::Shl ? b_.CreateShl(a, c) : b_.CreateLShr(a, c);
    return b_.CreateSelect(tooFar, llvm::ConstantInt::get(a->getType(), 0), shifted);
  }
  case BinaryOp::Lt: return floating ? b_.CreateFCmpOLT(a, c) : isSigned ? b_.CreateICmpSLT(a, c) : b_.CreateICmpULT(a, c);
  case BinaryOp::Le: return floating ? b_.CreateFCmpOLE(a, c) : isSigned ? b_.CreateICmpSLE(a, c) : b_.CreateICmpULE(a, c);
  case BinaryOp::Gt: return floating ? b_.CreateFCmpOGT(a, c) : isSigned ? b_.CreateICmpSGT(a, c) : b_.CreateICmpUGT(a, c);
  case BinaryOp::Ge: return floating ? b_.CreateFCmpOGE(a, c) : isSigned ? b_.CreateICmpSGE(a, c) : b_.CreateICmpUGE(a, c);
  case BinaryOp::Eq: return floating ? b_.CreateFCmpOEQ(a, c) : b_.CreateICmpEQ(a, c);
  case BinaryOp::Ne: return floating ? b_.CreateFCmpUNE(a, c) : b_.CreateICmpNE(a, c);
  case BinaryOp::LogicalAnd: return b_.CreateAnd(a, c);
  case BinaryOp::LogicalOr: return b_.CreateOr(a, c);
  }
  SINTER_ASSERT(false, "unhandled binary op ", binaryOpName(e.binary));
}

llvm::Value *KernelEmitter::castValue(llvm::Value *value, DType from, DType to) {
  if (from == to)
    return value;
  llvm::Type *f32 = llvm::Type::getFloatTy(ctx_);
  // 16-bit floats: bit patterns, converted through float.
  if (from == DType::Float16) {
    llvm::Value *asFloat =
        nativeHalfConversions_
            ? b_.CreateFPExt(b_.CreateBitCast(value, llvm::Type::getHalfTy(ctx_)), f32)
            : halfBitsToFloat(value);
    return castValue(asFloat, DType::Float32, to);
  }
  if (from == DType::BFloat16) {
    llvm::Value *bits = b_.CreateShl(b_.CreateZExt(value, b_.getInt32Ty()), 16);
    return castValue(b_.CreateBitCast(bits, f32), DType::Float32, to);
  }
  if (to == DType::Float16) {
    // f64 rounds to f16 directly (through f32 it could round twice), and no x86 level before
    // AVX512-FP16 has an instruction for it.
    if (from == DType::Float64)
      return floatToHalfBits(value);
    llvm::Value *asFloat = castValue(value, from, DType::Float32);
    if (!nativeHalfConversions_)
      return floatToHalfBits(asFloat);
    return b_.CreateBitCast(b_.CreateFPTrunc(asFloat, llvm::Type::getHalfTy(ctx_)), b_.getInt16Ty());
  }
  if (to == DType::BFloat16) {
    llvm::Value *asFloat = castValue(value, from, DType::Float32);
    llvm::Value *bits = b_.CreateBitCast(asFloat, b_.getInt32Ty());
    // Round to nearest even; NaN stays a (quiet) NaN.
    llvm::Value *lsb = b_.CreateAnd(b_.CreateLShr(bits, 16), 1);
    llvm::Value *rounded = b_.CreateLShr(b_.CreateAdd(bits, b_.CreateAdd(lsb, b_.getInt32(0x7fff))), 16);
    llvm::Value *nanBits = b_.CreateOr(b_.CreateLShr(bits, 16), 0x40);
    llvm::Value *isNaN = b_.CreateFCmpUNO(asFloat, asFloat);
    return b_.CreateTrunc(b_.CreateSelect(isNaN, nanBits, rounded), b_.getInt16Ty());
  }
  llvm::Type *target = valueType(ctx_, to);
  if (to == DType::Bool) {
    if (isFloat(from))
      return b_.CreateFCmpUNE(value, llvm::ConstantFP::get(value->getType(), 0.0));
    return b_.CreateICmpNE(value, llvm::ConstantInt::get(value->getType(), 0));
  }
  if (from == DType::Bool)
    return isFloat(to) ? b_.CreateUIToFP(value, target) : b_.CreateZExt(value, target);
  if (isFloat(from) && isFloat(to))
    return b_.CreateFPCast(value, target);
  if (isFloat(from)) {
    // Saturating conversion: out-of-range values clamp, NaN gives 0 (deterministic, no poison).
    llvm::Function *convert = llvm::Intrinsic::getDeclaration(
        &module_, isSignedInt(to) ? llvm::Intrinsic::fptosi_sat : llvm::Intrinsic::fptoui_sat,
        {target, value->getType()});
    return b_.CreateCall(convert, {value});
  }
  if (isFloat(to))
    return isSignedInt(from) ? b_.CreateSIToFP(value, target) : b_.CreateUIToFP(value, target);
  return b_.CreateIntCast(value, target, isSignedInt(from));
}

llvm::Value *KernelEmitter::halfBitsToFloat(llvm::Value *bits) {
  llvm::Type *f32 = llvm::Type::getFloatTy(ctx_);
  llvm::Value *h = b_.CreateZExt(bits, b_.getInt32Ty());
  llvm::Value *sign = b_.CreateShl(b_.CreateAnd(h, 0x8000), 16);
  llvm::Value *exponent = b_.CreateAnd(b_.CreateLShr(h, 10), 0x1f);
  llvm::Value *mantissa = b_.CreateAnd(h, 0x3ff);
  llvm::Value *fraction = b_.CreateShl(mantissa, 13);
  // Normal: rebias the exponent (15 -> 127). Inf and NaN: the f32 all-ones exponent, same
  // fraction (a NaN stays a NaN with its payload). Subnormal and zero: mantissa * 2^-24, exact.
  llvm::Value *normal = b_.CreateOr(b_.CreateShl(b_.CreateAdd(exponent, b_.getInt32(112)), 23), fraction);
  llvm::Value *infOrNaN = b_.CreateOr(fraction, 0x7f800000);
  llvm::Value *subnormal = b_.CreateBitCast(
      b_.CreateFMul(b_.CreateUIToFP(mantissa, f32), llvm::ConstantFP::get(f32, 0x1p-24)),
      b_.getInt32Ty());
  llvm::Value *magnitude =
      b_.CreateSelect(b_.CreateICmpEQ(exponent, b_.getInt32(0)), subnormal,
                      b_.CreateSelect(b_.CreateICmpEQ(exponent, b_.getInt32(31)), infOrNaN, normal));
  return b_.CreateBitCast(b_.CreateOr(magnitude, sign), f32);
}

llvm::Value *KernelEmitter::floatToHalfBits(llvm::Value *value) {
  // The source format: f32 (8-bit exponent, 23-bit fraction) or f64 (11, 52).
  bool isDouble = value->getType()->isDoubleTy();
  unsigned width = isDouble ? 64 : 32;
  int64_t fractionBits = isDouble ? 52 : 23, bias = isDouble ? 1023 : 127;
  llvm::IntegerType *word = b_.getIntNTy(width);
  auto constant = [&](int64_t v) { return llvm::ConstantInt::get(word, uint64_t(v), true); };
  auto smax = [&](llvm::Value *a, llvm::Value *c) { return b_.CreateSelect(b_.CreateICmpSGT(a, c), a, c); };
  auto umin = [&](llvm::Value *a, llvm::Value *c) { return b_.CreateSelect(b_.CreateICmpULT(a, c), a, c); };

  llvm::Value *bits = b_.CreateBitCast(value, word);
  llvm::Value *sign = b_.CreateAnd(b_.CreateLShr(bits, width - 16), constant(0x8000));
  llvm::Value *magnitude = b_.CreateAnd(bits, constant(int64_t(~(uint64_t(1) << (width - 1)))));
  llvm::Value *biased = b_.CreateLShr(magnitude, uint64_t(fractionBits));
  llvm::Value *fraction = b_.CreateAnd(magnitude, constant((int64_t(1) << fractionBits) - 1));
  llvm::Value *exponent = b_.CreateSub(biased, constant(bias)); // unbiased

  // |value| = significand * 2^(exponent - fractionBits). An f16 keeps 10 fraction bits at
  // exponents >= -14 and fewer below (subnormals, unit 2^-24): drop `shift` bits of the
  // significand, then round to nearest even on what was dropped. The shift is capped where the
  // result is 0 anyway (a source subnormal, whose missing implicit bit then does not matter).
  llvm::Value *significand = b_.CreateOr(fraction, constant(int64_t(1) << fractionBits));
  llvm::Value *belowNormal = smax(b_.CreateSub(constant(-14), exponent), constant(0));
  llvm::Value *shift = umin(b_.CreateAdd(belowNormal, constant(fractionBits - 10)), constant(fractionBits + 2));
  llvm::Value *base = b_.CreateShl(b_.CreateAdd(smax(exponent, constant(-14)), constant(14)), 10);
  llvm::Value *half = b_.CreateAdd(base, b_.CreateLShr(significand, shift));
  llvm::Value *one = constant(1);
  llvm::Value *dropped = b_.CreateAnd(significand, b_.CreateSub(b_.CreateShl(one, shift), one));
  llvm::Value *halfway = b_.CreateShl(one, b_.CreateSub(shift, one));
  llvm::Value *odd = b_.CreateICmpNE(b_.CreateAnd(half, one), constant(0));
  llvm::Value *roundUp = b_.CreateOr(b_.CreateICmpUGT(dropped, halfway),
                                     b_.CreateAnd(b_.CreateICmpEQ(dropped, halfway), odd));
  // A carry out of the fraction moves to the next exponent, and past 65504 to infinity (0x7c00).
  half = b_.CreateAdd(half, b_.CreateZExt(roundUp, word));

  llvm::Value *infinityBits = constant(((int64_t(1) << (width - 1 - fractionBits)) - 1) << fractionBits);
  llvm::Value *isNaN = b_.CreateICmpUGT(magnitude, infinityBits);
  llvm::Value *tooLarge = b_.CreateICmpSGT(exponent, constant(15)); // and infinity itself
  llvm::Value *quietNaN = b_.CreateOr(b_.CreateLShr(fraction, uint64_t(fractionBits - 10)), constant(0x7e00));
  half = b_.CreateSelect(isNaN, quietNaN, b_.CreateSelect(tooLarge, constant(0x7c00), half));
  return b_.CreateTrunc(b_.CreateOr(half, sign), b_.getInt16Ty());
}

namespace {

/// Whether a Reduction loop runs at least 16 steps and every load of its body moves by one
/// element a step.
bool contiguousReduction(const Stmt &loop) {
  if (loop.a->kind != ExprKind::Constant || loop.a->intValue < 16)
    return false;
  bool loads = false, contiguous = true;
  for (const StmtRef &statement : loop.body)
    anyNode(statement->a, [&](const Expr &node) {
      if (node.kind == ExprKind::Load) {
        loads = true;
        contiguous = contiguous && linearStride(node.operands[0], loop.id) == std::optional<int64_t>(1);
      }
      return false;
    });
  return loads && contiguous;
}

} // namespace

void KernelEmitter::stmts(const std::vector<StmtRef> &list) {
  for (const StmtRef &s : list)
    stmt(*s);
}

void KernelEmitter::reductionStmts(const std::vector<StmtRef> &list) {
  // `acc = op(acc, x)` each (reductionLoop checks the form). A float sum or product may be
  // reassociated (kernel_ir.h's promise), which is what lets the loop vectorizer keep partial
  // sums in vector lanes; without it the loop is one dependent add per element. Only the
  // combining operation gets the flag: x's own arithmetic keeps its order.
  for (const StmtRef &s : list) {
    cache_.clear();
    llvm::Value *value = expr(s->a);
    if (auto *combine = llvm::dyn_cast<llvm::BinaryOperator>(value);
        combine && (combine->getOpcode() == llvm::Instruction::FAdd || combine->getOpcode() == llvm::Instruction::FMul))
      combine->setHasAllowReassoc(true);
    b_.CreateStore(value, variables_[s->id]);
  }
}

void KernelEmitter::stmt(const Stmt &s) {
  cache_.clear(); // values from an earlier statement may not dominate this one
  llvm::Function *function = b_.GetInsertBlock()->getParent();
  switch (s.kind) {
  case StmtKind::Block: stmts(s.body); break;
  case StmtKind::Store: {
    DType type = kernel_.buffers[s.id].dtype;
    llvm::Value *value = expr(s.b);
    if (type == DType::Bool)
      value = b_.CreateZExt(value, b_.getInt8Ty());
    llvm::Type *element = storageType(ctx_, type);
    b_.CreateStore(value, b_.CreateInBoundsGEP(element, buffers_[s.id], expr(s.a)));
    break;
  }
  case StmtKind::Assign: b_.CreateStore(expr(s.a), variables_[s.id]); break;
  case StmtKind::For: {
    llvm::Value *extent = expr(s.a);
    llvm::BasicBlock *before = b_.GetInsertBlock();
    llvm::BasicBlock *header = llvm::BasicBlock::Create(ctx_, "loop", function);
    llvm::BasicBlock *body = llvm::BasicBlock::Create(ctx_, "body", function);
    llvm::BasicBlock *after = llvm::BasicBlock::Create(ctx_, "after", function);
    b_.CreateStore(b_.getInt64(0), variables_[s.id]);
    b_.CreateBr(header);
    (void)before;
    b_.SetInsertPoint(header);
    llvm::Value *index = b_.CreateLoad(b_.getInt64Ty(), variables_[s.id]);
    b_.CreateCondBr(b_.CreateICmpSLT(index, extent), body, after);
    b_.SetInsertPoint(body);
    if (s.loop == LoopKind::Reduction)
      reductionStmts(s.body);
    else
      stmts(s.body);
    llvm::Value *current = b_.CreateLoad(b_.getInt64Ty(), variables_[s.id]);
    b_.CreateStore(b_.CreateAdd(current, b_.getInt64(1)), variables_[s.id]);
    llvm::BranchInst *latch = b_.CreateBr(header);
    if (rollContiguousReductions_ && s.loop == LoopKind::Reduction && contiguousReduction(s)) {
      llvm::MDNode *rolled = llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, "llvm.loop.unroll.disable")});
      llvm::MDNode *loop = llvm::MDNode::getDistinct(ctx_, {nullptr, rolled});
      loop->replaceOperandWith(0, loop);
      latch->setMetadata(llvm::LLVMContext::MD_loop, loop);
    }
    b_.SetInsertPoint(after);
    cache_.clear();
    break;
  }
  case StmtKind::If: {
    llvm::Value *condition = expr(s.a);
    llvm::BasicBlock *then = llvm::BasicBlock::Create(ctx_, "then", function);
    llvm::BasicBlock *otherwise = llvm::BasicBlock::Create(ctx_, "else", function);
    llvm::BasicBlock *after = llvm::BasicBlock::Create(ctx_, "endif", function);
    b_.CreateCondBr(condition, then, otherwise);
    b_.SetInsertPoint(then);
    stmts(s.body);
    b_.CreateBr(after);
    b_.SetInsertPoint(otherwise);
    stmts(s.orElse);
    b_.CreateBr(after);
    b_.SetInsertPoint(after);
    cache_.clear();
    break;
  }
  }
}

} // namespace sinter::codegen::llvmgen
