// The frame of the CPU backend's hand-built kernels (cpu_contraction.cpp, cpu_plane_window.cpp):
// loops and branches written straight into LLVM IR at an IRBuilder's position, and the entry
// point the runtime calls.
#pragma once

#include <llvm/IR/IRBuilder.h>

#include <functional>
#include <string>
#include <vector>

namespace sinter::codegen::llvmgen {

inline int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
inline int64_t roundUp(int64_t a, int64_t b) { return ceilDiv(a, b) * b; }

using Loop = std::function<void(llvm::Value *)>;

/// for (iv = start; iv < end; iv += step) body(iv), at the builder's position.
inline void emitLoop(llvm::IRBuilder<> &b, llvm::Value *start, llvm::Value *end, int64_t step, const Loop &body,
                     const char *name) {
  llvm::Function *function = b.GetInsertBlock()->getParent();
  llvm::LLVMContext &context = function->getContext();
  llvm::BasicBlock *preheader = b.GetInsertBlock();
  auto *header = llvm::BasicBlock::Create(context, std::string(name) + ".loop", function);
  auto *inside = llvm::BasicBlock::Create(context, std::string(name) + ".body", function);
  auto *exit = llvm::BasicBlock::Create(context, std::string(name) + ".exit", function);
  b.CreateBr(header);
  b.SetInsertPoint(header);
  llvm::PHINode *iv = b.CreatePHI(b.getInt64Ty(), 2, name);
  iv->addIncoming(start, preheader);
  b.CreateCondBr(b.CreateICmpSLT(iv, end), inside, exit);
  b.SetInsertPoint(inside);
  body(iv);
  iv->addIncoming(b.CreateAdd(iv, b.getInt64(step), "", true, true), b.GetInsertBlock());
  b.CreateBr(header);
  b.SetInsertPoint(exit);
}

/// if (condition) body(), at the builder's position.
inline void emitIf(llvm::IRBuilder<> &b, llvm::Value *condition, const std::function<void()> &body) {
  llvm::Function *function = b.GetInsertBlock()->getParent();
  auto *then = llvm::BasicBlock::Create(function->getContext(), "if.then", function);
  auto *after = llvm::BasicBlock::Create(function->getContext(), "if.after", function);
  b.CreateCondBr(condition, then, after);
  b.SetInsertPoint(then);
  body();
  b.CreateBr(after);
  b.SetInsertPoint(after);
}

/// The mask of lanes [from, to) (i64 values, any range) of a `width`-lane vector: a compare of
/// the lane numbers, which every x86-64 level does in vector registers (a mask made from an
/// integer's bits is moved into a vector lane by lane at AVX2: about 30 instructions an 8-lane
/// mask, measured in the slab copy, 98898fe).
inline llvm::Value *laneRangeMask(llvm::IRBuilder<> &b, llvm::Value *from, llvm::Value *to, int64_t width) {
  llvm::Type *i32 = b.getInt32Ty();
  std::vector<llvm::Constant *> numbers;
  for (int64_t l = 0; l < width; ++l)
    numbers.push_back(llvm::ConstantInt::get(i32, uint64_t(l)));
  llvm::Value *lanes = llvm::ConstantVector::get(numbers);
  auto splat = [&](llvm::Value *x) {
    // Clamped to [-1, width] before narrowing to i32: the same mask.
    llvm::Value *low = b.getInt64(uint64_t(-1)), *high = b.getInt64(uint64_t(width));
    x = b.CreateSelect(b.CreateICmpSLT(x, low), low, x);
    x = b.CreateSelect(b.CreateICmpSGT(x, high), high, x);
    return b.CreateVectorSplat(unsigned(width), b.CreateTrunc(x, i32));
  };
  return b.CreateAnd(b.CreateICmpSGE(lanes, splat(from)), b.CreateICmpSLT(lanes, splat(to)));
}

/// Element l * step of the vectors `parts` (of one type) side by side, for each lane l < the
/// vectors' lanes: strided elements read as contiguous vectors, then one shuffle.
inline llvm::Value *everyStepLane(llvm::IRBuilder<> &b, std::vector<llvm::Value *> parts, int64_t step) {
  const int lanes = int(llvm::cast<llvm::FixedVectorType>(parts[0]->getType())->getNumElements());
  while (parts.size() > 1) { // pairs side by side, until one vector holds them all
    if (parts.size() % 2 != 0)
      parts.push_back(llvm::Constant::getNullValue(parts.back()->getType()));
    const int width = int(llvm::cast<llvm::FixedVectorType>(parts[0]->getType())->getNumElements());
    std::vector<int> both(size_t(2 * width));
    for (int l = 0; l < 2 * width; ++l)
      both[size_t(l)] = l;
    std::vector<llvm::Value *> pairs;
    for (size_t p = 0; p < parts.size(); p += 2)
      pairs.push_back(b.CreateShuffleVector(parts[p], parts[p + 1], both));
    parts = std::move(pairs);
  }
  std::vector<int> every(static_cast<size_t>(lanes));
  for (int l = 0; l < lanes; ++l)
    every[size_t(l)] = int(l * step);
  return b.CreateShuffleVector(parts[0], parts[0], every);
}

/// NAME.body(p0, ..., p[pointers - 1], i64 begin, i64 end): internal, no-unwind, inlined into the
/// entry point; every pointer noalias (the memory plan never hands one buffer to two arguments of
/// a kernel), read-only unless `written(i)`.
inline llvm::Function *createKernelBody(llvm::Module &module, const std::string &name, size_t pointers,
                                        const std::function<bool(size_t)> &written) {
  llvm::LLVMContext &context = module.getContext();
  llvm::Type *ptr = llvm::PointerType::getUnqual(context), *i64 = llvm::Type::getInt64Ty(context);
  std::vector<llvm::Type *> params(pointers, ptr);
  params.push_back(i64);
  params.push_back(i64);
  auto *body = llvm::Function::Create(llvm::FunctionType::get(llvm::Type::getVoidTy(context), params, false),
                                      llvm::Function::InternalLinkage, name + ".body", module);
  body->addFnAttr(llvm::Attribute::NoUnwind);
  body->addFnAttr(llvm::Attribute::AlwaysInline);
  for (size_t i = 0; i < pointers; ++i) {
    body->addParamAttr(unsigned(i), llvm::Attribute::NoAlias);
    if (!written(i))
      body->addParamAttr(unsigned(i), llvm::Attribute::ReadOnly);
  }
  return body;
}

/// The entry point the runtime calls, `void NAME(void *const *args, int64_t begin, int64_t end)`:
/// loads the `pointers` argument pointers (buffers, then derived constants) and calls `body`
/// with them and begin, end.
inline void emitEntryPoint(llvm::Module &module, llvm::Function *body, const std::string &name, size_t pointers) {
  llvm::LLVMContext &context = module.getContext();
  llvm::IRBuilder<> b(context);
  llvm::Type *ptr = llvm::PointerType::getUnqual(context);
  auto *wrapper = llvm::Function::Create(llvm::FunctionType::get(b.getVoidTy(), {ptr, b.getInt64Ty(), b.getInt64Ty()}, false),
                                         llvm::Function::ExternalLinkage, name, module);
  wrapper->addFnAttr(llvm::Attribute::NoUnwind);
  b.SetInsertPoint(llvm::BasicBlock::Create(context, "entry", wrapper));
  std::vector<llvm::Value *> arguments;
  for (size_t i = 0; i < pointers; ++i)
    arguments.push_back(b.CreateLoad(ptr, b.CreateConstInBoundsGEP1_64(ptr, wrapper->getArg(0), i)));
  arguments.push_back(wrapper->getArg(1));
  arguments.push_back(wrapper->getArg(2));
  b.CreateCall(body, arguments);
  b.CreateRetVoid();
}

} // namespace sinter::codegen::llvmgen
