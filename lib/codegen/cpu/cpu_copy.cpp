#include "cpu_copy.h"
#include "cpu_kernel_frame.h"

#include "sinter/support/error.h"

#include <llvm/IR/IRBuilder.h>

namespace sinter::codegen::llvmgen {

bool planConcatenation(const LoweredGroup &group, LaunchShape &launch) {
  if (!group.concatenation || group.concatenation->sources.empty())
    return false;
  launch.parallelExtent = group.concatenation->outer * int64_t(group.concatenation->sources.size());
  return true;
}

Kernel emitConcatenation(const LoweredGroup &group, llvm::Module &module) {
  const Concatenation &concat = *group.concatenation;
  const Kernel &kernel = group.kernel;
  const int64_t inputs = int64_t(concat.sources.size());
  llvm::LLVMContext &context = module.getContext();
  llvm::IRBuilder<> b(context);
  llvm::Function *body = createKernelBody(module, kernel.name, kernel.buffers.size(),
                                          [&](size_t i) { return kernel.buffers[i].written; });
  llvm::Value *begin = body->getArg(unsigned(kernel.buffers.size()));
  llvm::Value *end = body->getArg(unsigned(kernel.buffers.size() + 1));
  b.SetInsertPoint(llvm::BasicBlock::Create(context, "entry", body));
  auto constant = [&](int64_t value) { return b.getInt64(uint64_t(value)); };
  const int64_t rowBytes = concat.rowElements() * concat.elementBytes;
  emitLoop(b, begin, end, 1, [&](llvm::Value *t) {
    llvm::Value *row = b.CreateUDiv(t, constant(inputs));
    llvm::Value *which = b.CreateURem(t, constant(inputs));
    llvm::Function *function = b.GetInsertBlock()->getParent();
    auto *done = llvm::BasicBlock::Create(context, "copy.done", function);
    llvm::SwitchInst *cases = b.CreateSwitch(which, done, unsigned(inputs));
    int64_t offset = 0; // bytes into the output row
    for (int64_t k = 0; k < inputs; ++k) {
      const int64_t bytes = concat.extents[size_t(k)] * concat.inner * concat.elementBytes;
      auto *copy = llvm::BasicBlock::Create(context, "copy.input", function, done);
      cases->addCase(b.getInt64(uint64_t(k)), copy);
      b.SetInsertPoint(copy);
      if (bytes > 0) {
        llvm::Value *to = b.CreateInBoundsGEP(b.getInt8Ty(), body->getArg(unsigned(concat.output)),
                                              b.CreateAdd(b.CreateMul(row, constant(rowBytes)), constant(offset)));
        llvm::Value *from = b.CreateInBoundsGEP(b.getInt8Ty(), body->getArg(unsigned(concat.sources[size_t(k)])),
                                                b.CreateMul(row, constant(bytes)));
        b.CreateMemCpy(to, llvm::MaybeAlign(1), from, llvm::MaybeAlign(1), constant(bytes));
      }
      b.CreateBr(done);
      offset += bytes;
    }
    b.SetInsertPoint(done);
  }, "copy");
  b.CreateRetVoid();
  emitEntryPoint(module, body, kernel.name, kernel.buffers.size());
  Kernel described = kernel;
  described.parallelExtent = concat.outer * inputs;
  return described;
}

} // namespace sinter::codegen::llvmgen
