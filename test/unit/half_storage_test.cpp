// findHalfArithmetic (kernel_ir.h): f16/bf16 are storage types; a kernel that does arithmetic,
// selects or keeps variables in them is named, one that loads, converts and stores them is not.
#include "sinter/codegen/kernel/kernel_ir.h"

#include <gtest/gtest.h>

#include <functional>

using namespace sinter;
using namespace sinter::codegen;

namespace {

/// y[gid] = f(x[gid]) over f16 buffers, with `body` building the stored value from the load.
Kernel kernelStoring(DType storage, const std::function<ExprRef(ExprRef)> &body) {
  KernelBuilder builder("k");
  int x = builder.addBuffer("x", storage, 4, false);
  int y = builder.addBuffer("y", storage, 4, true);
  builder.setParallelExtent(4);
  builder.emit(store(y, builder.gid(), body(load(x, storage, builder.gid()))));
  return builder.take();
}

} // namespace

TEST(HalfStorage, LoadComputeInF32AndRoundOnceIsAccepted) {
  for (DType storage : {DType::Float16, DType::BFloat16}) {
    Kernel kernel = kernelStoring(storage, [&](ExprRef x) {
      ExprRef wide = cast(x, DType::Float32);
      return cast(binary(BinaryOp::Add, wide, constant(DType::Float32, 1)), storage);
    });
    EXPECT_EQ(findHalfArithmetic(kernel), "");
    // Storing what was loaded, unconverted, moves bits only.
    EXPECT_EQ(findHalfArithmetic(kernelStoring(storage, [](ExprRef x) { return x; })), "");
  }
}

TEST(HalfStorage, ArithmeticSelectsAndVariablesInSixteenBitsAreNamed) {
  Kernel add = kernelStoring(DType::Float16, [](ExprRef x) { return binary(BinaryOp::Add, x, x); });
  EXPECT_NE(findHalfArithmetic(add).find("binary op"), std::string::npos) << findHalfArithmetic(add);
  Kernel choose = kernelStoring(DType::BFloat16,
                                [](ExprRef x) { return select(boolConstant(true), x, x); });
  EXPECT_NE(findHalfArithmetic(choose).find("select of type bf16"), std::string::npos);
  Kernel compare = kernelStoring(DType::Float16, [](ExprRef x) {
    return cast(binary(BinaryOp::Lt, x, x), DType::Float16);
  });
  EXPECT_NE(findHalfArithmetic(compare).find("reads a f16 load"), std::string::npos);

  KernelBuilder builder("k");
  int x = builder.addBuffer("x", DType::Float16, 1, false);
  int local = builder.addVariable("acc", DType::Float16);
  builder.emit(assign(local, load(x, DType::Float16, intConstant(0))));
  EXPECT_NE(findHalfArithmetic(builder.kernel()).find("variable 'acc"), std::string::npos);
}
