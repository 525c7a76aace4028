// Design note. The kernel is three layers:
//
//   NAME(args, begin, end)               entry point: unpacks args, calls NAME.body
//   NAME.body(buffers..., packed..., begin, end)
//     for tile in [begin, end):          tile = (batch, m block, n block), n block fastest
//       for each KC block of r:
//         pack the run-time operand(s)   kernel IR (packRhs/packLhs below), via KernelEmitter
//         for each NR panel q, each slice of it the level's micro-kernel is wide, MR panel p:
//                                        the micro-kernel on (lhs panel, rhs slice)
//       epilogue over the tile           kernel IR: acc from the tile buffer, then spec.epilogue
//   sinter.microkernel.RxC.MRxNR(a, b, kLen, c, ldc, accumulate)   hand-written vector LLVM IR
//
// Everything the artifact stores (the compile-time panels of constant operands, the blocks and
// tiles of the launch) is planned once (planBlockedContraction) and is the same at every x86-64
// level; each level's kernel is emitted from that plan (emitBlockedContraction) with its own
// register block (microKernelFor: 6x8 of SSE, 6x16 of AVX2, 6x32 of AVX-512 on 6x32 panels),
// walking a wider compile-time panel in slices, and packs its run-time operand in panels of its
// own width.
//
// Packing and the epilogue are kernel IR, so the spec's expressions (im2col gathers, broadcast
// batch indices, bias, alpha/beta) go through the one emitter every kernel uses. They read their
// block's coordinates from a small i64 `params` buffer (an alloca SROA turns back into values).
// A convolution's run-time rhs reads its window through two small compile-time tables (per r,
// per output position; rhsWindowTable), so packing is a few table loads and adds per element;
// a pointwise convolution's is not packed at all but for a tile's last partial panel: the
// micro-kernel reads its whole panels in place, rows of X one plane apart (DirectRhs). Where the
// positions run along output rows (nearly every f32 convolution), the rhs is packed by row
// segments with vector copies instead (cpu_window_pack.h); a stride-1 2-D window is not packed:
// its tiles run over the padded row pitch and the micro-kernel reads padded input rows copied
// once per tile through a per-r offset table (PaddedWindow, cpu_padded_window.h).
// A pointwise convolution of a small plane may be computed transposed instead
// (BlockedContraction::transposed, planTransposedPointwise): positions as the MR rows, channels
// as the NR columns, X read in place as the lhs (a micro-kernel that takes the lhs rows' stride),
// the weights packed transposed at compile time as the rhs; its tile is transposed back in 8 x 8
// blocks of shuffles (transposeTile), and the usual epilogue stores it.
// Panels are zero-padded to MR rows / NR columns, so the micro-kernel never tests bounds; the
// epilogue stores only the tile's real elements.
#include "cpu_contraction.h"
#include "cpu_kernel_frame.h"
#include "cpu_padded_window.h"
#include "cpu_window_pack.h"

#include "sinter/codegen/llvm/kernel_emitter.h"

#include "sinter/codegen/kernel/expr_evaluator.h"
#include "sinter/codegen/kernel/index_program.h"
#include "sinter/ir/tensor.h"
#include "sinter/support/error.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/Intrinsics.h>

#include <algorithm>
#include <cstring>
#include <span>
#include <functional>
#include <limits>

namespace sinter::codegen::llvmgen {

PanelShape choosePanels(const ContractionSpec &spec) {
  PanelShape panels;
  // Columns: a panel as wide as two AVX-512 registers, narrower only for a narrower product.
  panels.columns = spec.n >= 32 ? 32 : spec.n >= 16 ? 16 : spec.n > 4 ? 8 : 4;
  // Rows: six; four where that divides a short product six does not, all of a tiny one.
  panels.rows = spec.m < 4 ? spec.m : spec.m % 6 != 0 && spec.m % 4 == 0 && spec.m <= 32 ? 4 : 6;
  return panels;
}

MicroKernelShape microKernelFor(const std::string &cpuLevel, const PanelShape &panels) {
  SINTER_ASSERT(cpuLevel == "x86-64-v2" || cpuLevel == "x86-64-v3" || cpuLevel == "x86-64-v4",
                "a micro-kernel needs a resolved x86-64 level, not '", cpuLevel, "'");
  const bool v4 = cpuLevel == "x86-64-v4", v3 = cpuLevel == "x86-64-v3";
  const int64_t widest = v4 ? 16 : v3 ? 8 : 4;
  MicroKernelShape shape;
  shape.width = std::min(widest, panels.columns);
  shape.vectors = std::min<int64_t>(2, panels.columns / shape.width);
  shape.rows = panels.rows;
  // At most 12 accumulators (of 16 xmm or ymm), leaving room for the rhs vectors and a broadcast.
  SINTER_ASSERT(shape.rows * shape.vectors <= 12, "a ", shape.rows, "x", shape.columns(),
                " micro-kernel does not fit the registers");
  return shape;
}

ContractionBlocking chooseBlocking(const ContractionSpec &spec, const PanelShape &panels) {
  ContractionBlocking blocking;
  blocking.panels = panels;
  int64_t mr = panels.rows, nr = panels.columns;
  // KC: a KC x NR rhs panel stays in L1 across the lhs panels; a short reduction is one block.
  blocking.kc = spec.k <= 384 ? spec.k : 256;
  blocking.mc = std::min(roundUp(spec.m, mr), roundUp(96, mr));
  blocking.nc = std::min(roundUp(spec.n, nr), roundUp(256, nr));
  auto count = [&] {
    blocking.mBlocks = ceilDiv(spec.m, blocking.mc);
    blocking.nBlocks = ceilDiv(spec.n, blocking.nc);
    blocking.tiles = spec.batch * blocking.mBlocks * blocking.nBlocks;
  };
  count();
  // Enough tiles to keep a few threads busy, while tiles stay large enough to amortise packing.
  // (Columns first: each m block packs the run-time rhs columns of its tile again. Down to 32
  // columns, whatever the panel width, as when panels were the level's: 16 wide at AVX2.)
  while (blocking.tiles < 8 && blocking.nc >= std::max<int64_t>(2 * nr, 64) && spec.flops() / blocking.tiles > 200000) {
    blocking.nc = roundUp(blocking.nc / 2, nr);
    count();
  }
  while (blocking.tiles < 8 && blocking.mc >= 4 * mr && spec.flops() / blocking.tiles > 200000) {
    blocking.mc = roundUp(blocking.mc / 2, mr);
    count();
  }
  return blocking;
}

Contraction transposedProduct(const Contraction &contraction) {
  Contraction transposed = contraction;
  ContractionSpec &spec = transposed.spec;
  std::swap(spec.m, spec.n);
  std::swap(spec.i, spec.j);
  std::swap(spec.lhs, spec.rhs);
  spec.lhsUnitStrideK = contraction.spec.rhsUnitStrideK;
  spec.rhsUnitStrideK = contraction.spec.lhsUnitStrideK;
  spec.window.reset();
  return transposed;
}

/// Whether every load of `expr` reads a constant input of the group (its data known now).
bool readsOnlyConstants(const ExprRef &expr, const LoweredGroup &group) {
  return !anyNode(expr, [&](const Expr &node) {
    return node.kind == ExprKind::Load &&
           (size_t(node.id) >= group.constantInputs.size() || !group.constantInputs[size_t(node.id)]);
  });
}

/// Marks every buffer that `expr` (or `statement`) loads from.
void markLoads(const ExprRef &expr, std::vector<bool> &read) {
  if (!expr)
    return;
  anyNode(expr, [&](const Expr &node) {
    if (node.kind == ExprKind::Load && size_t(node.id) < read.size())
      read[size_t(node.id)] = true;
    return false;
  });
}

void markLoads(const StmtRef &statement, std::vector<bool> &read) {
  markLoads(statement->a, read);
  markLoads(statement->b, read);
  for (const StmtRef &inner : statement->body)
    markLoads(inner, read);
  for (const StmtRef &inner : statement->orElse)
    markLoads(inner, read);
}


namespace {

/// An operand that is one element of a constant buffer, `[cast to f32] load(X, index)` with the
/// index pure arithmetic over the loop variables: packed by running the index as an
/// IndexProgram over whole rows of r, a few operations per element instead of a tree walk.
struct ConstantLoad {
  int buffer = -1;
  DType type = DType::Float32;
  IndexProgram index;
};

std::optional<ConstantLoad> constantLoad(const ExprRef &operand, const LoweredGroup &group) {
  ExprRef value = operand;
  if (value->kind == ExprKind::Cast && value->type == DType::Float32)
    value = value->operands[0];
  if (value->kind != ExprKind::Load ||
      (value->type != DType::Float32 && value->type != DType::Float16 && value->type != DType::BFloat16))
    return std::nullopt;
  if (value != operand && value->type == DType::Float32)
    return std::nullopt; // a cast from f32 to f32 is not what lowering writes
  if (size_t(value->id) >= group.constantInputs.size() || !group.constantInputs[size_t(value->id)] ||
      group.constantInputs[size_t(value->id)]->dtype() != value->type)
    return std::nullopt;
  std::optional<IndexProgram> index = IndexProgram::compile(value->operands[0]);
  if (!index)
    return std::nullopt;
  return ConstantLoad{value->id, value->type, std::move(*index)};
}

} // namespace

/// The operand packed for the whole matrix at compile time: batch x panels x k x width floats,
/// panel `p` holding rows (or columns) p * width ... + width - 1 interleaved per r, zero beyond
/// `extent`. `lhs` selects which operand: lhs(b, i, r) with i across the panel, else rhs(b, r, j).
/// An operand that does not depend on b is packed once.
std::optional<PackedOperand> packConstantOperand(const LoweredGroup &group, const Contraction &contraction,
                                                 bool lhs, int64_t width) {
  const ContractionSpec &spec = contraction.spec;
  const ExprRef &operand = lhs ? spec.lhs : spec.rhs;
  if (!readsOnlyConstants(operand, group))
    return std::nullopt;
  PackedOperand result;
  result.perBatch = spec.batch > 1 && usesVariable(operand, spec.b);
  std::optional<ConstantLoad> direct = constantLoad(operand, group);
  ExprEvaluator evaluator(contraction.kernel);
  for (size_t i = 0; i < group.constantInputs.size(); ++i)
    if (group.constantInputs[i])
      evaluator.setBuffer(int(i), group.constantInputs[i]->data());
  if (!direct && !evaluator.canEvaluate(operand))
    return std::nullopt;
  int64_t extent = lhs ? spec.m : spec.n, panels = ceilDiv(extent, width);
  int across = lhs ? spec.i : spec.j;
  int64_t batches = result.perBatch ? spec.batch : 1;
  std::vector<float> packed(size_t(batches * panels * spec.k * width), 0.0f);
  // One (batch, row or column) at a time: its k values go to one lane of its panel.
  auto packLine = [&](int64_t b, int64_t index, float *lane) {
    if (!direct) {
      evaluator.setVariable(spec.b, b);
      evaluator.setVariable(across, index);
      for (int64_t r = 0; r < spec.k; ++r) {
        evaluator.setVariable(spec.r, r);
        lane[r * width] = float(evaluator.evaluate(operand).floatValue);
      }
      return;
    }
    const Tensor &source = *group.constantInputs[size_t(direct->buffer)];
    const int64_t elements = int64_t(source.elementCount());
    direct->index.setVariable(spec.b, b);
    direct->index.setVariable(across, index);
    constexpr int64_t kChunk = 4096;
    for (int64_t r0 = 0; r0 < spec.k; r0 += kChunk) {
      int64_t count = std::min(kChunk, spec.k - r0);
      std::span<const int64_t> at = direct->index.evaluate(spec.r, r0, count);
      for (int64_t x = 0; x < count; ++x) {
        int64_t element = at[size_t(x)];
        SINTER_ASSERT(element >= 0 && element < elements, "a packed load of ", source.elementCount(),
                      " constant elements at ", element, " is out of bounds");
        float value;
        if (direct->type == DType::Float32) {
          std::memcpy(&value, reinterpret_cast<const char *>(source.data()) + element * 4, 4);
        } else {
          uint16_t bits;
          std::memcpy(&bits, reinterpret_cast<const char *>(source.data()) + element * 2, 2);
          value = direct->type == DType::Float16 ? halfToFloat(bits) : bfloat16ToFloat(bits);
        }
        lane[(r0 + x) * width] = value;
      }
    }
  };
  for (int64_t b = 0; b < batches; ++b)
    for (int64_t index = 0; index < extent; ++index) {
      int64_t panel = index / width;
      packLine(b, index, packed.data() + size_t(((b * panels + panel) * spec.k) * width + index % width));
    }
  result.bytes.resize(packed.size() * sizeof(float));
  std::memcpy(result.bytes.data(), packed.data(), result.bytes.size());
  return result;
}

std::vector<bool> inputsReplacedByPacks(const LoweredGroup &group, const Contraction &contraction, bool lhsPacked,
                                        bool rhsPacked, int alsoRead) {
  const ContractionSpec &spec = contraction.spec;
  const size_t bufferCount = contraction.kernel.buffers.size();
  std::vector<bool> stillRead(bufferCount, false), packedFrom(bufferCount, false);
  markLoads(spec.lhs, lhsPacked ? packedFrom : stillRead);
  markLoads(spec.rhs, rhsPacked ? packedFrom : stillRead);
  if (alsoRead >= 0)
    stillRead.at(size_t(alsoRead)) = true;
  for (const StmtRef &statement : spec.epilogue)
    markLoads(statement, stillRead);
  std::vector<bool> replaced(bufferCount, false);
  for (size_t x = 0; x < bufferCount; ++x)
    replaced[x] = packedFrom[x] && !stillRead[x] && x < group.constantInputs.size() && group.constantInputs[x];
  return replaced;
}

namespace {

/// A convolution's run-time rhs packed through two small tables (ContractionSpec::window): per
/// r, the channel's offset and the window's displacement in each spatial dim; per output
/// position, the window's origin in each dim. Packing then adds table entries and tests the
/// bounds, with none of the divisions, clamps and remainders of the gather expression, and the
/// tables grow with k + positions, not with k x n (nor with the batch). Lowering sets the window
/// only where X is read directly (describeConv); on products of up to kCheckedWindowPoints
/// points the tables are also checked against `rhs` at every (b, r, j), as an invariant.
struct WindowTable {
  std::vector<uint8_t> bytes; ///< i32: k rows of (channel offset, displacements), then positions rows of origins
  WindowGather gather;
};

constexpr int64_t kCheckedWindowPoints = int64_t(1) << 20;

std::optional<WindowTable> rhsWindowTable(const Contraction &contraction) {
  const ContractionSpec &spec = contraction.spec;
  if (!spec.window)
    return std::nullopt;
  const ConvolutionWindow &window = *spec.window;
  ExprRef value = spec.rhs, inside;
  if (value->kind == ExprKind::Select) {
    const ExprRef &otherwise = value->operands[2];
    if (otherwise->kind != ExprKind::Constant || otherwise->floatValue != 0.0)
      return std::nullopt;
    inside = value->operands[0];
    value = value->operands[1];
  }
  DType sourceType = DType::Float32;
  if (value->kind == ExprKind::Cast && value->type == DType::Float32 &&
      (value->operands[0]->type == DType::Float16 || value->operands[0]->type == DType::BFloat16)) {
    sourceType = value->operands[0]->type;
    value = value->operands[0];
  }
  if (value->kind != ExprKind::Load || value->type != sourceType)
    return std::nullopt;
  const BufferParam &source = contraction.kernel.buffers.at(size_t(value->id));
  const int64_t dims = int64_t(window.base.size());
  if (source.elements > std::numeric_limits<int32_t>::max() || spec.n % window.positions != 0)
    return std::nullopt;
  std::optional<IndexProgram> index = IndexProgram::compile(value->operands[0]);
  std::optional<IndexProgram> valid = inside ? IndexProgram::compile(inside) : std::nullopt;
  std::optional<IndexProgram> channel = IndexProgram::compile(window.channelOffset);
  if (!index || (inside && !valid) || !channel)
    return std::nullopt;
  std::vector<IndexProgram> base, displacement;
  for (int64_t d = 0; d < dims; ++d) {
    std::optional<IndexProgram> b = IndexProgram::compile(window.base[size_t(d)]);
    std::optional<IndexProgram> w = IndexProgram::compile(window.displacement[size_t(d)]);
    if (!b || !w)
      return std::nullopt;
    base.push_back(std::move(*b));
    displacement.push_back(std::move(*w));
  }
  auto fitsInt32 = [](int64_t v) { return v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max(); };
  // The tables.
  const int64_t rowWidth = 1 + dims;
  std::vector<int32_t> table(size_t(spec.k * rowWidth + window.positions * dims));
  for (int64_t r0 = 0; r0 < spec.k; r0 += 4096) {
    int64_t count = std::min<int64_t>(4096, spec.k - r0);
    std::span<const int64_t> offsets = channel->evaluate(spec.r, r0, count);
    for (int64_t x = 0; x < count; ++x) {
      if (!fitsInt32(offsets[size_t(x)]))
        return std::nullopt;
      table[size_t((r0 + x) * rowWidth)] = int32_t(offsets[size_t(x)]);
    }
    for (int64_t d = 0; d < dims; ++d) {
      std::span<const int64_t> shift = displacement[size_t(d)].evaluate(spec.r, r0, count);
      for (int64_t x = 0; x < count; ++x) {
        if (!fitsInt32(shift[size_t(x)]))
          return std::nullopt;
        table[size_t((r0 + x) * rowWidth + 1 + d)] = int32_t(shift[size_t(x)]);
      }
    }
  }
  const int64_t positionsAt = spec.k * rowWidth;
  for (int64_t d = 0; d < dims; ++d) {
    std::span<const int64_t> origin = base[size_t(d)].evaluate(spec.j, 0, window.positions);
    for (int64_t p = 0; p < window.positions; ++p) {
      if (!fitsInt32(origin[size_t(p)]))
        return std::nullopt;
      table[size_t(positionsAt + p * dims + d)] = int32_t(origin[size_t(p)]);
    }
  }
  // The check: the tables give rhs's bounds test and, inside, its element, at every point.
  std::vector<int64_t> where;
  const int64_t checkedBatches = spec.batch * spec.k * spec.n <= kCheckedWindowPoints ? spec.batch : 0;
  for (int64_t b = 0; b < checkedBatches; ++b)
    for (int64_t r = 0; r < spec.k; ++r) {
      index->setVariable(spec.b, b);
      index->setVariable(spec.r, r);
      if (valid) {
        valid->setVariable(spec.b, b);
        valid->setVariable(spec.r, r);
      }
      const int32_t *row = table.data() + r * rowWidth;
      for (int64_t j0 = 0; j0 < spec.n; j0 += 4096) {
        int64_t count = std::min<int64_t>(4096, spec.n - j0);
        if (valid) {
          std::span<const int64_t> v = valid->evaluate(spec.j, j0, count);
          where.assign(v.begin(), v.end());
        }
        std::span<const int64_t> element = index->evaluate(spec.j, j0, count);
        for (int64_t x = 0; x < count; ++x) {
          int64_t j = j0 + x, image = j / window.positions, position = j % window.positions;
          const int32_t *origin = table.data() + positionsAt + position * dims;
          bool in = true;
          int64_t offset = image * window.imageStride + b * window.groupStride + row[0];
          for (int64_t d = 0; d < dims; ++d) {
            int64_t at = int64_t(origin[d]) + row[1 + d];
            in = in && at >= 0 && at < window.extent[size_t(d)];
            offset += at * window.stride[size_t(d)];
          }
          bool expected = !valid || where[size_t(x)];
          SINTER_ASSERT(in == expected && (!in || offset == element[size_t(x)]), "the window tables of ",
                        contraction.kernel.name, " disagree with its gather at b=", b, " r=", r, " j=", j);
        }
      }
    }
  WindowTable result;
  result.gather = {value->id, sourceType, dims, positionsAt, int64_t(table.size())};
  // Rows: the geometry's innermost output extent and stride, if the position table agrees.
  const WindowGeometry &geometry = window.geometry;
  if (dims > 0 && geometry.rank() == size_t(dims) && geometry.output.back() > 0 &&
      window.positions % geometry.output.back() == 0) {
    const int64_t length = geometry.output.back(), step = geometry.strides.back();
    bool rows = true;
    for (int64_t p = 0; p < window.positions && rows; ++p) {
      if (p % length == 0)
        continue;
      const int32_t *origin = table.data() + positionsAt + p * dims, *previous = origin - dims;
      for (int64_t d = 0; d + 1 < dims; ++d)
        rows = rows && origin[d] == previous[d];
      rows = rows && int64_t(origin[dims - 1]) == int64_t(previous[dims - 1]) + step;
    }
    if (rows) {
      result.gather.rowLength = length;
      result.gather.rowStep = step;
    }
  }
  result.bytes.resize(table.size() * sizeof(int32_t));
  std::memcpy(result.bytes.data(), table.data(), result.bytes.size());
  return result;
}

/// sinter.microkernel.RxC.AxB: c[0..R)[0..C) (row stride ldc) = (accumulate ? c : 0) + sum over
/// r < kLen of a[r * A + row] * b[r * ldb + column], where A is the panels' rows and ldb the rhs
/// rows' stride (B, the panel's columns, for a packed panel, whose slice starts at b; the input
/// plane for a pointwise convolution's rhs read in place). `tapped`: the last argument is instead
/// a pointer to i32 offsets, and rhs row r starts at b + offsets[r] (a padded window's runs,
/// cpu_padded_window.h). `stridedLhs`: an eighth argument, lda, replaces A as the lhs rows'
/// stride (the transposed product's lhs read in place: each r's MR rows are contiguous floats of
/// X's channel plane, `plane` apart). Built once per module and shape.
llvm::Function *microKernel(llvm::Module &module, const MicroKernelShape &shape, const PanelShape &panels,
                            bool tapped = false, bool stridedLhs = false) {
  std::string name = "sinter.microkernel." + std::to_string(shape.rows) + "x" + std::to_string(shape.columns()) +
                     "." + std::to_string(panels.rows) + "x" + std::to_string(panels.columns) +
                     (tapped ? ".taps" : "") + (stridedLhs ? ".lda" : "");
  if (llvm::Function *existing = module.getFunction(name))
    return existing;
  llvm::LLVMContext &context = module.getContext();
  llvm::IRBuilder<> b(context);
  llvm::Type *ptr = llvm::PointerType::getUnqual(context);
  llvm::Type *i64 = b.getInt64Ty(), *f32 = b.getFloatTy();
  auto *vector = llvm::FixedVectorType::get(f32, unsigned(shape.width));
  std::vector<llvm::Type *> parameters = {ptr, ptr, i64, ptr, i64, b.getInt1Ty(), tapped ? ptr : i64};
  if (stridedLhs)
    parameters.push_back(i64);
  auto *function = llvm::Function::Create(llvm::FunctionType::get(b.getVoidTy(), parameters, false),
                                          llvm::Function::InternalLinkage, name, module);
  function->addFnAttr(llvm::Attribute::NoUnwind);
  function->addFnAttr(llvm::Attribute::NoInline);
  // Use full-width registers even where the CPU's tuning prefers 256-bit vectors.
  function->addFnAttr("min-legal-vector-width", std::to_string(shape.width * 32));
  function->addFnAttr("prefer-vector-width", std::to_string(shape.width * 32));
  for (unsigned arg : {0u, 1u, 3u})
    function->addParamAttr(arg, llvm::Attribute::NoAlias);
  function->addParamAttr(0, llvm::Attribute::ReadOnly);
  function->addParamAttr(1, llvm::Attribute::ReadOnly);
  llvm::Value *a = function->getArg(0), *bPanel = function->getArg(1), *kLen = function->getArg(2);
  llvm::Value *c = function->getArg(3), *ldc = function->getArg(4), *accumulate = function->getArg(5);
  llvm::Value *ldb = function->getArg(6);
  llvm::Value *lda = stridedLhs ? static_cast<llvm::Value *>(function->getArg(7)) : b.getInt64(uint64_t(panels.rows));

  auto *entry = llvm::BasicBlock::Create(context, "entry", function);
  auto *loop = llvm::BasicBlock::Create(context, "r.loop", function);
  auto *exit = llvm::BasicBlock::Create(context, "exit", function);
  b.SetInsertPoint(entry);
  int64_t rows = shape.rows, vectors = shape.vectors;
  std::vector<llvm::Value *> cAddress(size_t(rows * vectors)), initial(size_t(rows * vectors));
  llvm::Value *zero = llvm::ConstantAggregateZero::get(vector);
  for (int64_t row = 0; row < rows; ++row)
    for (int64_t v = 0; v < vectors; ++v) {
      llvm::Value *offset = b.CreateAdd(b.CreateMul(ldc, b.getInt64(row)), b.getInt64(v * shape.width));
      llvm::Value *address = b.CreateInBoundsGEP(f32, c, offset);
      cAddress[size_t(row * vectors + v)] = address;
      initial[size_t(row * vectors + v)] = zero;
    }
  // Load the previous partial sums only when accumulating (the tile buffer starts uninitialised).
  auto *load = llvm::BasicBlock::Create(context, "load", function, loop);
  b.CreateCondBr(accumulate, load, loop);
  b.SetInsertPoint(load);
  std::vector<llvm::Value *> loaded(initial.size());
  for (size_t x = 0; x < initial.size(); ++x)
    loaded[x] = b.CreateAlignedLoad(vector, cAddress[x], llvm::Align(4));
  b.CreateBr(loop);

  b.SetInsertPoint(loop);
  llvm::PHINode *r = b.CreatePHI(i64, 3, "r");
  r->addIncoming(b.getInt64(0), entry);
  r->addIncoming(b.getInt64(0), load);
  std::vector<llvm::PHINode *> sums(initial.size());
  for (size_t x = 0; x < initial.size(); ++x) {
    sums[x] = b.CreatePHI(vector, 3, "acc");
    sums[x]->addIncoming(initial[x], entry);
    sums[x]->addIncoming(loaded[x], load);
  }
  llvm::Function *fmuladd = llvm::Intrinsic::getDeclaration(&module, llvm::Intrinsic::fmuladd, {vector});
  std::vector<llvm::Value *> columnsAt(static_cast<size_t>(vectors));
  llvm::Value *bRow =
      tapped ? b.CreateGEP(f32, bPanel,
                           b.CreateSExt(b.CreateAlignedLoad(b.getInt32Ty(), b.CreateInBoundsGEP(b.getInt32Ty(), ldb, r),
                                                            llvm::Align(4)),
                                        i64))
             : b.CreateInBoundsGEP(f32, bPanel, b.CreateMul(r, ldb));
  for (int64_t v = 0; v < vectors; ++v)
    columnsAt[size_t(v)] = b.CreateAlignedLoad(
        vector, b.CreateConstInBoundsGEP1_64(f32, bRow, uint64_t(v * shape.width)), llvm::Align(4));
  llvm::Value *aRow = b.CreateInBoundsGEP(f32, a, b.CreateMul(r, lda));
  std::vector<llvm::Value *> next(sums.size());
  for (int64_t row = 0; row < rows; ++row) {
    llvm::Value *scalar =
        b.CreateAlignedLoad(f32, b.CreateConstInBoundsGEP1_64(f32, aRow, uint64_t(row)), llvm::Align(4));
    llvm::Value *broadcast = b.CreateVectorSplat(unsigned(shape.width), scalar);
    for (int64_t v = 0; v < vectors; ++v) {
      size_t x = size_t(row * vectors + v);
      next[x] = b.CreateCall(fmuladd, {broadcast, columnsAt[size_t(v)], sums[x]});
    }
  }
  llvm::Value *rNext = b.CreateAdd(r, b.getInt64(1), "r.next", true, true);
  r->addIncoming(rNext, loop);
  for (size_t x = 0; x < sums.size(); ++x)
    sums[x]->addIncoming(next[x], loop);
  b.CreateCondBr(b.CreateICmpSLT(rNext, kLen), loop, exit);

  b.SetInsertPoint(exit);
  for (size_t x = 0; x < sums.size(); ++x)
    b.CreateAlignedStore(next[x], cAddress[x], llvm::Align(4));
  b.CreateRetVoid();
  return function;
}

/// Stores the `rows` x `columns` tile (row-major, rows `pitch` floats apart) transposed into
/// `transposed` (column c's rows at c * transposedPitch), in 8 x 8 blocks of vector shuffles
/// (unpack, pairwise shuffle, lane swap: AVX's 8 x 8 transpose, which LLVM splits for SSE).
/// Blocks past the edge are copied whole: the buffers hold whole blocks, and the epilogue reads
/// only the real elements.
void transposeTile(llvm::IRBuilder<> &b, llvm::Value *tile, int64_t pitch, llvm::Value *transposed,
                   int64_t transposedPitch, llvm::Value *rows, llvm::Value *columns) {
  llvm::Type *f32 = b.getFloatTy();
  auto *vector = llvm::FixedVectorType::get(f32, 8);
  auto blocks = [&](llvm::Value *extent) { return b.CreateUDiv(b.CreateAdd(extent, b.getInt64(7)), b.getInt64(8)); };
  auto shuffle = [&](llvm::Value *x, llvm::Value *y, std::initializer_list<int> mask) {
    return b.CreateShuffleVector(x, y, llvm::ArrayRef<int>(mask.begin(), mask.size()));
  };
  emitLoop(b, b.getInt64(0), blocks(rows), 1, [&](llvm::Value *rowBlock) {
    emitLoop(b, b.getInt64(0), blocks(columns), 1, [&](llvm::Value *columnBlock) {
      llvm::Value *row0 = b.CreateMul(rowBlock, b.getInt64(8)), *column0 = b.CreateMul(columnBlock, b.getInt64(8));
      std::vector<llvm::Value *> in(8), unpacked(8), paired(8);
      for (int64_t x = 0; x < 8; ++x)
        in[size_t(x)] = b.CreateAlignedLoad(
            vector,
            b.CreateInBoundsGEP(f32, tile, b.CreateAdd(b.CreateMul(b.CreateAdd(row0, b.getInt64(x)), b.getInt64(pitch)),
                                                       column0)),
            llvm::Align(4));
      // unpacked[2h] / [2h + 1]: rows 2h, 2h + 1 interleaved, low / high pairs of each 128-bit half.
      for (size_t h = 0; h < 4; ++h) {
        unpacked[2 * h] = shuffle(in[2 * h], in[2 * h + 1], {0, 8, 1, 9, 4, 12, 5, 13});
        unpacked[2 * h + 1] = shuffle(in[2 * h], in[2 * h + 1], {2, 10, 3, 11, 6, 14, 7, 15});
      }
      // paired[4q + c]: column c (and c + 4 in the high half) of rows 4q ... 4q + 3.
      for (size_t q = 0; q < 2; ++q)
        for (size_t half = 0; half < 2; ++half) {
          llvm::Value *x = unpacked[4 * q + half], *y = unpacked[4 * q + 2 + half];
          paired[4 * q + 2 * half] = shuffle(x, y, {0, 1, 8, 9, 4, 5, 12, 13});
          paired[4 * q + 2 * half + 1] = shuffle(x, y, {2, 3, 10, 11, 6, 7, 14, 15});
        }
      for (int64_t c = 0; c < 8; ++c) {
        llvm::Value *low = paired[size_t(c % 4)], *high = paired[size_t(4 + c % 4)];
        llvm::Value *out = c < 4 ? shuffle(low, high, {0, 1, 2, 3, 8, 9, 10, 11})
                                 : shuffle(low, high, {4, 5, 6, 7, 12, 13, 14, 15});
        b.CreateAlignedStore(
            out,
            b.CreateInBoundsGEP(f32, transposed,
                                b.CreateAdd(b.CreateMul(b.CreateAdd(column0, b.getInt64(c)), b.getInt64(transposedPitch)),
                                            row0)),
            llvm::Align(4));
      }
    }, "transpose.column");
  }, "transpose.row");
}

/// Asks the loop vectorizer not to interleave the loops among the blocks after `last` (those
/// just emitted): a transposed product's epilogue runs over a plane's positions (49 at 7x7), and
/// with 8 lanes interleaved 4 times one vector iteration took 32 of them and left 17 to the
/// scalar remainder, where a ReLU6's NaN-aware minimum and maximum are several instructions
/// each. Loops are found by their back edges (a branch to a block before it).
void interleaveOnce(llvm::Function *function, llvm::BasicBlock *last) {
  llvm::LLVMContext &context = function->getContext();
  std::vector<llvm::BasicBlock *> blocks;
  for (llvm::BasicBlock *block = last->getNextNode(); block; block = block->getNextNode())
    blocks.push_back(block);
  auto position = [&](llvm::BasicBlock *block) { return std::find(blocks.begin(), blocks.end(), block); };
  for (auto at = blocks.begin(); at != blocks.end(); ++at) {
    auto *branch = llvm::dyn_cast_or_null<llvm::BranchInst>((*at)->getTerminator()); // the open block has none
    if (!branch)
      continue;
    for (llvm::BasicBlock *successor : branch->successors())
      if (position(successor) <= at) {
        llvm::Metadata *once[] = {llvm::MDString::get(context, "llvm.loop.interleave.count"),
                                  llvm::ConstantAsMetadata::get(llvm::ConstantInt::get(llvm::Type::getInt32Ty(context), 1))};
        // Whatever the emitter said of the loop (llvm.loop.unroll.disable) is kept beside it.
        std::vector<llvm::Metadata *> properties = {nullptr, llvm::MDNode::get(context, once)};
        if (llvm::MDNode *existing = branch->getMetadata(llvm::LLVMContext::MD_loop))
          for (unsigned x = 1; x < existing->getNumOperands(); ++x)
            properties.push_back(existing->getOperand(x));
        llvm::MDNode *loop = llvm::MDNode::getDistinct(context, properties);
        loop->replaceOperandWith(0, loop);
        branch->setMetadata(llvm::LLVMContext::MD_loop, loop);
        break;
      }
  }
}

/// Kernel-IR programs around the micro-kernel: the contraction's kernel plus scratch buffers and
/// loop variables; each program is one body emitted where the tile loop needs it.
struct TileProgram {
  Kernel kernel;
  int params = 0, lhsPack = 0, rhsPack = 0, tile = 0, gather = 0; ///< buffer indices
  int outer = 0, middle = 0, inner = 0;               ///< loop variables
  int image = 0, first = 0, count = 0, position = 0;  ///< the epilogue's per-image pieces
  int rowStart = 0;                                   ///< a padded window's: an output row's column
};

/// The `params` buffer: the block's batch, first row and column, first r and its length, and the
/// rows and columns of the tile that exist.
enum Param : int64_t {
  ParamBatch, ParamRow, ParamColumn, ParamReduction, ParamReductionLength, ParamRows, ParamColumns,
  ParamImage, ///< a padded window's tiles: the image (their columns are within it)
  ParamCount
};

TileProgram tileProgram(const Contraction &contraction, const ContractionBlocking &blocking, int64_t tableEntries,
                        int64_t tileElements) {
  TileProgram program{contraction.kernel};
  Kernel &kernel = program.kernel;
  kernel.body.clear();
  auto addBuffer = [&](const std::string &name, DType dtype, int64_t elements, bool written) {
    kernel.buffers.push_back({name, dtype, elements, written});
    return int(kernel.buffers.size() - 1);
  };
  auto addVariable = [&](const std::string &name) {
    kernel.variables.push_back({name, DType::Int64});
    return int(kernel.variables.size() - 1);
  };
  program.params = addBuffer("params", DType::Int64, ParamCount, false);
  program.lhsPack = addBuffer("lhs_pack", DType::Float32, blocking.mc * blocking.kc, true);
  program.rhsPack = addBuffer("rhs_pack", DType::Float32, blocking.kc * blocking.nc, true);
  program.tile = addBuffer("tile", DType::Float32, tileElements, true);
  program.gather = addBuffer("rhs_window", DType::Int32, std::max<int64_t>(tableEntries, 1), false);
  program.outer = addVariable("panel");
  program.middle = addVariable("rr");
  program.inner = addVariable("lane");
  program.image = addVariable("image");
  program.first = addVariable("first");
  program.count = addVariable("count");
  program.position = addVariable("position");
  program.rowStart = addVariable("row_start");
  return program;
}

ExprRef param(const TileProgram &program, Param which) {
  return load(program.params, DType::Int64, intConstant(which));
}

/// Packs one KC block of an operand for the tile: panels of `width` lanes (rows i for the lhs,
/// columns j for the rhs), interleaved per r; lanes past the tile's edge are zero. Full panels
/// carry no bounds test.
std::vector<StmtRef> packOperand(const TileProgram &program, const ContractionSpec &spec, bool lhs, int64_t width,
                                 const WindowGather *window = nullptr, int64_t inPlacePositions = 0) {
  ExprRef kLen = param(program, ParamReductionLength);
  ExprRef extent = param(program, lhs ? ParamRows : ParamColumns);
  ExprRef origin = param(program, lhs ? ParamRow : ParamColumn);
  int across = lhs ? spec.i : spec.j, target = lhs ? program.lhsPack : program.rhsPack;
  ExprRef value = lhs ? spec.lhs : spec.rhs;
  if (window) {
    // rhs through the window tables (rhsWindowTable): X at the sum of table entries, or 0
    // outside the input.
    const ConvolutionWindow &described = *spec.window;
    auto entry = [&](const ExprRef &at) { return cast(load(program.gather, DType::Int32, at), DType::Int64); };
    ExprRef j = var(spec.j, DType::Int64), r = var(spec.r, DType::Int64);
    bool oneImage = described.positions == spec.n;
    ExprRef position = oneImage ? j : rem(j, described.positions);
    ExprRef row = mul(r, 1 + window->dims);
    ExprRef originRow = add(mul(position, window->dims), intConstant(window->positionsAt));
    ExprRef offset = add(mul(var(spec.b, DType::Int64), described.groupStride), entry(row));
    if (!oneImage)
      offset = add(offset, mul(div(j, described.positions), described.imageStride));
    ExprRef inside = boolConstant(true);
    for (int64_t d = 0; d < window->dims; ++d) {
      ExprRef at = add(entry(add(originRow, intConstant(d))), entry(add(row, intConstant(1 + d))));
      inside = binary(BinaryOp::LogicalAnd, inside,
                      binary(BinaryOp::LogicalAnd, binary(BinaryOp::Ge, at, intConstant(0)),
                             binary(BinaryOp::Lt, at, intConstant(described.extent[size_t(d)]))));
      offset = add(offset, mul(at, described.stride[size_t(d)]));
    }
    ExprRef element = load(window->source, window->sourceType, select(inside, offset, intConstant(0)));
    if (window->sourceType != DType::Float32)
      element = cast(element, DType::Float32);
    value = select(inside, element, constant(DType::Float32, 0));
  }
  ExprRef panel = var(program.outer, DType::Int64), rr = var(program.middle, DType::Int64),
          lane = var(program.inner, DType::Int64);
  auto panelLoops = [&](bool guarded) {
    ExprRef within = add(mul(panel, width), lane);
    ExprRef at = add(mul(add(mul(panel, kLen), rr), width), lane);
    std::vector<StmtRef> element = {assign(across, add(origin, within))};
    StmtRef write = store(target, at, value);
    if (guarded)
      element.push_back(ifThen(binary(BinaryOp::Lt, within, extent), {write},
                               {store(target, at, constant(DType::Float32, 0))}));
    else
      element.push_back(write);
    return forLoop(program.middle, kLen,
                   {assign(spec.r, add(param(program, ParamReduction), rr)),
                    forLoop(program.inner, intConstant(width), element)});
  };
  ExprRef fullPanels = div(extent, width);
  std::vector<StmtRef> body = {assign(spec.b, param(program, ParamBatch))};
  if (inPlacePositions == 0) {
    body.push_back(forLoop(program.outer, fullPanels, {panelLoops(false)}));
  } else {
    // The rest is read in place (DirectRhs): only whole panels across an image's end are packed.
    ExprRef first = rem(add(origin, mul(panel, width)), inPlacePositions);
    ExprRef crosses = binary(BinaryOp::Gt, add(first, intConstant(width)), intConstant(inPlacePositions));
    body.push_back(forLoop(program.outer, fullPanels, {ifThen(crosses, {panelLoops(false)})}));
  }
  body.push_back(ifThen(binary(BinaryOp::Ne, rem(extent, width), intConstant(0)),
                        {assign(program.outer, fullPanels), panelLoops(true)}));
  return body;
}

/// The epilogue over the tile's real elements: acc from the tile buffer, then spec.epilogue.
/// When the columns span several images (a convolution at batch > 1: j = image * positions +
/// position), the columns are walked image by image and the epilogue is written over (image,
/// position), with its index arithmetic simplified over their ranges: the output index is then
/// contiguous in the position, with no division per element, and the loop vectorizes.
std::vector<StmtRef> tileEpilogue(const TileProgram &program, const Kernel &kernel, const ContractionSpec &spec,
                                  int64_t tileColumns) {
  ExprRef row = var(program.outer, DType::Int64), column = var(program.inner, DType::Int64);
  ExprRef column0 = param(program, ParamColumn), columns = param(program, ParamColumns);
  const int64_t positions = spec.window ? spec.window->positions : 0;
  if (positions == 0 || positions >= spec.n || spec.n % positions != 0) {
    std::vector<StmtRef> element = {
        assign(spec.j, add(column0, column)),
        assign(spec.acc, load(program.tile, DType::Float32, add(mul(row, tileColumns), column)))};
    element.insert(element.end(), spec.epilogue.begin(), spec.epilogue.end());
    return {assign(spec.b, param(program, ParamBatch)),
            forLoop(program.outer, param(program, ParamRows),
                    {assign(spec.i, add(param(program, ParamRow), row)),
                     forLoop(program.inner, param(program, ParamColumns), element)})};
  }
  ExprRef image = var(program.image, DType::Int64), first = var(program.first, DType::Int64);
  ExprRef j = add(mul(image, positions), var(program.position, DType::Int64));
  Kernel ranged = kernel;
  ranged.body = spec.epilogue;
  IndexRanges ranges(ranged);
  setContractionRanges(ranges, spec);
  ranges.setVariable(program.image, {0, spec.n / positions - 1});
  ranges.setVariable(program.first, {0, positions - 1});
  ranges.setVariable(program.position, {0, positions - 1});
  std::vector<StmtRef> element = {
      assign(program.position, add(first, column)),
      assign(spec.acc, load(program.tile, DType::Float32, add(mul(row, tileColumns), sub(j, column0))))};
  for (const StmtRef &statement : spec.epilogue)
    element.push_back(ranges.simplify(substituted(statement, spec.j, j)));
  // The tile's images: from column0's to the last column's; in each, positions [first, first + count).
  ExprRef firstImage = div(column0, positions);
  ExprRef images = sub(div(add(add(column0, columns), positions - 1), positions), firstImage);
  ExprRef start = mul(image, positions);
  std::vector<StmtRef> perImage = {
      assign(program.image, add(firstImage, var(program.middle, DType::Int64))),
      assign(program.first, sub(binary(BinaryOp::Max, column0, start), start)),
      assign(program.count, sub(sub(binary(BinaryOp::Min, add(column0, columns), add(start, positions)), start), first)),
      forLoop(program.inner, var(program.count, DType::Int64), element)};
  return {assign(spec.b, param(program, ParamBatch)),
          forLoop(program.outer, param(program, ParamRows),
                  {assign(spec.i, add(param(program, ParamRow), row)), forLoop(program.middle, images, perImage)})};
}

/// The epilogue of a padded window's tile (cpu_padded_window.h): the tile's columns [column0,
/// column0 + columns) are on the padded pitch within one image; for each output row they cover,
/// those of ox < outputWidth are stored, at j = image * positions + oy * outputWidth + ox, with
/// the index arithmetic simplified over (image, position) as for a tile across images.
std::vector<StmtRef> paddedTileEpilogue(const TileProgram &program, const Kernel &kernel, const ContractionSpec &spec,
                                        int64_t tileColumns, const PaddedWindow &padded) {
  ExprRef row = var(program.outer, DType::Int64), column = var(program.inner, DType::Int64);
  ExprRef column0 = param(program, ParamColumn), columns = param(program, ParamColumns);
  ExprRef image = var(program.image, DType::Int64), first = var(program.first, DType::Int64);
  ExprRef rowStart = var(program.rowStart, DType::Int64);
  Kernel ranged = kernel;
  ranged.body = spec.epilogue;
  IndexRanges ranges(ranged);
  setContractionRanges(ranges, spec);
  ranges.setVariable(program.image, {0, padded.images - 1});
  ranges.setVariable(program.position, {0, padded.positions - 1});
  ExprRef j = add(mul(image, padded.positions), var(program.position, DType::Int64));
  // Output row oy starts at padded column rowStart = oy * pitch; its position is oy * outputWidth.
  ExprRef outputRow = div(rowStart, padded.pitch);
  std::vector<StmtRef> element = {
      assign(program.position, add(mul(outputRow, padded.outputWidth), add(first, column))),
      assign(spec.acc, load(program.tile, DType::Float32,
                            add(mul(row, tileColumns), sub(add(rowStart, add(first, column)), column0))))};
  for (const StmtRef &statement : spec.epilogue)
    element.push_back(ranges.simplify(substituted(statement, spec.j, j)));
  // The output rows from column0's to the last column's; in each, columns [first, first + count).
  ExprRef firstRow = div(column0, padded.pitch);
  ExprRef rowCount = sub(add(div(sub(add(column0, columns), intConstant(1)), padded.pitch), intConstant(1)), firstRow);
  std::vector<StmtRef> perRow = {
      assign(program.rowStart, mul(add(firstRow, var(program.middle, DType::Int64)), padded.pitch)),
      assign(program.first, sub(binary(BinaryOp::Max, column0, rowStart), rowStart)),
      assign(program.count, sub(sub(binary(BinaryOp::Min, add(column0, columns), add(rowStart, padded.outputWidth)),
                                    rowStart),
                                first)),
      forLoop(program.inner, var(program.count, DType::Int64), element)};
  return {assign(spec.b, param(program, ParamBatch)), assign(program.image, param(program, ParamImage)),
          forLoop(program.outer, param(program, ParamRows),
                  {assign(spec.i, add(param(program, ParamRow), row)), forLoop(program.middle, rowCount, perRow)})};
}

/// Narrower products than worthTiling accepts still gain from the micro-kernel on the CPU, as
/// long as a tile row fills an SSE vector: the naive loop is one scalar dependency chain with
/// the gather's index arithmetic in it. That includes depthwise convolutions (m = 1 per group:
/// a one-row micro-kernel over packed windows); matrix-vector products (n = 1) stay naive.
bool worthBlockingOnCpu(const ContractionSpec &spec) {
  return spec.n >= 4 && spec.k >= 8 && spec.flops() >= 32768;
}

/// The rhs of a pointwise convolution read in place (DirectRhs), when `spec` is one: a 1 x 1
/// window at stride 1 without padding over f32 X, r stepping through the channels one plane
/// apart.
std::optional<DirectRhs> pointwiseRhs(const ContractionSpec &spec, const WindowGather &gather) {
  const ConvolutionWindow &window = *spec.window;
  const WindowGeometry &geometry = window.geometry;
  if (gather.sourceType != DType::Float32 || geometry.output != geometry.input)
    return std::nullopt;
  for (size_t d = 0; d < geometry.rank(); ++d)
    if (geometry.kernel[d] != 1 || geometry.strides[d] != 1 || geometry.padBegin[d] != 0)
      return std::nullopt;
  const int64_t plane = window.positions;
  std::optional<IndexProgram> channel = IndexProgram::compile(window.channelOffset);
  if (!channel)
    return std::nullopt;
  std::span<const int64_t> offsets = channel->evaluate(spec.r, 0, spec.k);
  for (int64_t r = 0; r < spec.k; ++r)
    if (offsets[size_t(r)] != r * plane)
      return std::nullopt;
  return DirectRhs{gather.source, plane, window.imageStride, window.groupStride, window.positions};
}

/// The outputs the micro-kernels compute along one side of a product: `extent` cut into blocks of
/// `block`, each into panels of `panel`, a block's last panel costing `narrow` where its real
/// part fits that (the one-vector micro-kernel), else a whole panel.
int64_t computedExtent(int64_t extent, int64_t block, int64_t panel, int64_t narrow) {
  int64_t total = 0;
  for (int64_t start = 0; start < extent; start += block) {
    const int64_t length = std::min(block, extent - start), rest = length % panel;
    total += length - rest + (rest == 0 ? 0 : rest <= narrow ? narrow : panel);
  }
  return total;
}

/// The multiply-adds the AVX-512 micro-kernels (16 lanes, a one-vector slice for a narrow last
/// one) compute for `spec` blocked as `blocking`, padding included, per r.
int64_t computedOutputs(const ContractionSpec &spec, const ContractionBlocking &blocking) {
  const int64_t columns = blocking.panels.columns, width = std::min<int64_t>(16, columns);
  return spec.batch * computedExtent(spec.m, blocking.mc, blocking.panels.rows, blocking.panels.rows) *
         computedExtent(spec.n, blocking.nc, columns, columns > width ? width : columns);
}

/// A pointwise convolution is computed transposed (BlockedContraction::transposed) when that
/// computes at most this fraction of the outputs the usual form does: 7x7 planes (54 rows
/// against 64 columns: 0.84), 14x14 planes of 160 or 1024 channels (0.94), not 28x28 ones (786
/// against 800: 0.98), nor small planes of several images, whose columns run across the images.
/// The transposed form costs a little more per output (its tile is transposed back for the
/// epilogue; partial lhs panels are packed): 576 -> 96 @14x14 (0.952) measured 4% faster
/// transposed at batch 1, but layers of 8 images at 0.96-0.97 the same or slower, so the line
/// is below both (docs/performance.md).
constexpr double kTransposedWorkRatio = 0.95;

/// The plan of a pointwise convolution with constant weights computed transposed, when that
/// wastes fewer of the micro-kernel's lanes (kTransposedWorkRatio); nullopt otherwise.
std::optional<BlockedContraction> planTransposedPointwise(const LoweredGroup &group, LaunchShape &launch) {
  const Contraction &contraction = *group.contraction;
  const ContractionSpec &spec = contraction.spec;
  if (!spec.window || !readsOnlyConstants(spec.lhs, group) || readsOnlyConstants(spec.rhs, group))
    return std::nullopt;
  Contraction transposed = transposedProduct(contraction);
  const ContractionBlocking usual = chooseBlocking(spec, choosePanels(spec));
  const ContractionBlocking blocking = chooseBlocking(transposed.spec, choosePanels(transposed.spec));
  if (double(computedOutputs(transposed.spec, blocking)) > kTransposedWorkRatio * double(computedOutputs(spec, usual)))
    return std::nullopt;
  std::optional<WindowTable> table = rhsWindowTable(contraction);
  std::optional<DirectRhs> direct = table ? pointwiseRhs(spec, table->gather) : std::nullopt;
  if (!direct)
    return std::nullopt;
  std::optional<PackedOperand> weights = packConstantOperand(group, transposed, false, blocking.panels.columns);
  if (!weights)
    return std::nullopt;
  BlockedContraction plan;
  plan.transposed = true;
  plan.blocking = blocking;
  plan.rhsPacked = true;
  plan.rhsPerBatch = weights->perBatch;
  plan.directLhs = direct;
  launch.parallelExtent = blocking.tiles;
  launch.replacedInputs = inputsReplacedByPacks(group, transposed, false, true, direct->source);
  launch.derivedConstants.push_back(std::move(weights->bytes));
  return plan;
}

} // namespace

std::optional<BlockedContraction> planBlockedContraction(const LoweredGroup &group, LaunchShape &launch) {
  const std::optional<Contraction> &contraction = group.contraction;
  if (!contraction || contraction->spec.type != DType::Float32)
    return std::nullopt;
  const ContractionSpec &spec = contraction->spec;
  if (!worthTiling(spec) && !worthBlockingOnCpu(spec))
    return std::nullopt;
  if (std::optional<BlockedContraction> transposed = planTransposedPointwise(group, launch))
    return transposed;
  BlockedContraction plan;
  PanelShape shared = choosePanels(spec);
  // A constant rhs (a MatMul's weights) is packed in 16-column panels, AVX2's micro-kernel
  // width: 32-column ones, read by AVX2 in two slices at twice the stride, made GPT-2 at v3 20%
  // slower. AVX-512 then runs 6x16 on them; a run-time rhs keeps 32 columns, each level packing
  // it at its own width.
  if (readsOnlyConstants(spec.rhs, group))
    shared.columns = std::min<int64_t>(shared.columns, 16);
  plan.blocking = chooseBlocking(spec, shared);
  const PanelShape &panels = plan.blocking.panels;
  std::optional<PackedOperand> lhsPacked = packConstantOperand(group, *contraction, true, panels.rows);
  std::optional<PackedOperand> rhsPacked = packConstantOperand(group, *contraction, false, panels.columns);
  std::optional<WindowTable> rhsGather = rhsPacked ? std::nullopt : rhsWindowTable(*contraction);
  launch.parallelExtent = plan.blocking.tiles;
  // The constants only the compile-time packs read: the kernel reads their packed form alone.
  if (lhsPacked || rhsPacked)
    launch.replacedInputs = inputsReplacedByPacks(group, *contraction, lhsPacked.has_value(), rhsPacked.has_value(),
                                                  rhsGather ? rhsGather->gather.source : -1);
  if (lhsPacked) {
    plan.lhsPacked = true;
    plan.lhsPerBatch = lhsPacked->perBatch;
    launch.derivedConstants.push_back(std::move(lhsPacked->bytes));
  }
  if (rhsPacked) {
    plan.rhsPacked = true;
    plan.rhsPerBatch = rhsPacked->perBatch;
    launch.derivedConstants.push_back(std::move(rhsPacked->bytes));
  }
  if (rhsGather) {
    plan.directRhs = pointwiseRhs(spec, rhsGather->gather);
    // A stride-1 window with constant weights reads padded rows in place (cpu_padded_window.h),
    // its tables giving way to one offset per r.
    std::vector<int32_t> table(rhsGather->bytes.size() / sizeof(int32_t)), offsets;
    std::memcpy(table.data(), rhsGather->bytes.data(), table.size() * sizeof(int32_t));
    ContractionBlocking paddedBlocking;
    std::vector<int64_t> order;
    std::optional<PaddedWindow> padded =
        plan.directRhs || !plan.lhsPacked
            ? std::nullopt
            : planPaddedWindow(spec, rhsGather->gather, table, panels, paddedBlocking, offsets, order);
    if (padded) {
      // The lhs pack (the first derived constant) walks the reduction in the slab's order.
      permuteReduction(launch.derivedConstants.front(), spec.k, panels.rows, order);
      plan.padded = *padded;
      plan.blocking = paddedBlocking;
      launch.parallelExtent = paddedBlocking.tiles;
      std::vector<uint8_t> bytes(offsets.size() * sizeof(int32_t));
      std::memcpy(bytes.data(), offsets.data(), bytes.size());
      launch.derivedConstants.push_back(std::move(bytes));
    } else {
      plan.gather = rhsGather->gather;
      launch.derivedConstants.push_back(std::move(rhsGather->bytes));
    }
  }
  return plan;
}

Kernel emitBlockedContraction(const LoweredGroup &group, const BlockedContraction &plan,
                              const std::string &cpuLevel, llvm::Module &module, bool hasF16c) {
  // A transposed plan is of the transposed product, in every part: blocking, packs, epilogue.
  const Contraction transposed = plan.transposed ? transposedProduct(*group.contraction) : Contraction{};
  const Contraction &contraction = plan.transposed ? transposed : *group.contraction;
  const ContractionSpec &spec = contraction.spec;
  const Kernel &kernel = contraction.kernel;
  const DirectRhs *directLhs = plan.directLhs ? &*plan.directLhs : nullptr;
  const bool lhsAtRunTime = !plan.lhsPacked, rhsAtRunTime = !plan.rhsPacked;
  const PanelShape &panels = plan.blocking.panels;
  const MicroKernelShape micro = microKernelFor(cpuLevel, panels);
  // A run-time rhs is packed in this level's own panels, one micro-kernel call wide; a
  // compile-time one is in the plan's panels, which every level shares, and a level with a
  // narrower micro-kernel walks them in slices. Every level's micro-kernel covers a panel's rows.
  const int64_t mr = panels.rows;
  const int64_t nr = rhsAtRunTime ? micro.columns() : panels.columns;
  const ContractionBlocking &blocking = plan.blocking;
  const WindowGather *rhsGather = plan.gather ? &*plan.gather : nullptr;
  const PaddedWindow *padded = plan.padded ? &*plan.padded : nullptr;

  llvm::LLVMContext &context = module.getContext();
  llvm::IRBuilder<> b(context);
  llvm::Type *i64 = b.getInt64Ty(), *f32 = b.getFloatTy();
  size_t derivedCount = plan.derivedCount();
  size_t bufferCount = kernel.buffers.size();

  // NAME.body(buffers..., packed lhs?, packed rhs?, rhs gather table?, begin, end)
  llvm::Function *body = createKernelBody(module, kernel.name, bufferCount + derivedCount,
                                          [&](size_t i) { return i < bufferCount && kernel.buffers[i].written; });
  std::vector<llvm::Value *> buffers;
  for (size_t i = 0; i < bufferCount + derivedCount; ++i)
    buffers.push_back(body->getArg(unsigned(i)));
  llvm::Value *lhsConstant = plan.lhsPacked ? body->getArg(unsigned(bufferCount)) : nullptr;
  llvm::Value *rhsConstant = plan.rhsPacked ? body->getArg(unsigned(bufferCount + (plan.lhsPacked ? 1 : 0))) : nullptr;
  llvm::Value *gatherTable = rhsGather || padded ? body->getArg(unsigned(bufferCount + derivedCount - 1)) : nullptr;
  llvm::Value *begin = body->getArg(unsigned(bufferCount + derivedCount));
  llvm::Value *end = body->getArg(unsigned(bufferCount + derivedCount + 1));

  auto *entry = llvm::BasicBlock::Create(context, "entry", body);
  b.SetInsertPoint(entry);
  // Per-call scratch on this thread's stack: block coordinates, packed blocks, the tile.
  auto scratch = [&](llvm::Type *type, int64_t count, const char *name) {
    llvm::AllocaInst *alloca = b.CreateAlloca(type, b.getInt64(uint64_t(count)), name);
    alloca->setAlignment(llvm::Align(64));
    return alloca;
  };
  llvm::Value *paramBuffer = scratch(i64, ParamCount, "params");
  // A transposed product's tile is transposed before its epilogue (transposeTile), in 8 x 8
  // blocks: the tile has whole blocks of rows, and its transpose rows (columns of the tile) of
  // `transposedPitch` floats, whole blocks and a cache line more.
  const int64_t tileRows = directLhs ? roundUp(blocking.mc, 8) : blocking.mc;
  const int64_t transposedPitch = tileRows + 16;
  llvm::Value *tile = scratch(f32, tileRows * blocking.nc, "tile");
  llvm::Value *tileTransposed = directLhs ? scratch(f32, blocking.nc * transposedPitch, "tile.t") : nullptr;
  llvm::Value *lhsPack = lhsAtRunTime ? scratch(f32, blocking.mc * blocking.kc, "lhs.pack") : tile;
  // A padded window's rhs is the slab of its input rows, not a pack.
  llvm::Value *rhsPack = !rhsAtRunTime ? tile
                         : padded      ? scratch(f32, padded->channels * padded->slabFloats(), "rhs.slab")
                                       : scratch(f32, blocking.kc * blocking.nc, "rhs.pack");

  TileProgram packLhs = tileProgram(contraction, blocking, rhsGather ? rhsGather->entries : padded ? spec.k : 0,
                                    std::max(tileRows * blocking.nc, directLhs ? blocking.nc * transposedPitch : 0)),
              packRhs = packLhs, epilogue = packLhs;
  // A direct lhs packs the row panels it cannot read in place itself (in the kc loop).
  if (!directLhs)
    packLhs.kernel.body = packOperand(packLhs, spec, true, mr);
  const DirectRhs *direct = plan.directRhs ? &*plan.directRhs : nullptr;
  // A window over rows of f32 positions is packed by row segments (cpu_window_pack.h); with a
  // direct rhs, only the panels it cannot read in place are, one at a time (in the q loop).
  const bool rowPackable = rhsGather && rhsGather->rowLength > 0 && rhsGather->sourceType == DType::Float32;
  const bool rowPacked = rowPackable && !direct, directRowPacked = rowPackable && direct;
  packRhs.kernel.body = packOperand(packRhs, spec, false, nr, rhsGather, direct ? direct->positions : 0);
  // A transposed product's tile, once transposed (transposeTile), is a tile of the usual product:
  // its epilogue is the usual one (rows of channels, runs of positions image by image), which
  // reads the tile's coordinates swapped back.
  if (directLhs)
    epilogue.kernel.body = tileEpilogue(epilogue, epilogue.kernel, group.contraction->spec, transposedPitch);
  else
    epilogue.kernel.body = padded ? paddedTileEpilogue(epilogue, epilogue.kernel, spec, blocking.nc, *padded)
                                  : tileEpilogue(epilogue, epilogue.kernel, spec, blocking.nc);
  std::vector<llvm::Value *> programBuffers(buffers.begin(), buffers.begin() + long(bufferCount));
  programBuffers.insert(programBuffers.end(), {paramBuffer, lhsPack, rhsPack, tile, gatherTable ? gatherTable : tile});
  KernelEmitter lhsEmitter(packLhs.kernel, b, module, programBuffers, hostMathLibrary(), hasF16c);
  KernelEmitter rhsEmitter(packRhs.kernel, b, module, programBuffers, hostMathLibrary(), hasF16c);
  std::vector<llvm::Value *> epilogueBuffers = programBuffers;
  if (tileTransposed)
    epilogueBuffers[size_t(epilogue.tile)] = tileTransposed;
  KernelEmitter epilogueEmitter(epilogue.kernel, b, module, epilogueBuffers, hostMathLibrary(), hasF16c);
  llvm::Function *microKernelFunction =
      microKernel(module, micro, PanelShape{mr, nr}, padded != nullptr, directLhs != nullptr);
  // A slice whose real columns fit one vector (a tile's last panel: 4 of 32 columns at 14x14,
  // 16 at 28x28) runs the one-vector micro-kernel on it, half the multiply-adds.
  MicroKernelShape narrow = micro;
  narrow.vectors = 1;
  llvm::Function *narrowFunction =
      micro.vectors > 1 ? microKernel(module, narrow, PanelShape{mr, nr}, padded != nullptr, directLhs != nullptr)
                        : nullptr;

  auto setParam = [&](Param which, llvm::Value *value) {
    b.CreateStore(value, b.CreateConstInBoundsGEP1_64(i64, paramBuffer, uint64_t(which)));
  };
  auto constant = [&](int64_t value) { return b.getInt64(uint64_t(value)); };
  auto minimum = [&](llvm::Value *x, llvm::Value *y) { return b.CreateSelect(b.CreateICmpSLT(x, y), x, y); };
  // The transposed product's lhs row `row` (a position of X: image * positions + position) at
  // channel kc: its offset in X, and whether rows row ... row + MR - 1 lie in one image.
  auto lhsRowInX = [&](llvm::Value *batch, llvm::Value *row, llvm::Value *kc) {
    llvm::Value *image = b.CreateUDiv(row, constant(directLhs->positions));
    llvm::Value *position = b.CreateSub(row, b.CreateMul(image, constant(directLhs->positions)));
    llvm::Value *offset = b.CreateAdd(b.CreateAdd(b.CreateMul(batch, constant(directLhs->groupStride)),
                                                  b.CreateMul(image, constant(directLhs->imageStride))),
                                      b.CreateAdd(position, b.CreateMul(kc, constant(directLhs->plane))));
    llvm::Value *within = b.CreateICmpSLE(b.CreateAdd(position, constant(mr)), constant(directLhs->positions));
    return std::make_pair(offset, within);
  };

  emitLoop(b, begin, end, 1, [&](llvm::Value *t) {
    llvm::Value *nBlock = b.CreateURem(t, constant(blocking.nBlocks));
    llvm::Value *rest = b.CreateUDiv(t, constant(blocking.nBlocks));
    llvm::Value *mBlock = b.CreateURem(rest, constant(blocking.mBlocks));
    llvm::Value *batch = b.CreateUDiv(rest, constant(blocking.mBlocks));
    // A padded window's tiles are (group, image, m block, n block), the columns within the image.
    llvm::Value *image = nullptr, *outputRow0 = nullptr, *rowOffset0 = nullptr;
    if (padded) {
      image = b.CreateURem(batch, constant(padded->images));
      batch = b.CreateUDiv(batch, constant(padded->images));
    }
    llvm::Value *row0 = b.CreateMul(mBlock, constant(blocking.mc));
    llvm::Value *column0 = b.CreateMul(nBlock, constant(blocking.nc));
    llvm::Value *rows = minimum(constant(blocking.mc), b.CreateSub(constant(spec.m), row0));
    llvm::Value *columns =
        minimum(constant(blocking.nc), b.CreateSub(constant(padded ? padded->columns : spec.n), column0));
    if (padded) {
      // The tile's first column is output row outputRow0's column rowOffset0 (< pitch).
      outputRow0 = b.CreateUDiv(column0, constant(padded->pitch));
      rowOffset0 = b.CreateSub(column0, b.CreateMul(outputRow0, constant(padded->pitch)));
      setParam(ParamImage, image);
      emitPaddedSlab(b, *padded, micro.width, buffers[size_t(padded->source)], rhsPack, batch, image, outputRow0);
    }
    llvm::Value *rowPanels = b.CreateUDiv(b.CreateAdd(rows, constant(mr - 1)), constant(mr));
    llvm::Value *columnPanels = b.CreateUDiv(b.CreateAdd(columns, constant(nr - 1)), constant(nr));
    setParam(ParamBatch, batch);
    setParam(ParamRow, row0);
    setParam(ParamColumn, column0);
    setParam(ParamRows, rows);
    setParam(ParamColumns, columns);
    emitLoop(b, constant(0), constant(spec.k), blocking.kc, [&](llvm::Value *kc) {
      llvm::Value *kLen = minimum(constant(blocking.kc), b.CreateSub(constant(spec.k), kc));
      setParam(ParamReduction, kc);
      setParam(ParamReductionLength, kLen);
      if (rhsAtRunTime && rowPacked)
        emitWindowPack(b, *rhsGather, *spec.window, nr, micro.width,
                       {buffers[size_t(rhsGather->source)], gatherTable, rhsPack, batch, column0, columns, kc, kLen});
      else if (rhsAtRunTime && !padded && !directRowPacked)
        rhsEmitter.emitBody(t); // with a direct rhs, only the panels it cannot read in place
      if (lhsAtRunTime && directLhs) {
        // The row panels not read in place (across an image's end, or the tile's partial last
        // one) are packed here: per lane, its row's offset in X once, then MR loads a channel.
        emitLoop(b, constant(0), rowPanels, 1, [&](llvm::Value *p) {
          llvm::Value *first = b.CreateAdd(row0, b.CreateMul(p, constant(mr)));
          llvm::Value *rowsLeft = b.CreateSub(rows, b.CreateMul(p, constant(mr)));
          llvm::Value *whole = b.CreateAnd(b.CreateICmpSGE(rowsLeft, constant(mr)), lhsRowInX(batch, first, kc).second);
          emitIf(b, b.CreateNot(whole), [&] {
            llvm::Value *panel = b.CreateInBoundsGEP(f32, lhsPack, b.CreateMul(b.CreateMul(p, kLen), constant(mr)));
            std::vector<llvm::Value *> at(static_cast<size_t>(mr)), real(static_cast<size_t>(mr));
            for (int64_t lane = 0; lane < mr; ++lane) {
              real[size_t(lane)] = b.CreateICmpSLT(constant(lane), rowsLeft);
              // A lane past the tile's rows reads channel kc's first element (in X), stored as 0.
              at[size_t(lane)] = b.CreateSelect(real[size_t(lane)],
                                                lhsRowInX(batch, b.CreateAdd(first, constant(lane)), kc).first,
                                                b.CreateMul(kc, constant(directLhs->plane)));
            }
            llvm::Value *source = buffers[size_t(directLhs->source)];
            llvm::Value *zero = llvm::ConstantFP::get(f32, 0.0);
            emitLoop(b, constant(0), kLen, 1, [&](llvm::Value *r) {
              llvm::Value *channel = b.CreateMul(r, constant(directLhs->plane));
              for (int64_t lane = 0; lane < mr; ++lane) {
                llvm::Value *value = b.CreateAlignedLoad(
                    f32, b.CreateInBoundsGEP(f32, source, b.CreateAdd(at[size_t(lane)], channel)), llvm::Align(4));
                b.CreateAlignedStore(
                    b.CreateSelect(real[size_t(lane)], value, zero),
                    b.CreateInBoundsGEP(f32, panel, b.CreateAdd(b.CreateMul(r, constant(mr)), constant(lane))),
                    llvm::Align(4));
              }
            }, "lhs.r");
          });
        }, "lhs.panel");
      } else if (lhsAtRunTime) {
        lhsEmitter.emitBody(t);
      }
      llvm::Value *accumulate = b.CreateICmpNE(kc, constant(0));
      // A panel's first element: in the run-time pack (panel `index` of this block), or in the
      // compile-time pack (panel `block * blockPanels + index` of the batch's matrix, at kc).
      auto panelAddress = [&](bool atRunTime, llvm::Value *pack, llvm::Value *packed, bool perBatch,
                              int64_t width, int64_t totalPanels, llvm::Value *block, int64_t blockPanels,
                              llvm::Value *index) -> llvm::Value * {
        if (atRunTime)
          return b.CreateInBoundsGEP(f32, pack, b.CreateMul(b.CreateMul(index, kLen), constant(width)));
        llvm::Value *panel = b.CreateAdd(b.CreateMul(block, constant(blockPanels)), index);
        if (perBatch)
          panel = b.CreateAdd(panel, b.CreateMul(batch, constant(totalPanels)));
        llvm::Value *first = b.CreateAdd(b.CreateMul(panel, constant(spec.k)), kc);
        return b.CreateInBoundsGEP(f32, packed, b.CreateMul(first, constant(width)));
      };
      // For each rhs panel, the level's micro-kernel on each of its column slices in turn,
      // over every lhs panel: a slice (KC x the micro-kernel's columns) stays in L1 while the
      // lhs panels stream past it, as a whole panel did when panels were the level's width.
      // A slice wholly past the matrix's last column is skipped (a tile's last panel may be
      // partly past the edge).
      emitLoop(b, constant(0), columnPanels, 1, [&](llvm::Value *q) {
        llvm::Value *rhsPanel = panelAddress(rhsAtRunTime, rhsPack, rhsConstant, plan.rhsPerBatch,
                                             nr, ceilDiv(spec.n, nr), nBlock, blocking.nc / nr, q);
        llvm::Value *columnsLeft = b.CreateSub(columns, b.CreateMul(q, constant(nr)));
        llvm::Value *ldb = constant(nr);
        if (padded) {
          // Rows of the slab through the offsets of r from kc on (cpu_padded_window.h).
          rhsPanel = b.CreateInBoundsGEP(f32, rhsPack, b.CreateAdd(rowOffset0, b.CreateMul(q, constant(nr))));
          ldb = b.CreateInBoundsGEP(b.getInt32Ty(), gatherTable, kc);
        }
        if (direct) {
          // A whole panel is read in place: rows of X from channel kc, `plane` apart.
          llvm::Value *first = b.CreateAdd(column0, b.CreateMul(q, constant(nr)));
          llvm::Value *image = b.CreateUDiv(first, constant(direct->positions));
          llvm::Value *offset = b.CreateAdd(
              b.CreateAdd(b.CreateMul(batch, constant(direct->groupStride)),
                          b.CreateMul(image, constant(direct->imageStride))),
              b.CreateAdd(b.CreateSub(first, b.CreateMul(image, constant(direct->positions))),
                          b.CreateMul(kc, constant(direct->plane))));
          // In place when whole and within one image; else packed above.
          llvm::Value *within = b.CreateICmpSLE(
              b.CreateAdd(b.CreateSub(first, b.CreateMul(image, constant(direct->positions))), constant(nr)),
              constant(direct->positions));
          llvm::Value *whole = b.CreateAnd(b.CreateICmpSGE(columnsLeft, constant(nr)), within);
          // The others by row segments, not through the element-wise packer above: at 7x7 (49
          // columns an image) such a panel is a third of the columns, and packing it element by
          // element made a 960 -> 160 pointwise convolution 2x slower than packing every panel.
          if (directRowPacked)
            emitIf(b, b.CreateNot(whole), [&] {
              emitWindowPack(b, *rhsGather, *spec.window, nr, micro.width,
                             {buffers[size_t(rhsGather->source)], gatherTable, rhsPanel, batch, first,
                              minimum(columnsLeft, constant(nr)), kc, kLen});
            });
          rhsPanel = b.CreateSelect(whole, b.CreateInBoundsGEP(f32, buffers[size_t(direct->source)], offset), rhsPanel);
          ldb = b.CreateSelect(whole, constant(direct->plane), ldb);
        }
        for (int64_t column = 0; column < nr; column += micro.columns()) {
          auto slice = [&] {
            llvm::Value *callee = microKernelFunction;
            if (narrowFunction)
              callee = b.CreateSelect(
                  b.CreateICmpSLE(b.CreateSub(columnsLeft, constant(column)), constant(micro.width)),
                  narrowFunction, microKernelFunction);
            emitLoop(b, constant(0), rowPanels, 1, [&](llvm::Value *p) {
              llvm::Value *lhsPanel = panelAddress(lhsAtRunTime, lhsPack, lhsConstant, plan.lhsPerBatch,
                                                   mr, ceilDiv(spec.m, mr), mBlock, blocking.mc / mr, p);
              llvm::Value *tileOffset =
                  b.CreateAdd(b.CreateMul(p, constant(mr * blocking.nc)), b.CreateMul(q, constant(nr)));
              llvm::Value *at = b.CreateAdd(tileOffset, constant(column));
              std::vector<llvm::Value *> arguments = {
                  lhsPanel, b.CreateConstInBoundsGEP1_64(f32, rhsPanel, uint64_t(column)), kLen,
                  b.CreateInBoundsGEP(f32, tile, at), constant(blocking.nc), accumulate, ldb};
              if (directLhs) {
                // A whole row panel within one image is read in place: MR positions of X's
                // channel plane from channel kc on, `plane` apart; the others were packed above.
                auto [offset, within] = lhsRowInX(batch, b.CreateAdd(row0, b.CreateMul(p, constant(mr))), kc);
                llvm::Value *whole = b.CreateAnd(
                    b.CreateICmpSGE(b.CreateSub(rows, b.CreateMul(p, constant(mr))), constant(mr)), within);
                arguments[0] = b.CreateSelect(
                    whole, b.CreateInBoundsGEP(f32, buffers[size_t(directLhs->source)], offset), lhsPanel);
                arguments.push_back(b.CreateSelect(whole, constant(directLhs->plane), constant(mr)));
              }
              b.CreateCall(microKernelFunction->getFunctionType(), callee, arguments);
            }, "p");
          };
          if (column > 0)
            emitIf(b, b.CreateICmpSLT(constant(column), columnsLeft), slice);
          else
            slice();
        }
      }, "q");
    }, "kc");
    if (tileTransposed) {
      transposeTile(b, tile, blocking.nc, tileTransposed, transposedPitch, rows, columns);
      setParam(ParamRow, column0);
      setParam(ParamRows, columns);
      setParam(ParamColumn, row0);
      // The count through an empty asm statement, which LLVM cannot see through: where the tile
      // is the whole plane (7x7: 49 rows, one m block) the count is a constant, and LLVM then
      // unrolled the epilogue's loop over positions and vectorized across channels instead,
      // with gathers and scatters (160 -> 960 @7x7, one thread: 0.164 ms with the tile read
      // down its columns, 0.181 transposed and unrolled so).
      auto *opaque = llvm::InlineAsm::get(llvm::FunctionType::get(i64, {i64}, false), "", "=r,0", false);
      setParam(ParamColumns, b.CreateCall(opaque, {rows}));
    }
    llvm::BasicBlock *beforeEpilogue = &body->back();
    epilogueEmitter.emitBody(t);
    if (tileTransposed)
      interleaveOnce(body, beforeEpilogue);
  }, "tile");
  b.CreateRetVoid();

  emitEntryPoint(module, body, kernel.name, bufferCount + derivedCount);

  Kernel described = kernel;
  described.parallelExtent = blocking.tiles;
  return described;
}

} // namespace sinter::codegen::llvmgen
