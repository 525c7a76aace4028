// f32 math written out as arithmetic (range reduction and a polynomial) instead of a libm call,
// so the loop vectorizer can vectorize the kernels that use it: LLVM's llvm.exp and libm's tanhf
// are scalar calls per element on x86-64, which kept every Sigmoid, SiLU, Softmax and GELU
// on the CPU target at one element per call. Every x86-64 level runs them (no FMA needed).
#pragma once

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

namespace sinter::codegen::llvmgen {

/// e^x for an f32 `x`, within 2 ulp over the range where it is a normal number; 0 below it
/// (through the subnormals), +inf above it, NaN for NaN.
llvm::Value *inlineExpF32(llvm::IRBuilder<> &b, llvm::Module &module, llvm::Value *x);

/// tanh(x) for an f32 `x`: an odd polynomial for |x| < 1/2, 1 - 2 / (e^2|x| + 1) with x's sign beyond;
/// within a few ulp, +-1 at large |x|, NaN for NaN.
llvm::Value *inlineTanhF32(llvm::IRBuilder<> &b, llvm::Module &module, llvm::Value *x);

/// erf(x) for an f32 `x`: x P(x^2) for |x| < 1; 1 - e^(g(|x|) - x^2) with x's sign for 1 <= |x| < 4,
/// g a polynomial for log erfc(x) + x^2; +-1 beyond (erf rounds to 1 in f32 from 3.92 on).
/// Within a few ulp, NaN for NaN.
llvm::Value *inlineErfF32(llvm::IRBuilder<> &b, llvm::Module &module, llvm::Value *x);

} // namespace sinter::codegen::llvmgen
