// Builds kernel IR (kernel_ir.h) as LLVM IR. Shared by the x86-64 CPU backend and the NVPTX
// route: each provides the function, the buffer pointers, the parallel index `gid` (a loop over
// a chunk on the CPU, a grid-stride loop on the GPU) and its math library; the emitter writes
// the body for that gid. Everything else is target-neutral LLVM IR: generic pointers, integer and
// float instructions, and intrinsics every target lowers (fabs, floor, minimum, fptosi.sat, ...).
#pragma once

#include "sinter/codegen/kernel/kernel_ir.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

#include <map>
#include <set>
#include <vector>

namespace sinter::codegen::llvmgen {

/// The LLVM type kernels compute a dtype in (f16/bf16 storage as i16 bit patterns: `half` and
/// `bfloat` are avoided so no target needs native 16-bit float support).
llvm::Type *storageType(llvm::LLVMContext &context, DType type);
llvm::Type *valueType(llvm::LLVMContext &context, DType type);

/// The float functions a target provides in its own way (f32 or f64 operands).
enum class MathFunction : uint8_t {
  Exp, Log, Sqrt, Sin, Cos, Tan, Asin, Acos, Atan, Sinh, Cosh, Tanh, Asinh, Acosh, Atanh, Erf,
  Pow,  ///< two operands
  Fmod, ///< two operands; C's fmod (the remainder truncated toward zero)
};

/// How a target computes MathFunction: LLVM intrinsics and libm on the host, libdevice on NVPTX.
class MathLibrary {
public:
  virtual ~MathLibrary() = default;
  virtual llvm::Value *call(MathFunction function, llvm::ArrayRef<llvm::Value *> operands,
                            llvm::IRBuilder<> &builder, llvm::Module &module) const = 0;
};

/// The x86-64 host's: f32 exp and tanh written out as arithmetic (inline_math.h), LLVM's log, sqrt,
/// sin, cos and pow intrinsics (and exp for f64), `frem`, and libm calls
/// (erff, f64 tanh, ...) for the rest.
const MathLibrary &hostMathLibrary();

/// The MathFunctions the kernel's expressions need (what the emitter will ask its library for).
std::set<MathFunction> mathFunctionsUsed(const Kernel &kernel);

class KernelEmitter {
public:
  /// `buffers[i]` points at buffer i; variables become allocas in the function's entry block.
  /// `nativeHalfConversions`: the target converts f16 <-> f32 in hardware (x86 F16C, NVPTX), so
  /// `fpext`/`fptrunc` of `half` are instructions. Without it they would be calls into
  /// compiler-rt (__extendhfsf2, __truncsfhf2), which an artifact cannot link, so the emitter
  /// writes the conversions as integer arithmetic on the bit patterns instead.
  KernelEmitter(const Kernel &kernel, llvm::IRBuilder<> &builder, llvm::Module &module,
                std::vector<llvm::Value *> buffers, const MathLibrary &math = hostMathLibrary(),
                bool nativeHalfConversions = false);

  /// Emits the statements of the kernel body for one value of gid at the builder's position.
  void emitBody(llvm::Value *gid);

  /// For a CPU: a Reduction loop of at least 16 steps whose loads are all contiguous in its
  /// variable (a global average pool's 49 elements of a plane) is marked not to be unrolled, so
  /// the loop vectorizer sums it in vector lanes. Unrolled whole, LLVM would vectorize the loop
  /// around it instead, across outputs, with one scalar load per element and lane.
  void keepContiguousReductionsRolled() { rollContiguousReductions_ = true; }

private:
  llvm::Value *expr(const ExprRef &e);
  llvm::Value *unaryExpr(const Expr &e);
  llvm::Value *binaryExpr(const Expr &e);
  llvm::Value *castValue(llvm::Value *value, DType from, DType to);
  /// f16 bits (i16) -> f32, exactly, in integer arithmetic.
  llvm::Value *halfBitsToFloat(llvm::Value *bits);
  /// f32 or f64 -> f16 bits (i16), rounded to nearest even, in integer arithmetic.
  llvm::Value *floatToHalfBits(llvm::Value *value);
  llvm::Value *math(MathFunction function, std::vector<llvm::Value *> operands);
  llvm::Value *intrinsic(llvm::Intrinsic::ID id, std::vector<llvm::Value *> args);
  void stmts(const std::vector<StmtRef> &list);
  void stmt(const Stmt &s);
  /// The body of a LoopKind::Reduction loop: its float sums and products marked reassociable.
  void reductionStmts(const std::vector<StmtRef> &list);

  const Kernel &kernel_;
  llvm::IRBuilder<> &b_;
  llvm::Module &module_;
  llvm::LLVMContext &ctx_;
  std::vector<llvm::Value *> buffers_;
  const MathLibrary &math_;
  bool nativeHalfConversions_;
  bool rollContiguousReductions_ = false;
  std::vector<llvm::AllocaInst *> variables_;
  /// Per-statement cache so shared subexpressions are built once.
  std::map<const Expr *, llvm::Value *> cache_;
  llvm::Value *gid_ = nullptr;
};

} // namespace sinter::codegen::llvmgen
