// Builds kernel IR (kernel_ir.h) as LLVM IR. Shared by the x86-64 CPU backend and the NVPTX
// route: each provides the function, the buffer pointers and the parallel index `gid`; the
// emitter writes the body for that gid.
#pragma once

#include "sinter/codegen/kernel_ir.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

#include <map>
#include <vector>

namespace sinter::codegen::llvmgen {

/// The LLVM type kernels compute a dtype in (f16/bf16 storage as i16 bit patterns: `half` and
/// `bfloat` are avoided so no target needs native 16-bit float support).
llvm::Type *storageType(llvm::LLVMContext &context, DType type);
llvm::Type *valueType(llvm::LLVMContext &context, DType type);

class KernelEmitter {
public:
  /// `buffers[i]` points at buffer i; variables become allocas in the function's entry block.
  KernelEmitter(const Kernel &kernel, llvm::IRBuilder<> &builder, llvm::Module &module,
                std::vector<llvm::Value *> buffers);

  /// Emits the statements of the kernel body for one value of gid at the builder's position.
  void emitBody(llvm::Value *gid);

private:
  llvm::Value *expr(const ExprRef &e);
  llvm::Value *unaryExpr(const Expr &e);
  llvm::Value *binaryExpr(const Expr &e);
  llvm::Value *castValue(llvm::Value *value, DType from, DType to);
  llvm::Value *callMath(const char *floatName, const char *doubleName, llvm::Value *a);
  llvm::Value *intrinsic(llvm::Intrinsic::ID id, std::vector<llvm::Value *> args);
  void stmts(const std::vector<StmtRef> &list);
  void stmt(const Stmt &s);

  const Kernel &kernel_;
  llvm::IRBuilder<> &b_;
  llvm::Module &module_;
  llvm::LLVMContext &ctx_;
  std::vector<llvm::Value *> buffers_;
  std::vector<llvm::AllocaInst *> variables_;
  /// Per-statement cache so shared subexpressions are built once.
  std::map<const Expr *, llvm::Value *> cache_;
  llvm::Value *gid_ = nullptr;
};

} // namespace sinter::codegen::llvmgen
