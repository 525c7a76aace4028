// Tensor-core contractions: a block computes a BM x BN output tile with warp-level mma.sync
// (f32 sums), its operands staged in shared memory through a ring of STAGES slices of BK
// reduction steps, so that several slices are in flight while the warps multiply an earlier one.
// A 16-bit kernel may carry a second body for sm_90a, where two warpgroups multiply 128x128
// tiles with wgmma straight from 128-byte-swizzled slices that the same staging writes. This
// file puts the kernel together: its signature, the shared memory, the tile's coordinates, the
// operands' staging (cuda_mma_staging.cpp), the main loop of its instruction family
// (cuda_mma_sync.cpp or cuda_wgmma.cpp) and the epilogue. Which operand form and tile a
// contraction gets is cuda_mma_choice.cpp's; a
// wgmma kernel with a stream-K schedule loops over the tiles and pieces of tiles that
// cuda_tile_schedule.cpp deals it, exchanging a piece's partial sums after its main loop.
// The operands go to the tensor cores in one of two forms (MmaOperands):
//   16-bit:  when both hold values f16 (or bf16) represents exactly (they were loaded from 16-bit
//            storage), m16n8k16 multiplies them as they are: the products are the ones the f32
//            kernel computes, only the order of the f32 additions differs;
//   tf32:    any f32 operands, m16n8k8. For fp32 each operand is split into its tf32 rounding and
//            the tf32 rounding of the remainder, and three products (the small·small one is
//            below f32's rounding) give about 22 significant bits, the accuracy of the f32 FMA
//            kernel; --precision tf32 multiplies the roundings alone.
//
// How an operand reaches shared memory depends on its expression ("a run" is 16 bytes: eight
// 16-bit values, or four f32):
//   vector along k:  a plain load of the operand type whose index advances by one along each
//                    run of r that starts at a multiple of the run, from a multiple of the run
//                    (runForm: i * K + r, and the div/rem chains of a flattened transpose): a
//                    run of reduction steps is contiguous, copied by cp.async without registers;
//   vector along n:  (rhs) likewise with j: a run of columns of one step, copied by cp.async
//                    into a k-major slice (read by ldmatrix.trans when 16-bit);
//   narrowed vector: (16-bit) a float32 load rounded to the 16-bit type in the kernel (a LayerNorm's or a
//                    softmax's f32 output read by a 16-bit MatMul) with the same index form:
//                    eight steps are two 16-byte loads into registers before the products,
//                    rounded and stored as one 16-byte run after them;
//   window gather:   (rhs) a convolution's window read directly: through registers as a scalar
//                    operand, each thread's column origin computed once a tile, each element
//                    only its step's channel and tap (SliceStaging::loadWindow);
//   scalar:          anything else (a 32-bit input narrowed, a window read through a prologue,
//                    as strided gathers where runs allow): each thread evaluates the expression
//                    element by element into registers before the products and stores them
//                    packed into the slice after.
#include "cuda_mma_body.h"
#include "cuda_tile_schedule.h"

#include "sinter/codegen/kernel/expr_evaluator.h"

#include "sinter/support/error.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <sstream>
#include <tuple>
#include <utility>

namespace sinter::codegen::cuda {

namespace {

/// Whether the epilogue's first store writes runs along the columns, so that a warp's lanes
/// taking consecutive columns of one row store contiguous bytes: its index steps by one along j
/// everywhere (a GEMM's or a batched product's [.., m, n] output), or between at least seven in
/// eight of the first 1024 pairs of adjacent columns of row 0 (an NCHW convolution's output,
/// whose columns are pixels of several images, j / HW and j % HW: every pair but one an image).
bool rowsAreRuns(const Contraction &contraction) {
  const ContractionSpec &spec = contraction.spec;
  std::function<const Stmt *(const std::vector<StmtRef> &)> firstStore = [&](const std::vector<StmtRef> &list) -> const Stmt * {
    for (const StmtRef &statement : list) {
      if (statement->kind == StmtKind::Store)
        return statement.get();
      if (const Stmt *inner = firstStore(statement->body))
        return inner;
      if (const Stmt *inner = firstStore(statement->orElse))
        return inner;
    }
    return nullptr;
  };
  const Stmt *store = firstStore(spec.epilogue);
  if (!store)
    return false;
  if (linearStride(store->a, spec.j) == 1)
    return true;
  ExprEvaluator evaluator(contraction.kernel);
  if (!evaluator.canEvaluate(store->a))
    return false; // an index read from memory
  for (int variable : {spec.b, spec.i})
    if (variable >= 0)
      evaluator.setVariable(variable, 0);
  const int64_t pairs = std::min<int64_t>(spec.n - 1, 1024);
  int64_t adjacent = 0, previous = 0;
  for (int64_t j = 0; j <= pairs; ++j) {
    evaluator.setVariable(spec.j, j);
    int64_t at = evaluator.evaluate(store->a).intValue;
    adjacent += j > 0 && at == previous + 1;
    previous = at;
  }
  return pairs > 0 && adjacent * 8 >= pairs * 7;
}


} // namespace

const char *mainLoopUnroll(int64_t slices) { return slices <= 16 ? "" : "#pragma unroll 1\n"; }

MmaFormat formatOf(MmaOperands operands) {
  const char *m16n8k8 = "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32";
  switch (operands) {
  case MmaOperands::Float16:
    return {"f16", "f16 operands", DType::Float16, "unsigned short", 2, 16,
            "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"};
  case MmaOperands::BFloat16:
    return {"bf16", "bf16 operands", DType::BFloat16, "unsigned short", 2, 16,
            "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"};
  case MmaOperands::Tf32x3:
    return {"tf32x3", "f32 operands as tf32 pairs, three products", DType::Float32, "float", 4, 8, m16n8k8, true};
  case MmaOperands::Tf32:
    return {"tf32", "f32 operands rounded to tf32", DType::Float32, "float", 4, 8, m16n8k8};
  }
  return {};
}

const char *mmaOperandsName(MmaOperands operands) { return formatOf(operands).name; }

namespace {

/// The kernel's body in one of its two forms: warp-level mma.sync, or (wgmma) two warpgroups of
/// m64n128k16 warpgroup MMA reading 128-byte-swizzled slices (sm_90a). Returns the dynamic shared
/// memory it needs.
int64_t printMmaBody(std::ostringstream &out, CudaPrinter &printer, const Contraction &contraction,
                     const MmaFormat &format, const MmaTile &tile, bool wgmma, bool rowWalk, const Schedule &schedule) {
  const ContractionSpec &spec = contraction.spec;
  const Kernel &kernel = contraction.kernel;
  auto v = [](int id) { return "v" + std::to_string(id); };
  const int threads = tile.threads();
  const int warpRows = tile.bm / tile.warpsM, warpColumns = tile.bn / tile.warpsN;
  const int mTiles = wgmma ? 1 : warpRows / 16, nTiles = wgmma ? tile.bn / 8 : warpColumns / 8;
  // A stream-K launch's wgmma body runs over whole tiles and pieces of tiles (kBegin .. kEnd - 1
  // of the tile's slices); its mma.sync body over whole tiles.
  const bool split = schedule.blocks > 0 && wgmma;
  SliceStaging staging(out, printer, contraction, format, tile, wgmma, split);

  out << "  // contraction on tensor cores (" << format.description << ", f32 sums): batch " << spec.batch
      << ", m " << spec.m << ", n " << spec.n << ", k " << spec.k << "; tile " << tile.bm << "x"
      << tile.bn << "x" << tile.bk << ", ";
  if (wgmma)
    out << "2 warpgroups of 64x" << tile.bn << " (wgmma), " << kWgmmaStages - 1 << " slices ahead";
  else
    out << tile.warpsM << "x" << tile.warpsN << " warps of " << warpRows << "x" << warpColumns << ", " << kStages
        << " slices in flight";
  out << "; lhs " << staging.describe(staging.lhs()) << ", rhs " << staging.describe(staging.rhs()) << "\n";
  // The dynamic shared memory is declared with one type in every kernel of the module (extern
  // arrays of one name must agree); an f32 slice is a view of it.
  int64_t offset = 0; // in 16-bit units
  out << "  extern __shared__ __align__(16) unsigned short sn_shared[];\n";
  if (wgmma) {
    // The swizzle repeats every 1024 bytes: the slices start at a multiple of it.
    out << "  const unsigned sharedBase = sn_shared_address(sn_shared), swizzled = (sharedBase + 1023u) & ~1023u;\n";
    out << "  unsigned char *slices = reinterpret_cast<unsigned char *>(sn_shared) + (swizzled - sharedBase);\n";
    offset = (kWgmmaStages * staging.stageBytes() + 1024) / 2;
  } else {
    for (const StagedOperand *o : {&staging.lhs(), &staging.rhs()}) {
      out << "  " << format.element << " (*" << o->shared << ")[" << o->rows << "][" << o->rowLength
          << "] = reinterpret_cast<" << format.element << " (*)[" << o->rows << "][" << o->rowLength
          << "]>(sn_shared + " << offset << ");\n";
      offset += int64_t(kStages) * o->rows * o->rowLength * format.bytes / 2;
    }
  }
  out << printer.locals(kernel, 1);
  out << "  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;\n";
  out << "  const int group = lane / 4, quad = lane % 4;\n";
  if (wgmma) // warp w of the block holds rows 16w .. 16w + 15 of the sums, every column
    out << "  const int warpRow = warp * 16, warpColumn = 0;\n";
  else
    out << "  const int warpRow = (warp / " << tile.warpsN << ") * " << warpRows
        << ", warpColumn = (warp % " << tile.warpsN << ") * " << warpColumns << ";\n";
  if (schedule.blocks) {
    printScheduleOpening(out, schedule, tile, v(spec.b), split);
  } else {
    out << "  const long long rowBase = (long long)blockIdx.y * " << tile.bm
        << ", columnBase = (long long)blockIdx.x * " << tile.bn << ";\n";
    out << "  " << v(spec.b) << " = blockIdx.z;\n";
  }
  out << "  float acc[" << mTiles << "][" << nTiles << "][4];\n";
  out << "#pragma unroll\n  for (int p = 0; p < " << mTiles << "; ++p)\n"
      << "#pragma unroll\n    for (int q = 0; q < " << nTiles << "; ++q)\n"
      << "#pragma unroll\n      for (int c = 0; c < 4; ++c) acc[p][q][c] = 0.f;\n";
  staging.declareRegisters();
  staging.walkSetups();

  if (wgmma) {
    printWgmmaLoop(out, staging, format, tile, split);
    if (split)
      printPieceExchange(out, schedule, tile, contraction.kernel.name + "_arrivals");
  } else {
    printMmaSyncLoop(out, staging, format, tile, mTiles, nTiles);
  }
  // The sums go through shared memory (the slices are free once every warp is past its last
  // products), so that the epilogue walks the tile by rows: a warp's lanes take 32 consecutive
  // columns of one row, and its stores and its reads of other tensors (a bias, a residual)
  // coalesce, where the fragment layout has a lane hold two columns of two rows. The rows are
  // padded by four floats: a fragment's float2 writes take two wavefronts, the fewest that 256
  // bytes need. On an H200 this took a 4096x768x3072 f16 GEMM with a bias (wgmma) from 254 to
  // 388 TFLOP/s, and ViT-B/16 b32's Q.K^T (mma.sync, f32 scores) from 1.08 to 0.52 ms; with
  // the NCHW convolutions walked too (their columns are runs of H * W pixels, rowsAreRuns),
  // ResNet-50 b32 went 3.70 -> 3.01 ms at fp16 and 8.82 -> 8.34 at fp32 (6dc9d74, with the
  // epilogue's per-element bounds tests gone; with them, walking the convolutions had been
  // slower). Blocks whose threads do not cover whole rows keep the fragment order, and so does
  // every block with --tensor-core-epilogue fragments (the ablation). The walk is unrolled
  // whole, as the fragment order is.
  //
  // A block whose tile lies wholly inside the output (every block, when the tile divides it)
  // runs the epilogue without a bounds test per element, so that the compiler may issue many
  // elements' loads (a residual's, a bias's) before their stores; with a test around each, each
  // element's loads waited for the previous element's store.
  const bool everyTileWhole = spec.m % tile.bm == 0 && spec.n % tile.bn == 0;
  // The end of a scheduled launch's tile: every thread is done with the shared memory before the
  // next tile's slices arrive in it.
  auto closeSchedule = [&] {
    if (schedule.blocks)
      out << "  __syncthreads();\n  }\n";
  };
  auto tileLoops = [&](const std::function<void(bool testBounds)> &loops) {
    if (everyTileWhole)
      return loops(false);
    out << "  if (rowBase + " << tile.bm << " <= " << spec.m << "LL && columnBase + " << tile.bn << " <= " << spec.n
        << "LL) {\n";
    loops(false);
    out << "  } else {\n";
    loops(true);
    out << "  }\n";
  };
  const int stride = tile.bn + 4;
  if (rowWalk && threads % tile.bn == 0 && rowsAreRuns(contraction)) {
    const int64_t sumsBytes = int64_t(tile.bm) * stride * 4;
    if (!wgmma)
      offset = std::max(offset, sumsBytes / 2);
    SINTER_ASSERT(sumsBytes <= offset * 2, "the sums do not fit the slices");
    out << "  __syncthreads();\n";
    out << "  float *sums = reinterpret_cast<float *>(" << (wgmma ? "slices" : "sn_shared") << ");\n";
    out << "#pragma unroll\n  for (int p = 0; p < " << mTiles << "; ++p)\n"
        << "#pragma unroll\n    for (int q = 0; q < " << nTiles << "; ++q)\n"
        << "#pragma unroll\n      for (int half = 0; half < 2; ++half)\n"
        << "        *reinterpret_cast<float2 *>(&sums[(warpRow + p * 16 + group + half * 8) * " << stride
        << " + warpColumn + q * 8 + 2 * quad]) = make_float2(acc[p][q][2 * half], acc[p][q][2 * half + 1]);\n";
    out << "  __syncthreads();\n";
    const int rowsAtOnce = threads / tile.bn;
    tileLoops([&](bool testBounds) {
      out << "#pragma unroll\n  for (int e = 0; e < " << tile.bm / rowsAtOnce << "; ++e) {\n";
      out << "    const int row = e * " << rowsAtOnce << " + tid / " << tile.bn << ", column = tid % " << tile.bn
          << ";\n";
      out << "    " << v(spec.i) << " = rowBase + row; " << v(spec.j) << " = columnBase + column;\n";
      out << printEpilogue(printer, spec, "sums[row * " + std::to_string(stride) + " + column]", 2, testBounds);
      out << "  }\n";
    });
    closeSchedule();
    return offset * 2; // offset counts 16-bit units
  }
  tileLoops([&](bool testBounds) {
    out << "#pragma unroll\n  for (int p = 0; p < " << mTiles << "; ++p)\n"
        << "#pragma unroll\n    for (int q = 0; q < " << nTiles << "; ++q)\n"
        << "#pragma unroll\n      for (int c = 0; c < 4; ++c) {\n";
    out << "        " << v(spec.i) << " = rowBase + warpRow + p * 16 + group + (c / 2) * 8; " << v(spec.j)
        << " = columnBase + warpColumn + q * 8 + 2 * quad + c % 2;\n";
    out << printEpilogue(printer, spec, "acc[p][q][c]", 4, testBounds);
    out << "      }\n";
  });
  closeSchedule();
  return offset * 2; // offset counts 16-bit units
}

} // namespace

std::string packedHalves(const char *toHalf, const std::string &low, const std::string &high) {
  return std::string("((unsigned)") + toHalf + "(" + low + ") | ((unsigned)" + toHalf + "(" + high + ") << 16))";
}

std::optional<int64_t> sliceStride(const ExprRef &index, int r, int bk, int64_t slices, const Kernel &kernel,
                                   IndexRanges &ranges) {
  if (std::optional<int64_t> stride = linearStride(index, r))
    return *stride * bk;
  const int slice = int(kernel.variables.size()), step = slice + 1;
  ranges.setVariable(slice, {0, slices - 1});
  ranges.setVariable(step, {0, bk - 1});
  const ExprRef split = add(mul(var(slice, DType::Int64), int64_t(bk)), var(step, DType::Int64));
  return linearStride(ranges.simplify(substituted(index, r, split)), slice);
}

uint64_t mmaWorkspaceBytes(const ContractionSpec &spec, const MmaTile &tile, MmaOperands operands,
                           const MmaKernelOptions &options) {
  if (!options.warpgroupMma || options.streamKBlocks == 0)
    return 0;
  return streamKWorkspaceBytes(scheduleOf(spec, wgmmaTile(tile, formatOf(operands)), options.streamKBlocks), tile);
}

std::string printMmaContraction(const Contraction &original, const MmaTile &blockTile, MmaOperands mmaOperands,
                                LaunchShape &launch, const MmaKernelOptions &options) {
  const MmaFormat format = formatOf(mmaOperands);
  CudaPrinter printer;
  IndexRanges ranges(original.kernel);
  setContractionRanges(ranges, original.spec);
  printer.setRanges(&ranges);
  // The operands and the epilogue with the index divisions the ranges decide taken out: a head
  // split read back through reshapes and transposes is then affine, so its runs are found and
  // its copies walked.
  Contraction contraction = original;
  contraction.spec.lhs = ranges.simplify(original.spec.lhs);
  contraction.spec.rhs = ranges.simplify(original.spec.rhs);
  for (StmtRef &statement : contraction.spec.epilogue)
    statement = ranges.simplify(statement);
  const ContractionSpec &spec = contraction.spec;
  const Kernel &kernel = contraction.kernel;
  std::ostringstream out;
  const bool wgmma = options.warpgroupMma;
  // No cap on registers for mma.sync: the accumulators and fragments take most of them, and one
  // block of eight warps per SM keeps the tensor cores busy when its slices arrive ahead of use.
  // A wgmma kernel is capped so that two blocks of 128x128 share an SM (128 registers a thread),
  // or three of 128x64 (wgmmaBlocksPerSm).
  // A stream-K launch (wgmma only) counts each leftover tile's parts in a counter of the module's,
  // zero when the module loads and reset by the tile's last part (a session runs one launch of a
  // kernel at a time, and each session loads its own modules); the partial sums go to the
  // workspace the compiler plans in the arena (mmaWorkspaceBytes, declared before planning).
  SINTER_ASSERT(wgmma || options.streamKBlocks == 0, "a stream-K launch needs the wgmma body");
  const Schedule schedule = scheduleOf(spec, wgmmaTile(blockTile, format), options.streamKBlocks);
  std::string workspace;
  if (schedule.blocks) {
    out << "__device__ unsigned " << kernel.name << "_arrivals[" << schedule.leftover() << "];\n";
    workspace = "float4 *__restrict__ sn_workspace";
  }
  out << printer.signature(kernel, blockTile.threads(), wgmma ? wgmmaBlocksPerSm(blockTile) : 1, workspace);

  int64_t sharedBytes = 0;
  if (wgmma) {
    // The same grid and block either way; the sm_90a build takes the first form.
    out << "#if defined(__CUDA_ARCH_FEAT_SM90_ALL)\n";
    sharedBytes = printMmaBody(out, printer, contraction, format, wgmmaTile(blockTile, format), true,
                               options.rowWalkEpilogue, schedule);
    out << "#else\n";
    sharedBytes = std::max(sharedBytes, printMmaBody(out, printer, contraction, format, blockTile, false,
                                                     options.rowWalkEpilogue, schedule));
    out << "#endif\n";
  } else {
    sharedBytes = printMmaBody(out, printer, contraction, format, blockTile, false, options.rowWalkEpilogue, schedule);
  }
  out << "}\n";
  setTiledLaunch(spec, blockTile.bm, blockTile.bn, blockTile.threads(), launch);
  if (schedule.blocks) {
    launch.grid[0] = uint32_t(schedule.blocks);
    launch.grid[1] = launch.grid[2] = 1;
  }
  launch.sharedBytes = uint32_t(sharedBytes);
  return out.str();
}

} // namespace sinter::codegen::cuda
