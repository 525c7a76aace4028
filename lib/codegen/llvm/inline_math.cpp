// e^x = 2^n * e^r with n = round(x / ln 2) and r = x - n ln 2, |r| <= ln 2 / 2: ln 2 is split
// into a high part with few significant bits (n * high is exact in f32 for the n that arise)
// and the rest, so r is exact without a fused multiply-add (x86-64-v2 has none). e^r is its
// Taylor polynomial to degree 7 (truncation below 1e-8 relative on that interval), and 2^n is
// two exponent-field scalings of 2^(n/2) so that results in the subnormal range and the overflow
// to infinity come out of ordinary multiplications. x is clamped to [-104, 89] first (e^-104 is
// 0 in f32, e^89 is +inf), which also keeps the conversion of n to an integer defined.
#include "inline_math.h"

#include <llvm/IR/Intrinsics.h>

namespace sinter::codegen::llvmgen {
namespace {

llvm::Value *call(llvm::IRBuilder<> &b, llvm::Module &module, llvm::Intrinsic::ID id,
                  std::initializer_list<llvm::Value *> args) {
  llvm::Function *function = llvm::Intrinsic::getDeclaration(&module, id, {b.getFloatTy()});
  return b.CreateCall(function, llvm::ArrayRef<llvm::Value *>(args.begin(), args.size()));
}

llvm::Value *f32(llvm::IRBuilder<> &b, double value) { return llvm::ConstantFP::get(b.getFloatTy(), value); }

/// sum of coefficients[i] * x^i, by Horner's rule, highest first in `coefficients`.
llvm::Value *polynomial(llvm::IRBuilder<> &b, llvm::Module &module, llvm::Value *x,
                        std::initializer_list<double> coefficients) {
  llvm::Value *sum = nullptr;
  for (double coefficient : coefficients)
    sum = sum ? call(b, module, llvm::Intrinsic::fmuladd, {sum, x, f32(b, coefficient)}) : f32(b, coefficient);
  return sum;
}

} // namespace

llvm::Value *inlineExpF32(llvm::IRBuilder<> &b, llvm::Module &module, llvm::Value *x) {
  llvm::Value *clamped =
      call(b, module, llvm::Intrinsic::minnum, {call(b, module, llvm::Intrinsic::maxnum, {x, f32(b, -104.0)}), f32(b, 89.0)});
  llvm::Value *n = call(b, module, llvm::Intrinsic::rint, {b.CreateFMul(clamped, f32(b, 1.4426950408889634))});
  constexpr double kLn2High = 0.693359375;            // 0x3f318000: 9 significant bits
  constexpr double kLn2Low = -2.12194440054690583e-4; // ln 2 - kLn2High
  llvm::Value *r = b.CreateFSub(clamped, b.CreateFMul(n, f32(b, kLn2High)));
  r = b.CreateFSub(r, b.CreateFMul(n, f32(b, kLn2Low)));
  llvm::Value *p = polynomial(b, module, r,
                              {1.0 / 5040, 1.0 / 720, 1.0 / 120, 1.0 / 24, 1.0 / 6, 1.0 / 2, 1.0, 1.0});
  llvm::Value *k = b.CreateFPToSI(n, b.getInt32Ty());
  llvm::Value *half = b.CreateAShr(k, 1), *rest = b.CreateSub(k, half);
  auto powerOfTwo = [&](llvm::Value *exponent) {
    return b.CreateBitCast(b.CreateShl(b.CreateAdd(exponent, b.getInt32(127)), 23), b.getFloatTy());
  };
  llvm::Value *result = b.CreateFMul(b.CreateFMul(p, powerOfTwo(half)), powerOfTwo(rest));
  return b.CreateSelect(b.CreateFCmpUNO(x, x), x, result);
}

llvm::Value *inlineTanhF32(llvm::IRBuilder<> &b, llvm::Module &module, llvm::Value *x) {
  llvm::Value *magnitude = call(b, module, llvm::Intrinsic::fabs, {x});
  // |x| < 1/2: x + x^3 P(x^2), tanh's series to x^15 (the next term is below 1e-8 relative there).
  // Beyond it the difference below loses less than a bit (it amplifies q's error by 2 / (e^2|x| - 1)).
  llvm::Value *square = b.CreateFMul(x, x);
  llvm::Value *odd = polynomial(b, module, square,
                                {-929569.0 / 638512875, 21844.0 / 6081075, -1382.0 / 155925, 62.0 / 2835,
                                 -17.0 / 315, 2.0 / 15, -1.0 / 3});
  llvm::Value *nearZero = call(b, module, llvm::Intrinsic::fmuladd, {b.CreateFMul(square, x), odd, x});
  // Beyond: 1 - 2 / (e^2|x| + 1), which is 1 once e^2|x| overflows; the sign is x's.
  llvm::Value *e = inlineExpF32(b, module, b.CreateFMul(magnitude, f32(b, 2.0)));
  llvm::Value *far = b.CreateFSub(f32(b, 1.0), b.CreateFDiv(f32(b, 2.0), b.CreateFAdd(e, f32(b, 1.0))));
  far = call(b, module, llvm::Intrinsic::copysign, {far, x});
  return b.CreateSelect(b.CreateFCmpOLT(magnitude, f32(b, 0.5)), nearZero, far);
}

llvm::Value *inlineErfF32(llvm::IRBuilder<> &b, llvm::Module &module, llvm::Value *x) {
  // The coefficients are least-squares fits at Chebyshev nodes, in float64: P(t) to
  // erf(sqrt t) / sqrt t on [0, 1] (degree 6), g(u + 2.5) to log erfc(x) + x^2 on [1, 4]
  // (degree 10). Their own error is below f32's rounding; what is left is the evaluation's.
  llvm::Value *magnitude = call(b, module, llvm::Intrinsic::fabs, {x});
  llvm::Value *square = b.CreateFMul(x, x);
  llvm::Value *nearZero = b.CreateFMul(
      x, polynomial(b, module, square,
                    {7.8824971076026139e-05, -0.00080188549911269877, 0.0051893119423787257, -0.026854328795830433,
                     0.11283597463479918, -0.37612626903579205, 1.1283791658815021}));
  llvm::Value *g = polynomial(b, module, b.CreateFSub(magnitude, f32(b, 2.5)),
                              {-4.10485419702408e-08, -6.5828581545524107e-08, 1.84495965740127e-06,
                               -1.2976133194269983e-05, 7.6939845005543757e-05, -0.00042070693904189429,
                               0.0021655255976526845, -0.010858165530445725, 0.056106256990255135,
                               -0.35268074038547625, -1.5568152724287523});
  llvm::Value *far = b.CreateFSub(f32(b, 1.0), inlineExpF32(b, module, b.CreateFSub(g, square)));
  far = b.CreateSelect(b.CreateFCmpOGE(magnitude, f32(b, 4.0)), f32(b, 1.0), far);
  far = call(b, module, llvm::Intrinsic::copysign, {far, x});
  llvm::Value *result = b.CreateSelect(b.CreateFCmpOLT(magnitude, f32(b, 1.0)), nearZero, far);
  return b.CreateSelect(b.CreateFCmpUNO(x, x), x, result);
}

} // namespace sinter::codegen::llvmgen
