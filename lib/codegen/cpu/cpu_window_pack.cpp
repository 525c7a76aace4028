// Design note. The packer's loops, for one tile and KC block:
//
//   for each segment (j, lane, panel): columns j .. j + len - 1, in one output row and one panel
//     origin = the position table's row for j's position (its window origin per dim)
//     for rr < kLen:
//       row = the r table's row for kc + rr (channel offset, displacement per dim)
//       outer dims: at_d = origin_d + row_d, inside [0, extent_d) or the segment reads 0
//       innermost: lane l reads input column origin + row + l * step, inside [lo, hi)
//       for each vector of the segment: masked load (gather when step > 1), masked store
//   lanes of the last panel past the tile's columns: 0
//
// Masked-off lanes are neither read nor written, so a segment's vectors never touch memory
// outside X's window or outside the segment's lanes of the pack.
#include "cpu_window_pack.h"
#include "cpu_kernel_frame.h"

#include "sinter/support/error.h"

namespace sinter::codegen::llvmgen {

/// Up to this step, strided rows are contiguous loads and a shuffle; past it, a gather.
constexpr int64_t kMaxShuffledStep = 4;

void emitWindowPack(llvm::IRBuilder<> &b, const WindowGather &gather, const ConvolutionWindow &window,
                    int64_t width, int64_t vectorWidth, const WindowPackSite &site) {
  SINTER_ASSERT(gather.rowLength > 0 && gather.rowStep > 0 && gather.sourceType == DType::Float32,
                "the row packer needs positions in rows and an f32 source");
  SINTER_ASSERT(width % vectorWidth == 0, "a ", width, "-column panel is not whole ", vectorWidth, "-lane vectors");
  llvm::LLVMContext &context = b.getContext();
  llvm::Type *i64 = b.getInt64Ty(), *i32 = b.getInt32Ty(), *f32 = b.getFloatTy();
  auto *vector = llvm::FixedVectorType::get(f32, unsigned(vectorWidth));
  auto constant = [&](int64_t value) { return b.getInt64(uint64_t(value)); };
  auto minimum = [&](llvm::Value *x, llvm::Value *y) { return b.CreateSelect(b.CreateICmpSLT(x, y), x, y); };
  auto entry = [&](llvm::Value *at) {
    return b.CreateSExt(b.CreateAlignedLoad(i32, b.CreateInBoundsGEP(i32, site.table, at), llvm::Align(4)), i64);
  };
  const int64_t dims = gather.dims, innermost = dims - 1;
  const int64_t step = gather.rowStep * window.stride[size_t(innermost)]; // in elements of X
  const int64_t innerExtent = window.extent[size_t(innermost)];
  llvm::Value *zeros = llvm::ConstantAggregateZero::get(vector);
  auto laneRange = [&](llvm::Value *from, llvm::Value *to) { return laneRangeMask(b, from, to, vectorWidth); };
  // Strided rows are read as `step` contiguous vectors; element e of the run is lane e / step's
  // when e % step == 0: per vector, the bits of its elements that are some lane's.
  std::vector<llvm::Value *> laneElements;
  if (step > 1 && step <= kMaxShuffledStep)
    for (int64_t q = 0; q < step; ++q) {
      uint64_t bits = 0;
      for (int64_t t = 0; t < vectorWidth; ++t)
        if ((q * vectorWidth + t) % step == 0)
          bits |= uint64_t(1) << t;
      laneElements.push_back(b.CreateBitCast(b.getIntN(unsigned(vectorWidth), bits),
                                             llvm::FixedVectorType::get(b.getInt1Ty(), unsigned(vectorWidth))));
    }
  llvm::Value *lanes = nullptr; // <0, 1, ..., vectorWidth - 1>, for a gather's addresses
  {
    std::vector<llvm::Constant *> values;
    for (int64_t l = 0; l < vectorWidth; ++l)
      values.push_back(b.getInt64(uint64_t(l)));
    lanes = llvm::ConstantVector::get(values);
  }
  auto splat = [&](llvm::Value *value) { return b.CreateVectorSplat(unsigned(vectorWidth), value); };
  llvm::Value *end = b.CreateAdd(site.column0, site.columns);
  llvm::Value *panelFloats = b.CreateMul(site.reductionLength, constant(width));

  // The segment loop: a while loop over (j, lane, panel).
  llvm::Function *function = b.GetInsertBlock()->getParent();
  llvm::BasicBlock *preheader = b.GetInsertBlock();
  auto *header = llvm::BasicBlock::Create(context, "segment.loop", function);
  auto *inside = llvm::BasicBlock::Create(context, "segment.body", function);
  auto *exit = llvm::BasicBlock::Create(context, "segment.exit", function);
  b.CreateBr(header);
  b.SetInsertPoint(header);
  llvm::PHINode *j = b.CreatePHI(i64, 2, "j"), *lane = b.CreatePHI(i64, 2, "lane"), *panel = b.CreatePHI(i64, 2, "panel");
  j->addIncoming(site.column0, preheader);
  lane->addIncoming(constant(0), preheader);
  panel->addIncoming(constant(0), preheader);
  b.CreateCondBr(b.CreateICmpSLT(j, end), inside, exit);

  b.SetInsertPoint(inside);
  llvm::Value *image = b.CreateUDiv(j, constant(window.positions));
  llvm::Value *position = b.CreateSub(j, b.CreateMul(image, constant(window.positions)));
  llvm::Value *column = b.CreateURem(position, constant(gather.rowLength));
  llvm::Value *length = minimum(minimum(b.CreateSub(constant(width), lane), b.CreateSub(constant(gather.rowLength), column)),
                                b.CreateSub(end, j));
  llvm::Value *originRow = b.CreateAdd(constant(gather.positionsAt), b.CreateMul(position, constant(dims)));
  std::vector<llvm::Value *> origin;
  for (int64_t d = 0; d < dims; ++d)
    origin.push_back(entry(b.CreateAdd(originRow, constant(d))));
  llvm::Value *imageBase = b.CreateAdd(b.CreateMul(site.batch, constant(window.groupStride)),
                                       b.CreateMul(image, constant(window.imageStride)));
  llvm::Value *segmentFirst = b.CreateAdd(b.CreateMul(panel, panelFloats), lane);

  emitLoop(b, constant(0), site.reductionLength, 1, [&](llvm::Value *rr) {
    llvm::Value *row = b.CreateMul(b.CreateAdd(site.reduction0, rr), constant(1 + dims));
    llvm::Value *offset = b.CreateAdd(imageBase, entry(row));
    llvm::Value *inOuter = b.getTrue();
    for (int64_t d = 0; d < innermost; ++d) {
      llvm::Value *at = b.CreateAdd(origin[size_t(d)], entry(b.CreateAdd(row, constant(1 + d))));
      inOuter = b.CreateAnd(inOuter, b.CreateICmpULT(at, constant(window.extent[size_t(d)])));
      offset = b.CreateAdd(offset, b.CreateMul(at, constant(window.stride[size_t(d)])));
    }
    // Lane l reads input column first + l * rowStep: inside [0, extent) for l in [lo, hi).
    llvm::Value *first = b.CreateAdd(origin[size_t(innermost)], entry(b.CreateAdd(row, constant(dims))));
    llvm::Value *rowStep = constant(gather.rowStep);
    llvm::Value *lo = b.CreateSelect(b.CreateICmpSGE(first, constant(0)), constant(0),
                                     b.CreateSDiv(b.CreateAdd(b.CreateNeg(first), constant(gather.rowStep - 1)), rowStep));
    llvm::Value *hi = b.CreateSelect(b.CreateICmpSGT(first, constant(innerExtent - 1)), constant(0),
                                     b.CreateAdd(b.CreateSDiv(b.CreateSub(constant(innerExtent - 1), first), rowStep),
                                                 constant(1)));
    hi = b.CreateSelect(inOuter, minimum(hi, length), constant(0));
    offset = b.CreateAdd(offset, b.CreateMul(first, constant(window.stride[size_t(innermost)])));
    // Not inbounds: for lanes in the padding the address is outside X, and is never read.
    llvm::Value *source = b.CreateGEP(f32, site.source, offset);
    llvm::Value *target = b.CreateInBoundsGEP(f32, site.pack, b.CreateAdd(segmentFirst, b.CreateMul(rr, constant(width))));
    emitLoop(b, constant(0), length, vectorWidth, [&](llvm::Value *c) {
      llvm::Value *read = laneRange(b.CreateSub(lo, c), b.CreateSub(hi, c));
      llvm::Value *written = laneRange(constant(0), b.CreateSub(length, c));
      llvm::Value *value;
      if (step == 1) {
        value = b.CreateMaskedLoad(vector, b.CreateGEP(f32, source, c), llvm::Align(4), read, zeros);
      } else if (step <= kMaxShuffledStep) {
        // Lanes [lo, hi) read elements [lo * step, (hi - 1) * step] of the run from lane c's on.
        llvm::Value *from = b.CreateGEP(f32, source, b.CreateMul(c, constant(step)));
        llvm::Value *firstElement = b.CreateMul(b.CreateSub(lo, c), constant(step));
        llvm::Value *pastElement = b.CreateAdd(b.CreateMul(b.CreateSub(hi, c), constant(step)), constant(1 - step));
        std::vector<llvm::Value *> parts;
        for (int64_t q = 0; q < step; ++q) {
          llvm::Value *shift = constant(q * vectorWidth);
          llvm::Value *mask = b.CreateAnd(laneElements[size_t(q)], laneRange(b.CreateSub(firstElement, shift),
                                                                             b.CreateSub(pastElement, shift)));
          parts.push_back(b.CreateMaskedLoad(vector, b.CreateConstGEP1_64(f32, from, uint64_t(q * vectorWidth)),
                                             llvm::Align(4), mask, zeros));
        }
        value = everyStepLane(b, parts, step);
      } else {
        llvm::Value *addresses = b.CreateGEP(f32, source, b.CreateMul(b.CreateAdd(splat(c), lanes), splat(constant(step))));
        value = b.CreateMaskedGather(vector, addresses, llvm::Align(4), read, zeros);
      }
      b.CreateMaskedStore(value, b.CreateInBoundsGEP(f32, target, c), llvm::Align(4), written);
    }, "chunk");
  }, "rr");

  llvm::Value *laneNext = b.CreateAdd(lane, length);
  llvm::Value *wraps = b.CreateICmpEQ(laneNext, constant(width));
  j->addIncoming(b.CreateAdd(j, length), b.GetInsertBlock());
  lane->addIncoming(b.CreateSelect(wraps, constant(0), laneNext), b.GetInsertBlock());
  panel->addIncoming(b.CreateSelect(wraps, b.CreateAdd(panel, constant(1)), panel), b.GetInsertBlock());
  b.CreateBr(header);

  // The last panel's lanes past the tile's columns.
  b.SetInsertPoint(exit);
  emitIf(b, b.CreateICmpNE(lane, constant(0)), [&] {
    llvm::Value *first = b.CreateMul(panel, panelFloats);
    emitLoop(b, constant(0), site.reductionLength, 1, [&](llvm::Value *rr) {
      llvm::Value *target = b.CreateInBoundsGEP(f32, site.pack, b.CreateAdd(first, b.CreateMul(rr, constant(width))));
      for (int64_t c = 0; c < width; c += vectorWidth) {
        llvm::Value *written = laneRange(b.CreateSub(lane, constant(c)), constant(vectorWidth));
        b.CreateMaskedStore(zeros, b.CreateConstInBoundsGEP1_64(f32, target, uint64_t(c)), llvm::Align(4), written);
      }
    }, "tail.rr");
  });
}

} // namespace sinter::codegen::llvmgen
