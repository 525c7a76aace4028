// Design note. The kernel is three layers, as the blocked contraction's:
//
//   NAME(args, begin, end)                  entry point: unpacks args, calls NAME.body
//   NAME.body(buffers..., [weights,] begin, end)
//     for tile in [begin, end):             tile = (image, channel, band), band fastest
//       copy the band's input rows into scratch, the pad value where the window reaches past
//       the plane (0, or -inf for a maximum)
//       for each output row of the band (rows of 1-3 vectors: 4 / vectors rows at once):
//         for each chunk of up to 4 vectors: acc = combine over taps of scratch[...]
//                                           (unrolled over the taps; stored to the tile buffer,
//                                           rows at the output's pitch: dense)
//       epilogue over the band              kernel IR, one loop over the band's outputs: acc
//                                           from the tile buffer, then the contraction's or the
//                                           pooling's epilogue
//
// Scratch row pr holds input row (band's first output row * strideRows - padTop + pr), its
// column pc input column pc - padLeft: output (oy, ox)'s tap (ky, kx) is scratch[(oy - oy0) *
// strideRows + ky * dilationRows][ox * strideColumns + kx * dilationColumns], in bounds for every
// lane of a vector (rows are padded to whole vectors of the widest level), so the loads need no
// test. At column stride s > 1 a row is copied to a staging row first and split into s phases
// (padded column pc at phase pc % s, index pc / s), so a tap's outputs ox.. read one contiguous
// run of its phase: a plain vector load, not s vectors shuffled down to one per tap.
#include "cpu_plane_window.h"
#include "cpu_contraction.h"
#include "cpu_kernel_frame.h"

#include "sinter/codegen/lowering/depthwise.h"
#include "sinter/codegen/llvm/kernel_emitter.h"
#include "sinter/support/error.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>

#include <functional>
#include <limits>
#include <span>

namespace sinter::codegen::llvmgen {
namespace {

int64_t productOf(const std::vector<int64_t> &extents) {
  int64_t product = 1;
  for (int64_t extent : extents)
    product *= extent;
  return product;
}

/// f32 lanes of the level's vectors.
int64_t vectorWidth(const std::string &cpuLevel) {
  return cpuLevel == "x86-64-v4" ? 16 : cpuLevel == "x86-64-v3" ? 8 : 4;
}

constexpr int64_t kWidestVector = 16;       ///< scratch rows are padded for AVX-512's vectors
constexpr int64_t kMaxTaps = 121;           ///< the taps are unrolled: up to 11 x 11
constexpr int64_t kBandFloats = 6144;       ///< a band's padded input and outputs: 24 KiB, within L1
constexpr int64_t kMaxScratchFloats = 1 << 20;

/// The window and the bands of a plan from its geometry (1 or 2 spatial dims; the last is the
/// columns) over `planes` planes (images x channels); false when the kernel does not take it
/// (strides past 4, too many taps, negative padding, scratch too large).
bool planWindow(const WindowGeometry &geometry, int64_t planes, PlaneWindow &plan) {
  const size_t dims = geometry.rank();
  if (dims < 1 || dims > 2 || geometry.kernel.size() != dims || productOf(geometry.kernel) > kMaxTaps)
    return false;
  for (size_t d = 0; d < dims; ++d)
    if (geometry.strides[d] < 1 || geometry.strides[d] > 4 || geometry.padBegin[d] < 0 || geometry.dilations[d] < 1)
      return false;
  static_cast<PlaneGeometry &>(plan) = planeGeometry(geometry);
  // Scratch rows cover every lane a vector of the widest level reads: a row's last vector of
  // outputs starts at (outColumns rounded up - 16) * stride and reads stride * 16 floats.
  plan.paddedColumns = roundUp(plan.outColumns, kWidestVector) * plan.strideColumns +
                       (plan.kernelColumns - 1) * plan.dilationColumns;
  plan.phaseColumns = plan.strideColumns == 1
                          ? plan.paddedColumns
                          : roundUp(ceilDiv(plan.paddedColumns, plan.strideColumns), kWidestVector);
  plan.rowPitch = plan.strideColumns * plan.phaseColumns;
  auto paddedRows = [&](int64_t bandRows) {
    return (bandRows - 1) * plan.strideRows + (plan.kernelRows - 1) * plan.dilationRows + 1;
  };
  // The band's input is copied and read back, its outputs written and read by the epilogue:
  // both stay in L1 (at 112x112 a whole plane's band, 100 KiB, measured 15% slower than
  // 7-row ones).
  auto bandFloats = [&](int64_t bandRows) {
    return paddedRows(bandRows) * plan.rowPitch + bandRows * roundUp(plan.outColumns, kWidestVector);
  };
  int64_t bandRows = plan.outRows;
  while (bandRows > 1 && bandFloats(bandRows) > kBandFloats)
    bandRows = ceilDiv(bandRows, 2);
  // Enough tiles for a few threads: cut planes into bands when there are few of them.
  while (bandRows >= 8 && planes * ceilDiv(plan.outRows, bandRows) < 8)
    bandRows = ceilDiv(bandRows, 2);
  plan.bandRows = bandRows;
  plan.bands = ceilDiv(plan.outRows, bandRows);
  plan.paddedRows = paddedRows(bandRows);
  return plan.paddedRows * plan.rowPitch <= kMaxScratchFloats &&
         bandRows * roundUp(plan.outColumns, kWidestVector) <= kMaxScratchFloats;
}

} // namespace

std::optional<PlaneWindow> planDepthwiseConvolution(const LoweredGroup &group, LaunchShape &launch) {
  if (!group.contraction)
    return std::nullopt;
  const Contraction &contraction = *group.contraction;
  // The window as depthwise.h restates it (checked against the rhs's expressions there); this
  // kernel reads X as f32, with no rounding on the way.
  std::optional<DepthwiseWindow> window = depthwiseWindow(contraction);
  PlaneWindow plan;
  if (!window || window->read != window->load ||
      !planWindow(window->geometry, window->images * window->channels, plan))
    return std::nullopt;
  plan.combine = PlaneWindow::Combine::MultiplyAdd;
  plan.source = window->source;
  plan.channels = window->channels;
  plan.images = window->images;
  plan.imageStride = window->imageStride;
  plan.planeStride = window->planeStride;

  // The weights, channel-major: w[channel * k + tap] (one panel of one row per group).
  std::optional<PackedOperand> weights = packConstantOperand(group, contraction, true, 1);
  if (!weights)
    return std::nullopt;
  launch.replacedInputs = inputsReplacedByPacks(group, contraction, true, false, plan.source);
  launch.derivedConstants.push_back(std::move(weights->bytes));
  launch.parallelExtent = plan.tiles();
  return plan;
}

std::optional<PlaneWindow> planPooling(const LoweredGroup &group, LaunchShape &launch) {
  if (!group.pooling || group.pooling->read != group.pooling->load)
    return std::nullopt; // this kernel reads X as f32, with no rounding on the way
  const Pooling &pooling = *group.pooling;
  PlaneWindow plan;
  if (!planWindow(pooling.geometry, pooling.images * pooling.channels, plan))
    return std::nullopt;
  plan.combine = pooling.max ? PlaneWindow::Combine::Max : PlaneWindow::Combine::Add;
  plan.source = pooling.source;
  plan.channels = pooling.channels;
  plan.images = pooling.images;
  plan.planeStride = productOf(pooling.geometry.input);
  plan.imageStride = plan.channels * plan.planeStride;
  launch.parallelExtent = plan.tiles();
  return plan;
}

Kernel emitPlaneWindow(const LoweredGroup &group, const PlaneWindow &plan, const std::string &cpuLevel,
                       llvm::Module &module, bool hasF16c) {
  const bool weighted = plan.combine == PlaneWindow::Combine::MultiplyAdd;
  SINTER_ASSERT(weighted ? group.contraction.has_value() : group.pooling.has_value(), "plane window ",
                group.kernel.name, " has no description to emit");
  const Kernel &kernel = weighted ? group.contraction->kernel : group.pooling->kernel;
  const int64_t width = vectorWidth(cpuLevel);
  const int64_t tileColumns = roundUp(plan.outColumns, width), vectorsPerRow = tileColumns / width;
  const int64_t chunk = std::min<int64_t>(4, vectorsPerRow); // vectors computed together

  llvm::LLVMContext &context = module.getContext();
  llvm::IRBuilder<> b(context);
  llvm::Type *i64 = b.getInt64Ty(), *f32 = b.getFloatTy();
  auto *vector = llvm::FixedVectorType::get(f32, unsigned(width));
  const size_t bufferCount = kernel.buffers.size();

  // NAME.body(buffers..., [weights,] begin, end)
  const size_t pointers = bufferCount + (weighted ? 1 : 0);
  llvm::Function *body = createKernelBody(module, kernel.name, pointers,
                                          [&](size_t i) { return i < bufferCount && kernel.buffers[i].written; });
  body->addFnAttr("min-legal-vector-width", std::to_string(width * 32));
  body->addFnAttr("prefer-vector-width", std::to_string(width * 32));
  std::vector<llvm::Value *> buffers;
  for (size_t i = 0; i < pointers; ++i)
    buffers.push_back(body->getArg(unsigned(i)));
  llvm::Value *weights = weighted ? body->getArg(unsigned(bufferCount)) : nullptr;
  llvm::Value *begin = body->getArg(unsigned(pointers)), *end = body->getArg(unsigned(pointers + 1));

  b.SetInsertPoint(llvm::BasicBlock::Create(context, "entry", body));
  auto scratch = [&](llvm::Type *type, int64_t count, const char *name) {
    llvm::AllocaInst *alloca = b.CreateAlloca(type, b.getInt64(uint64_t(count)), name);
    alloca->setAlignment(llvm::Align(64));
    return alloca;
  };
  enum : int64_t { ParamChannel, ParamImage, ParamRow, ParamRows, ParamCount };
  llvm::Value *paramBuffer = scratch(i64, ParamCount, "params");
  llvm::Value *band = scratch(f32, plan.paddedRows * plan.rowPitch, "band");
  // At column stride > 1 a padded row is copied here first, then split into the band's phases.
  const bool phased = plan.strideColumns > 1;
  llvm::Value *stage = phased ? scratch(f32, plan.rowPitch, "stage") : nullptr;
  llvm::Value *tile = scratch(f32, plan.bandRows * tileColumns, "tile");

  // The epilogue, in kernel IR: for each of the band's outputs, acc from the tile, then the
  // description's statements (which store it): a contraction's at (b = channel, i = 0, j = image
  // * positions + position), a pooling's at (image, channel, position).
  Kernel epilogue = kernel;
  epilogue.body.clear();
  const int paramsId = int(epilogue.buffers.size());
  epilogue.buffers.push_back({"params", DType::Int64, ParamCount, false});
  const int tileId = int(epilogue.buffers.size());
  epilogue.buffers.push_back({"tile", DType::Float32, plan.bandRows * tileColumns, true});
  const int flatVar = int(epilogue.variables.size());
  epilogue.variables.push_back({"flat", DType::Int64});
  {
    auto param = [&](int64_t which) { return load(paramsId, DType::Int64, intConstant(which)); };
    // The tile holds the band's outputs densely, row after row (see the row loop below), so the
    // epilogue is one loop over them: long enough to vectorize where rows are short (7 or 14
    // columns), with the output position affine in it.
    ExprRef flat = var(flatVar, DType::Int64);
    ExprRef position = add(mul(param(ParamRow), plan.outColumns), flat);
    ExprRef value = load(tileId, DType::Float32, flat);
    std::vector<StmtRef> band, element;
    const std::vector<StmtRef> *statements;
    std::vector<StmtRef> rewritten;
    if (weighted) {
      // j = image * positions + position, substituted into the epilogue and simplified over the
      // two's ranges: at batch > 1 the output index then has no division per element.
      const ContractionSpec &spec = group.contraction->spec;
      const int64_t positions = plan.outRows * plan.outColumns;
      const int imageVar = int(epilogue.variables.size());
      epilogue.variables.push_back({"image", DType::Int64});
      const int positionVar = int(epilogue.variables.size());
      epilogue.variables.push_back({"position", DType::Int64});
      band = {assign(spec.b, param(ParamChannel)), assign(spec.i, intConstant(0)), assign(imageVar, param(ParamImage))};
      element = {assign(positionVar, position), assign(spec.acc, value)};
      Kernel ranged = epilogue;
      ranged.body = spec.epilogue;
      IndexRanges ranges(ranged);
      setContractionRanges(ranges, spec);
      ranges.setVariable(imageVar, {0, plan.images - 1});
      ranges.setVariable(positionVar, {0, positions - 1});
      ExprRef j = add(mul(var(imageVar, DType::Int64), positions), var(positionVar, DType::Int64));
      for (const StmtRef &statement : spec.epilogue)
        rewritten.push_back(ranges.simplify(substituted(statement, spec.j, j)));
      statements = &rewritten;
    } else {
      const Pooling &pooling = *group.pooling;
      band = {assign(pooling.image, param(ParamImage)), assign(pooling.channel, param(ParamChannel))};
      element = {assign(pooling.position, position), assign(pooling.acc, value)};
      statements = &pooling.epilogue;
    }
    element.insert(element.end(), statements->begin(), statements->end());
    band.push_back(forLoop(flatVar, mul(param(ParamRows), plan.outColumns), std::move(element)));
    epilogue.body = std::move(band);
  }
  std::vector<llvm::Value *> epilogueBuffers(buffers.begin(), buffers.begin() + long(bufferCount));
  epilogueBuffers.push_back(paramBuffer);
  epilogueBuffers.push_back(tile);
  KernelEmitter epilogueEmitter(epilogue, b, module, epilogueBuffers, hostMathLibrary(), hasF16c);

  auto constant = [&](int64_t value) { return b.getInt64(uint64_t(value)); };
  auto setParam = [&](int64_t which, llvm::Value *value) {
    b.CreateStore(value, b.CreateConstInBoundsGEP1_64(i64, paramBuffer, uint64_t(which)));
  };
  auto at = [&](llvm::Value *base, llvm::Value *offset) { return b.CreateInBoundsGEP(f32, base, offset); };
  llvm::Function *fmuladd = llvm::Intrinsic::getDeclaration(&module, llvm::Intrinsic::fmuladd, {vector});
  // A NaN never wins a MaxPool window, as in the reference (llvm.maxnum returns the other operand).
  llvm::Function *maximum = llvm::Intrinsic::getDeclaration(&module, llvm::Intrinsic::maxnum, {vector});
  const float padValue = plan.combine == PlaneWindow::Combine::Max ? -std::numeric_limits<float>::infinity() : 0.0f;
  llvm::Value *initial = plan.combine == PlaneWindow::Combine::Max
                             ? llvm::ConstantFP::get(vector, double(padValue))
                             : llvm::ConstantAggregateZero::get(vector);
  // `count` floats of the pad value from `destination`.
  auto fill = [&](llvm::Value *destination, int64_t count) {
    if (count <= 0)
      return;
    if (padValue == 0.0f) {
      b.CreateMemSet(destination, b.getInt8(0), uint64_t(count * 4), llvm::MaybeAlign(4));
      return;
    }
    emitLoop(b, b.getInt64(0), b.getInt64(uint64_t(count)), 1, [&](llvm::Value *x) {
      b.CreateAlignedStore(llvm::ConstantFP::get(f32, double(padValue)), b.CreateInBoundsGEP(f32, destination, x),
                           llvm::Align(4));
    }, "fill");
  };
  const int64_t stride = plan.strideColumns;
  auto *wide = llvm::FixedVectorType::get(f32, unsigned(width * stride));
  // The stage's columns past the padded row are read by the split below (into lanes no output
  // reads): the pad value, written once.
  if (phased)
    fill(at(stage, constant(plan.paddedColumns)), plan.rowPitch - plan.paddedColumns);
  // A staged row split into the band row `destination`'s phases: per `width` floats of each
  // phase, one load of stride vectors and one shuffle per phase.
  auto split = [&](llvm::Value *destination) {
    emitLoop(b, constant(0), constant(plan.phaseColumns), width, [&](llvm::Value *index) {
      llvm::Value *staged =
          b.CreateAlignedLoad(wide, at(stage, b.CreateMul(index, constant(stride))), llvm::Align(4));
      for (int64_t phase = 0; phase < stride; ++phase) {
        std::vector<int> lanes;
        for (int64_t lane = 0; lane < width; ++lane)
          lanes.push_back(int(lane * stride + phase));
        b.CreateAlignedStore(b.CreateShuffleVector(staged, lanes),
                             at(destination, b.CreateAdd(index, constant(phase * plan.phaseColumns))),
                             llvm::Align(4));
      }
    }, "split");
  };

  emitLoop(b, begin, end, 1, [&](llvm::Value *t) {
    llvm::Value *bandIndex = b.CreateURem(t, constant(plan.bands));
    llvm::Value *plane = b.CreateUDiv(t, constant(plan.bands));
    llvm::Value *channel = b.CreateURem(plane, constant(plan.channels));
    llvm::Value *image = b.CreateUDiv(plane, constant(plan.channels));
    llvm::Value *row0 = b.CreateMul(bandIndex, constant(plan.bandRows));
    llvm::Value *rowsLeft = b.CreateSub(constant(plan.outRows), row0);
    llvm::Value *rows = b.CreateSelect(b.CreateICmpSLT(rowsLeft, constant(plan.bandRows)), rowsLeft,
                                       constant(plan.bandRows));
    llvm::Value *input = at(buffers[size_t(plan.source)],
                            b.CreateAdd(b.CreateMul(image, constant(plan.imageStride)),
                                        b.CreateMul(channel, constant(plan.planeStride))));
    // The band's input, padded.
    const int64_t left = std::min(plan.padLeft, plan.paddedColumns);
    const int64_t copied = std::max<int64_t>(0, std::min(plan.inColumns, plan.paddedColumns - left));
    const int64_t right = plan.paddedColumns - left - copied;
    llvm::Value *firstRow = b.CreateSub(b.CreateMul(row0, constant(plan.strideRows)), constant(plan.padTop));
    emitLoop(b, constant(0), constant(plan.paddedRows), 1, [&](llvm::Value *pr) {
      llvm::Value *inputRow = b.CreateAdd(firstRow, pr);
      llvm::Value *bandRow = at(band, b.CreateMul(pr, constant(plan.rowPitch)));
      llvm::Value *destination = phased ? stage : bandRow;
      llvm::Value *inside = b.CreateAnd(b.CreateICmpSGE(inputRow, constant(0)),
                                        b.CreateICmpSLT(inputRow, constant(plan.inRows)));
      llvm::Function *function = b.GetInsertBlock()->getParent();
      auto *copy = llvm::BasicBlock::Create(context, "row.copy", function);
      auto *outside = llvm::BasicBlock::Create(context, "row.pad", function);
      auto *done = llvm::BasicBlock::Create(context, "row.done", function);
      b.CreateCondBr(inside, copy, outside);
      b.SetInsertPoint(copy);
      fill(destination, left);
      if (copied > 0)
        b.CreateMemCpy(at(destination, constant(left)), llvm::MaybeAlign(4),
                       at(input, b.CreateMul(inputRow, constant(plan.inColumns))), llvm::MaybeAlign(4),
                       uint64_t(copied * 4));
      fill(at(destination, constant(left + copied)), right);
      if (phased)
        split(bandRow);
      b.CreateBr(done);
      b.SetInsertPoint(outside);
      fill(bandRow, plan.rowPitch);
      b.CreateBr(done);
      b.SetInsertPoint(done);
    }, "pr");

    // Each output row, `count` vectors at a time from column `first`; rows of one to three
    // vectors (7, 14 or 28 outputs at AVX-512) several rows at a time, so that four sums are
    // in flight: with one sum a row, its taps were one chain of dependent multiply-adds
    // (5x5 over 960 channels at 7x7 ran at the FMA's latency).
    llvm::Value *tapsAt = b.CreateMul(channel, constant(plan.taps()));
    // `group` rows from `row`, each `count` vectors from column `first`; stored row after row at
    // the pitch of the output's rows: a row's last vector reaches past its end into the next
    // row's place, which the next row then overwrites (rows are stored in order); the last
    // row's reach ends within the tile's bandRows x tileColumns floats.
    auto vectors = [&](llvm::Value *row, int64_t group, llvm::Value *first, int64_t count) {
      std::vector<std::vector<llvm::Value *>> sums(size_t(group), std::vector<llvm::Value *>(size_t(count), initial));
      std::vector<llvm::Value *> rowBases;
      for (int64_t g = 0; g < group; ++g)
        rowBases.push_back(
            at(band, b.CreateMul(b.CreateAdd(row, constant(g)), constant(plan.strideRows * plan.rowPitch))));
      for (int64_t ky = 0; ky < plan.kernelRows; ++ky)
        for (int64_t kx = 0; kx < plan.kernelColumns; ++kx) {
          llvm::Value *broadcast = nullptr;
          if (weighted) {
            llvm::Value *tap = b.CreateAlignedLoad(
                f32, at(weights, b.CreateAdd(tapsAt, constant(ky * plan.kernelColumns + kx))), llvm::Align(4));
            broadcast = b.CreateVectorSplat(unsigned(width), tap);
          }
          for (int64_t g = 0; g < group; ++g) {
            // Output column ox's tap reads padded column ox * stride + kx * dilation: at stride
            // 1 the run from `first`, else the run from `first` of its phase, shifted.
            const int64_t reach = kx * plan.dilationColumns;
            const int64_t offset = phased ? (reach % stride) * plan.phaseColumns + reach / stride : reach;
            llvm::Value *tapRow =
                at(rowBases[size_t(g)], constant(ky * plan.dilationRows * plan.rowPitch + offset));
            for (int64_t v = 0; v < count; ++v) {
              llvm::Value *address = at(tapRow, b.CreateAdd(first, constant(v * width)));
              llvm::Value *x = b.CreateAlignedLoad(vector, address, llvm::Align(4));
              llvm::Value *&sum = sums[size_t(g)][size_t(v)];
              sum = plan.combine == PlaneWindow::Combine::MultiplyAdd ? b.CreateCall(fmuladd, {broadcast, x, sum})
                    : plan.combine == PlaneWindow::Combine::Max        ? b.CreateCall(maximum, {sum, x})
                                                                        : b.CreateFAdd(sum, x);
            }
          }
        }
      for (int64_t g = 0; g < group; ++g) {
        llvm::Value *tileRow = at(tile, b.CreateMul(b.CreateAdd(row, constant(g)), constant(plan.outColumns)));
        for (int64_t v = 0; v < count; ++v)
          b.CreateAlignedStore(sums[size_t(g)][size_t(v)], at(tileRow, b.CreateAdd(first, constant(v * width))),
                               llvm::Align(4));
      }
    };
    auto oneRow = [&](llvm::Value *row) {
      const int64_t fullChunks = vectorsPerRow / chunk, tail = vectorsPerRow % chunk;
      emitLoop(b, constant(0), constant(fullChunks * chunk * width), chunk * width,
               [&](llvm::Value *first) { vectors(row, 1, first, chunk); }, "chunk");
      if (tail > 0)
        vectors(row, 1, constant(fullChunks * chunk * width), tail);
    };
    const int64_t together = vectorsPerRow < 4 ? std::min<int64_t>(4 / vectorsPerRow, plan.bandRows) : 1;
    llvm::Value *grouped = constant(0);
    if (together > 1) {
      grouped = b.CreateSub(rows, b.CreateURem(rows, constant(together)));
      emitLoop(b, constant(0), grouped, together,
               [&](llvm::Value *row) { vectors(row, together, constant(0), vectorsPerRow); }, "rows");
    }
    emitLoop(b, grouped, rows, 1, oneRow, "row");

    setParam(ParamChannel, channel);
    setParam(ParamImage, image);
    setParam(ParamRow, row0);
    setParam(ParamRows, rows);
    epilogueEmitter.emitBody(t);
  }, "tile");
  b.CreateRetVoid();

  emitEntryPoint(module, body, kernel.name, pointers);
  Kernel described = kernel;
  described.parallelExtent = plan.tiles();
  described.flops = group.kernel.flops;
  return described;
}

} // namespace sinter::codegen::llvmgen
