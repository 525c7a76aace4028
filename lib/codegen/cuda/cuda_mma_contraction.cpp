// Tensor-core contractions: a block computes a BM x BN output tile with warp-level mma.sync
// (f32 sums), its operands staged in shared memory through a ring of STAGES slices of BK
// reduction steps, so that several slices are in flight while the warps multiply an earlier one.
// A 16-bit kernel may carry a second body for sm_90a, where two warpgroups multiply 128x128
// tiles with wgmma straight from 128-byte-swizzled slices that the same staging writes
// (printWgmmaLoop). Which operand form and tile a contraction gets is cuda_mma_choice.cpp's; a
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
//   scalar:          anything else (a convolution's window gather, a 32-bit input narrowed): each
//                    thread evaluates the expression element by element into registers before
//                    the products and stores them packed into the slice after.
#include "cuda_contraction.h"

#include "cuda_source.h"
#include "cuda_tile_schedule.h"
#include "sinter/codegen/kernel/index_runs.h"

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

enum class Staging { VectorK, VectorMN, NarrowedK, Scalar };

/// The load behind an operand that is copied as it is stored: `cast<f32>(load)` of the 16-bit
/// type `stored`, or a float32 `load` when `stored` is f32; when its runs of `run` elements
/// along `variable` (whose extent is `extent`) are contiguous and 16-byte aligned; null
/// otherwise.
const Expr *vectorLoad(const ExprRef &value, DType stored, int run, int variable, int64_t extent) {
  if (extent % run != 0)
    return nullptr;
  const Expr *load = value.get();
  if (stored != DType::Float32) {
    if (value->kind != ExprKind::Cast)
      return nullptr;
    load = value->operands[0].get();
  }
  if (load->kind != ExprKind::Load || load->type != stored)
    return nullptr;
  return runForm(load->operands[0], variable, run) == RunForm::Unit ? load : nullptr;
}

/// The float32 load behind an operand `cast<f32>(cast<half>(load))` whose runs of eight along
/// `variable` are contiguous and 32-byte aligned; null otherwise.
const Expr *narrowedLoad(const ExprRef &value, DType half, int variable, int64_t extent) {
  if (value->kind != ExprKind::Cast)
    return nullptr;
  const ExprRef &rounded = value->operands[0];
  if (rounded->kind != ExprKind::Cast || rounded->type != half)
    return nullptr;
  return vectorLoad(rounded->operands[0], DType::Float32, 8, variable, extent);
}

/// Slices in the ring: three in flight while the warps multiply the fourth.
constexpr int kStages = 4;
/// The wgmma ring: three slices of 32 KiB (128x128 tiles, 128 bytes of reduction per row), two
/// requested ahead of the one multiplied, whose products each warpgroup waits for before the
/// next step, and two blocks an SM (128 registers a thread), so that one block's epilogue and
/// copies run while the other multiplies; with one block an SM the tensor cores idled through
/// every tile's epilogue. Against the rings before it (docs/performance.md), on the H200 at fp16
/// b32: a five-slice ring, three ahead and one group in flight, one block an SM, took ViT-B/16's
/// QKV projection 0.606 ms, its output projection 0.442 and its MLP-out 0.924, ResNet-50's
/// Conv+Add+Relu kernels 0.642, where this ring takes 0.555, 0.404, 0.874 and 0.587; a
/// three-slice ring with one ahead and one group in flight took the MLP-in with its GELU 1.109
/// ms where this one takes 1.021, and lost on residual epilogues (3ad9347: MLP-out 1.24 ms).
constexpr int kWgmmaStages = 3;

/// The main loop's unrolling: whole for short reductions (ResNet-50's 1x1 convolutions of 2 to
/// 16 slices were 1.6x slower as a loop), none for long ones (BERT-base's 48 slices of k = 3072
/// unrolled whole took four minutes in ptxas).
const char *mainLoopUnroll(int64_t slices) { return slices <= 16 ? "" : "#pragma unroll 1\n"; }

/// How the operands sit in shared memory and reach the tensor cores.
struct Format {
  const char *name;        ///< mmaOperandsName
  const char *description; ///< for the kernel's header comment
  DType stored;            ///< the element type in shared memory: f16, bf16 or f32
  const char *element;     ///< its C type there
  int bytes;               ///< its size
  int kStep;               ///< reduction steps of one mma
  const char *mma;         ///< the mma.sync instruction
  bool split = false;      ///< three products of tf32 pairs (fp32), or one
  bool tf32() const { return stored == DType::Float32; }
  int run() const { return 16 / bytes; } ///< elements in 16 bytes
};

Format formatOf(MmaOperands operands) {
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

} // namespace

const char *mmaOperandsName(MmaOperands operands) { return formatOf(operands).name; }

namespace {

/// How an operand reaches shared memory (the file's header lists the forms), and the load it
/// copies or narrows (null for a scalar operand).
std::pair<Staging, const Expr *> operandStaging(const ExprRef &value, bool rhs, const ContractionSpec &spec,
                                                const Format &format) {
  if (const Expr *load = vectorLoad(value, format.stored, format.run(), spec.r, spec.k))
    return {Staging::VectorK, load};
  if (!format.tf32())
    if (const Expr *load = narrowedLoad(value, format.stored, spec.r, spec.k))
      return {Staging::NarrowedK, load};
  if (rhs)
    if (const Expr *load = vectorLoad(value, format.stored, format.run(), spec.j, spec.n))
      return {Staging::VectorMN, load};
  return {Staging::Scalar, nullptr};
}

/// A request of the slice at reduction step `k` into `stage`: its copies and register stores.
using SliceRequest = std::function<void(const std::string &stage, const char *k, const std::string &indent)>;

/// The ring's first `slices` slices, requested before the main loop (each commits a group, empty
/// past the end of the reduction, so the loop's wait counts stay fixed).
void printRingPrologue(std::ostringstream &out, int slices, int64_t kTiles, int bk, const SliceRequest &request) {
  out << "  for (int t = 0; t < " << slices << "; ++t) {\n";
  out << "    if (t < " << kTiles << "LL) {\n      const long long k0 = (long long)t * " << bk << ";\n";
  request("t", "k0", "      ");
  out << "    }\n    sn_cp_async_commit<0>();\n  }\n";
}

/// The ring's first `slices` slices of the range kBegin .. kEnd - 1 of a tile's slices (a
/// stream-K launch's), in the stages the main loop expects them (t % stages).
void printRangeRingPrologue(std::ostringstream &out, int slices, int stages, int bk, const SliceRequest &request) {
  out << "  for (int s = 0; s < " << slices << "; ++s) {\n    const int t = kBegin + s;\n";
  out << "    if (t < kEnd) {\n      const long long k0 = (long long)t * " << bk << ";\n";
  request("(t % " + std::to_string(stages) + ")", "k0", "      ");
  out << "    }\n    sn_cp_async_commit<0>();\n  }\n";
}

/// The wgmma form of a block tile: the same block (128x128, 256 threads: two warpgroups of 64
/// rows), with slices of 128 bytes of reduction per row, the width of the 128-byte swizzle.
MmaTile wgmmaTile(MmaTile tile, const Format &format) {
  tile.bk = 128 / format.bytes;
  return tile;
}

/// Compiler barriers around the wgmma sums, so that no access to them moves across the
/// asynchronous products that write them.
void printFenceSums(std::ostringstream &out, const MmaTile &tile, const char *indent) {
  out << indent << "#pragma unroll\n" << indent << "for (int q = 0; q < " << tile.bn / 8 << "; ++q)\n" << indent
      << "  asm volatile(\"\" : \"+f\"(acc[0][q][0]), \"+f\"(acc[0][q][1]), \"+f\"(acc[0][q][2]), \"+f\"(acc[0][q][3]) :: \"memory\");\n";
}

/// The descriptors of the slices' first stage. Descriptors (PTX ISA, shared-memory matrix
/// layouts, 128-byte swizzle): k-major, the stride between groups of eight rows is 1024 bytes and
/// a k16 step is 32 bytes along the row; a vector along n (transposed B) has 64-column atoms
/// 64 * 128 bytes apart and 16 rows of k (2048 bytes) per step.
void printWgmmaDescriptors(std::ostringstream &out, const MmaTile &tile, int64_t aBytes, bool rhsAlongN) {
  out << "  const unsigned long long descA = sn_wgmma_descriptor(swizzled + (warp / 4) * " << 64 * 128
      << ", 16, 1024), descB = sn_wgmma_descriptor(swizzled + " << aBytes << ", "
      << (rhsAlongN ? tile.bk * 128 : 16) << ", 1024);\n";
}

/// One slice's products, issued asynchronously as one group: each warpgroup's 64 rows of the
/// sums by the slice at `stage`, in k16 steps.
void printWgmmaProducts(std::ostringstream &out, const MmaTile &tile, const Format &format, int64_t stageBytes,
                        bool rhsAlongN) {
  const int steps = tile.bk * format.bytes / 32; // k16 products per slice
  printFenceSums(out, tile, "    ");
  out << "    sn_wgmma_fence();\n";
  std::string shape = "m64n" + std::to_string(tile.bn) + "k16";
  std::string sums;
  for (int i = 0; i < tile.bn / 2; ++i)
    sums += (i ? ", %" : "%") + std::to_string(i);
  const int a = tile.bn / 2, b = a + 1, one = a + 2;
  for (int step = 0; step < steps; ++step) {
    out << "    asm volatile(\"{ .reg .pred p; setp.ne.b32 p, %" << one << ", 0; wgmma.mma_async.sync.aligned." << shape
        << ".f32." << format.name << "." << format.name << " {" << sums << "}, %" << a << ", %" << b
        << ", p, 1, 1, 0, " << (rhsAlongN ? 1 : 0) << "; }\"\n      : ";
    for (int q = 0; q < tile.bn / 8; ++q)
      for (int c = 0; c < 4; ++c)
        out << (q || c ? ", " : "") << "\"+f\"(acc[0][" << q << "][" << c << "])";
    out << "\n      : \"l\"(descA + ((stage * " << stageBytes << " + " << step * 32 << ") >> 4)), \"l\"(descB + ((stage * "
        << stageBytes << " + " << step * (rhsAlongN ? 2048 : 32) << ") >> 4)), \"r\"(1) : \"memory\");\n";
  }
  out << "    sn_wgmma_commit();\n";
  printFenceSums(out, tile, "    ");
}

/// The wgmma main loop. `request(stage, k, indent)` prints the copies (and register stores) of
/// the slice at reduction step k into `stage`. Slices 0 .. A - 1 are requested first (A, the
/// slices ahead: the ring's size less one); then at step t every thread waits for its copies of
/// slice t, makes them visible to the tensor cores' proxy and meets the others (after which both
/// warpgroups are also done with slice t - 1: each waited for its products at the end of step
/// t - 1), issues slice t's products asynchronously, requests slice t + A into the place slice
/// t - 1 left, and waits for its products. The probe in bench/wgmma_probe measured the layouts and
/// descriptors (and a ring with one group of products left in flight) on an H200. With `ranged`
/// the loop runs over the slices kBegin .. kEnd - 1 of the tile (a stream-K launch's).
void printWgmmaLoop(std::ostringstream &out, const MmaTile &tile, const Format &format, int64_t kTiles,
                    int64_t stageBytes, int64_t aBytes, bool rhsAlongN, bool ranged, const SliceRequest &request) {
  const int stages = kWgmmaStages, ahead = stages - 1;
  printWgmmaDescriptors(out, tile, aBytes, rhsAlongN);
  const std::string end = ranged ? "kEnd" : std::to_string(kTiles) + "LL";
  if (ranged) {
    printRangeRingPrologue(out, ahead, stages, tile.bk, request);
    out << "#pragma unroll 1\n  for (int t = kBegin; t < kEnd; ++t) {\n";
  } else {
    printRingPrologue(out, ahead, kTiles, tile.bk, request);
    out << mainLoopUnroll(kTiles) << "  for (int t = 0; t < " << kTiles << "; ++t) {\n";
  }
  out << "    sn_cp_async_wait<" << ahead - 1 << ">();\n    sn_fence_proxy_async();\n    __syncthreads();\n";
  out << "    const int stage = (int)(t % " << stages << "), nextStage = (int)((t + " << ahead << ") % " << stages
      << ");\n";
  printWgmmaProducts(out, tile, format, stageBytes, rhsAlongN);
  out << "    if (t + " << ahead << " < " << end << ") {\n      const long long next = (long long)(t + " << ahead << ") * "
      << tile.bk << ";\n";
  request("nextStage", "next", "      ");
  out << "    }\n    sn_cp_async_commit<0>();\n    sn_wgmma_wait<0>();\n  }\n";
  printFenceSums(out, tile, "  ");
}

/// The kernel's body in one of its two forms: warp-level mma.sync, or (wgmma) two warpgroups of
/// m64n128k16 warpgroup MMA reading 128-byte-swizzled slices (sm_90a). Returns the dynamic shared
/// memory it needs.
int64_t printMmaBody(std::ostringstream &out, CudaPrinter &printer, const Contraction &contraction,
                     const Format &format, const MmaTile &tile, bool wgmma, bool rowWalk, const Schedule &schedule) {
  const ContractionSpec &spec = contraction.spec;
  const Kernel &kernel = contraction.kernel;
  auto v = [](int id) { return "v" + std::to_string(id); };
  const int threads = tile.threads();
  const int warpRows = tile.bm / tile.warpsM, warpColumns = tile.bn / tile.warpsN;
  const int mTiles = wgmma ? 1 : warpRows / 16, nTiles = wgmma ? tile.bn / 8 : warpColumns / 8;
  // wgmma slices: k-major rows of 128 bytes (64 16-bit steps), the 16-byte chunk c of row r at
  // chunk c ^ (r % 8); a vector along n as 64-column atoms of 64 rows of k, likewise swizzled.
  const int64_t aBytes = int64_t(tile.bm) * tile.bk * format.bytes, bBytes = int64_t(tile.bn) * tile.bk * format.bytes;
  const int64_t stageBytes = aBytes + bBytes;
  const int64_t kTiles = ceilDiv(spec.k, tile.bk);
  const int run = format.run();
  const char *toHalf = format.stored == DType::Float16 ? "sn_f2h" : "sn_f2bf";

  struct Operand {
    const char *name, *shared, *registers, *base;
    int extent, indexVar;
    bool unitStrideK;
    int64_t limit;
    ExprRef value;
    Staging staging = Staging::Scalar;
    const Expr *load = nullptr;
    int rows = 0, rowLength = 0; ///< shape of one slice in shared memory, in elements
    /// A copied operand whose index is linear in r, over a reduction that is whole slices: each
    /// run's source and place are computed once, and the source advances by sliceStride
    /// elements per slice requested (the slices are requested in order).
    bool walked = false;
    int64_t sliceStride = 0;
    /// A scalar operand whose runs are strided gathers (set with the run length below).
    std::optional<StridedGather> strided = std::nullopt;
  };
  Operand operands[] = {
      {"lhs", "sA", "ra", "rowBase", tile.bm, spec.i, spec.lhsUnitStrideK, spec.m, spec.lhs},
      {"rhs", "sB", "rb", "columnBase", tile.bn, spec.j, spec.rhsUnitStrideK, spec.n, spec.rhs}};
  // A scalar operand's run: reduction steps of one row (lhs) or column (rhs) that a thread
  // evaluates into registers and stores at once (see the scalar staging below).
  auto runLength = [&](const Operand &o) { return o.unitStrideK ? (format.tf32() ? 1 : 2) : run; };
  for (Operand &o : operands) {
    std::tie(o.staging, o.load) = operandStaging(o.value, &o == &operands[1], spec, format);
    // A slice is k-contiguous rows with a run of padding (a row is 20 words for 32 bytes of
    // reduction, so the eight rows a fragment read touches start in eight different bank
    // quads), or for a vector along n, n-contiguous rows (16-bit: read by ldmatrix.trans, padded
    // by a run likewise; f32: padded by 8 words, so a fragment's four steps of eight columns
    // fall in 32 different banks).
    if ((o.staging == Staging::VectorK || o.staging == Staging::VectorMN) && spec.k % tile.bk == 0)
      if (std::optional<int64_t> stride =
              sliceStride(o.load->operands[0], spec.r, tile.bk, kTiles, kernel, *printer.ranges())) {
        o.walked = true;
        o.sliceStride = *stride;
      }
    if (o.staging == Staging::Scalar && runLength(o) > 1 && spec.k % runLength(o) == 0)
      o.strided = stridedGather(o.value, format.stored, spec.r, runLength(o));
    if (o.staging == Staging::VectorMN) {
      o.rows = tile.bk;
      o.rowLength = o.extent + 8;
    } else {
      o.rows = o.extent;
      o.rowLength = tile.bk + run;
    }
  }
  auto stagingName = [](Staging s) {
    switch (s) {
    case Staging::VectorK: return "vector along k";
    case Staging::VectorMN: return "vector along n";
    case Staging::NarrowedK: return "narrowed vector along k";
    case Staging::Scalar: break;
    }
    return "scalar";
  };

  out << "  // contraction on tensor cores (" << format.description << ", f32 sums): batch " << spec.batch
      << ", m " << spec.m << ", n " << spec.n << ", k " << spec.k << "; tile " << tile.bm << "x"
      << tile.bn << "x" << tile.bk << ", ";
  if (wgmma)
    out << "2 warpgroups of 64x" << tile.bn << " (wgmma), " << kWgmmaStages - 1 << " slices ahead";
  else
    out << tile.warpsM << "x" << tile.warpsN << " warps of " << warpRows << "x" << warpColumns << ", " << kStages
        << " slices in flight";
  auto describe = [&](const Operand &o) {
    return o.strided ? "strided gather of " + std::to_string(runLength(o)) + " steps " +
                           std::to_string(o.strided->stride) + " apart"
                     : std::string(stagingName(o.staging));
  };
  out << "; lhs " << describe(operands[0]) << ", rhs " << describe(operands[1]) << "\n";
  // The dynamic shared memory is declared with one type in every kernel of the module (extern
  // arrays of one name must agree); an f32 slice is a view of it.
  int64_t offset = 0; // in 16-bit units
  out << "  extern __shared__ __align__(16) unsigned short sn_shared[];\n";
  if (wgmma) {
    // The swizzle repeats every 1024 bytes: the slices start at a multiple of it.
    out << "  const unsigned sharedBase = sn_shared_address(sn_shared), swizzled = (sharedBase + 1023u) & ~1023u;\n";
    out << "  unsigned char *slices = reinterpret_cast<unsigned char *>(sn_shared) + (swizzled - sharedBase);\n";
    offset = (kWgmmaStages * stageBytes + 1024) / 2;
  } else {
    for (const Operand &o : operands) {
      out << "  " << format.element << " (*" << o.shared << ")[" << o.rows << "][" << o.rowLength
          << "] = reinterpret_cast<" << format.element << " (*)[" << o.rows << "][" << o.rowLength
          << "]>(sn_shared + " << offset << ");\n";
      offset += int64_t(kStages) * o.rows * o.rowLength * format.bytes / 2;
    }
  }
  // Where element (row, column) of an operand's slice `stage` is: k-contiguous rows (row, k), or
  // for a vector along n, (k, n).
  auto place = [&](const Operand &o, const std::string &stage, const std::string &row, const std::string &column) {
    if (!wgmma)
      return "&" + std::string(o.shared) + "[" + stage + "][" + row + "][" + column + "]";
    std::string origin = "slices + (" + stage + ") * " + std::to_string(stageBytes) +
                         (&o == &operands[1] ? " + " + std::to_string(aBytes) : "");
    std::string at;
    if (o.staging == Staging::VectorMN)
      at = origin + " + ((" + column + ") >> 6) * " + std::to_string(tile.bk * 128) + " + (" + row + ") * 128 + (((((" +
           column + ") >> 3) & 7) ^ ((" + row + ") & 7)) << 4) + ((" + column + ") & 7) * 2";
    else
      at = origin + " + (" + row + ") * 128 + ((((" + column + ") >> 3) ^ ((" + row + ") & 7)) << 4) + ((" + column +
           ") & 7) * 2";
    return "reinterpret_cast<" + std::string(format.element) + " *>(" + at + ")";
  };
  out << printer.locals(kernel, 1);
  out << "  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;\n";
  out << "  const int group = lane / 4, quad = lane % 4;\n";
  if (wgmma) // warp w of the block holds rows 16w .. 16w + 15 of the sums, every column
    out << "  const int warpRow = warp * 16, warpColumn = 0;\n";
  else
    out << "  const int warpRow = (warp / " << tile.warpsN << ") * " << warpRows
        << ", warpColumn = (warp % " << tile.warpsN << ") * " << warpColumns << ";\n";
  // A stream-K launch's wgmma body runs over whole tiles and pieces of tiles (kBegin .. kEnd - 1
  // of the tile's slices); its mma.sync body over whole tiles.
  const bool split = schedule.blocks > 0 && wgmma;
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

  // Vector operands: each thread copies whole runs; a run is inside the matrix or wholly
  // outside it (the extent along the run is a multiple of it), and outside is zero-filled.
  // A slice's runs are dealt to the threads in turn; where they do not divide evenly (a 96-row
  // tile), the threads past the last run skip their final turn.
  auto runIndex = [&](int runs, const std::string &indent) {
    out << indent << "const int e = tid + u * " << threads << ";\n";
    if (runs % threads != 0)
      out << indent << "if (e >= " << runs << ") break;\n";
  };
  auto vectorRunCount = [&](const Operand &o) { return o.extent * tile.bk / run; };
  auto vectorRuns = [&](const Operand &o) { return ceilDiv(vectorRunCount(o), threads); };
  // Where run u of a thread starts in a slice of k-contiguous rows (copied or narrowed).
  auto runPositionK = [&](const Operand &o, const std::string &indent) {
    runIndex(vectorRunCount(o), indent);
    out << indent << "const int kk = (e % " << tile.bk / run << ") * " << run << ", ii = e / " << tile.bk / run << ";\n";
  };
  // The bytes between one slice of an operand and the next in shared memory.
  auto stageStride = [&](const Operand &o) {
    return wgmma ? stageBytes : int64_t(o.rows) * o.rowLength * format.bytes;
  };
  // Whether some runs of a walked operand's tile lie past the matrix's edge.
  auto ragged = [&](const Operand &o) { return o.limit % o.extent != 0; };
  // Where run u of a copied operand is: its row ii (along k) or column jj (along n) in the tile,
  // and its reduction step kk in the slice.
  auto vectorPosition = [&](const Operand &o, const std::string &indent) {
    if (o.staging == Staging::VectorK) {
      runPositionK(o, indent);
    } else {
      runIndex(vectorRunCount(o), indent);
      out << indent << "const int jj = (e % " << o.extent / run << ") * " << run << ", kk = e / " << o.extent / run << ";\n";
    }
  };
  // A walked operand's runs, before the first request: the source at the first slice (a run
  // past the matrix's edge reads its last row or column, with a zero-filling copy), and the
  // shared-memory address in slice 0.
  auto walkSetup = [&](const Operand &o) {
    const bool alongK = o.staging == Staging::VectorK;
    const std::string within = std::string(o.base) + " + " + (alongK ? "ii" : "jj");
    const std::string limit = std::to_string(o.limit) + "LL";
    out << "  const " << cudaStorageType(o.load->type) << " *" << o.name << "Source[" << vectorRuns(o) << "];\n";
    out << "  unsigned " << o.name << "Place[" << vectorRuns(o) << "];\n";
    if (ragged(o))
      out << "  bool " << o.name << "Inside[" << vectorRuns(o) << "];\n";
    out << "#pragma unroll\n  for (int u = 0; u < " << vectorRuns(o) << "; ++u) {\n";
    vectorPosition(o, "    ");
    if (ragged(o)) {
      out << "    " << o.name << "Inside[u] = " << within << " < " << limit << ";\n";
      out << "    " << v(o.indexVar) << " = " << o.name << "Inside[u] ? " << within << " : " << limit << " - 1;\n";
    } else {
      out << "    " << v(o.indexVar) << " = " << within << ";\n";
    }
    out << "    " << v(spec.r) << " = " << (split ? "(long long)kBegin * " + std::to_string(tile.bk) + " + kk" : "kk")
        << ";\n";
    out << "    " << o.name << "Source[u] = b" << o.load->id << " + " << printer.expr(o.load->operands[0]) << ";\n";
    out << "    " << o.name << "Place[u] = sn_shared_address("
        << (alongK ? place(o, "0", "ii", "kk") : place(o, "0", "kk", "jj")) << ");\n";
    out << "  }\n";
  };
  auto issueVector = [&](const Operand &o, const std::string &stage, const char *k, const std::string &indent) {
    out << indent << "#pragma unroll\n" << indent << "for (int u = 0; u < " << vectorRuns(o) << "; ++u) {\n";
    if (o.walked) {
      if (vectorRunCount(o) % threads != 0)
        out << indent << "  if (tid + u * " << threads << " >= " << vectorRunCount(o) << ") break;\n";
      out << indent << "  sn_cp_async16_at(" << o.name << "Place[u] + (" << stage << ") * " << stageStride(o) << ", "
          << o.name << "Source[u], " << (ragged(o) ? std::string(o.name) + "Inside[u]" : "true") << ");\n";
      out << indent << "  " << o.name << "Source[u] += " << o.sliceStride << ";\n";
      out << indent << "}\n";
      return;
    }
    // The run's row (or column) within the tile: ii along k, jj along n.
    const bool alongK = o.staging == Staging::VectorK;
    const char *within = alongK ? "ii" : "jj";
    vectorPosition(o, indent + "  ");
    out << indent << "  " << v(o.indexVar) << " = " << o.base << " + " << within << "; " << v(spec.r) << " = " << k << " + kk;\n";
    out << indent << "  const bool valid = " << v(o.indexVar) << " < " << o.limit << "LL && " << v(spec.r)
        << " < " << spec.k << "LL;\n";
    out << indent << "  sn_cp_async16(" << (alongK ? place(o, stage, "ii", "kk") : place(o, stage, "kk", "jj"))
        << ", valid ? b" << o.load->id << " + " << printer.expr(o.load->operands[0]) << " : b" << o.load->id
        << ", valid);\n";
    out << indent << "}\n";
  };

  // Scalar operands: each thread evaluates runs of `length` consecutive reduction steps of one
  // row (lhs) or column (rhs) into registers, and stores a run at once. An operand whose
  // reduction index is its unit stride takes short runs (consecutive threads read consecutive
  // addresses): pairs of 16-bit values packed in a word, or single f32; the other takes 16-byte
  // runs (consecutive threads read consecutive rows of one step) whose stores land in a
  // different bank quad for each of eight adjacent rows. The registers hold the values as read
  // (16-bit patterns, or f32 to narrow when stored), so that no conversion waits on a load
  // before the next load is issued.
  auto scalarRunCount = [&](const Operand &o) { return o.extent * tile.bk / runLength(o); };
  auto scalarRuns = [&](const Operand &o) { return ceilDiv(scalarRunCount(o), threads); };
  auto readsBits = [&](const Operand &o) {
    if (o.strided)
      return !format.tf32() && o.strided->load->type == format.stored;
    return !format.tf32() && o.value->kind == ExprKind::Cast && o.value->operands[0]->type == format.stored;
  };
  auto runPosition = [&](const Operand &o, const std::string &indent) {
    int length = runLength(o), perRow = tile.bk / length;
    runIndex(scalarRunCount(o), indent);
    if (o.unitStrideK)
      out << indent << "const int kk = (e % " << perRow << ") * " << length << ", ii = e / " << perRow << ";\n";
    else
      out << indent << "const int kk = (e / " << o.extent << ") * " << length << ", ii = e % " << o.extent << ";\n";
  };
  // A strided gather's run: its test and address once, then `length` loads at fixed offsets.
  auto loadStrided = [&](const Operand &o, const char *k, const std::string &indent) {
    int length = runLength(o);
    const StridedGather &gather = *o.strided;
    out << indent << "#pragma unroll\n" << indent << "for (int u = 0; u < " << scalarRuns(o) << "; ++u) {\n";
    runPosition(o, indent + "  ");
    out << indent << "  " << v(o.indexVar) << " = " << o.base << " + ii; " << v(spec.r) << " = " << k << " + kk;\n";
    out << indent << "  const bool fill = " << v(o.indexVar) << " < " << o.limit << "LL && " << v(spec.r) << " < "
        << spec.k << "LL" << (gather.test ? " && " + printer.expr(gather.test) : std::string()) << ";\n";
    out << indent << "  const " << cudaStorageType(gather.load->type) << " *from = b" << gather.load->id << " + "
        << printer.expr(gather.load->operands[0]) << ";\n";
    out << indent << "#pragma unroll\n" << indent << "  for (int s = 0; s < " << length << "; ++s)\n";
    out << indent << "    " << o.registers << "[u * " << length << " + s] = fill ? from[s * " << gather.stride
        << "LL] : 0;\n";
    out << indent << "}\n";
  };
  auto loadScalar = [&](const Operand &o, const char *k, const std::string &indent) {
    if (o.strided)
      return loadStrided(o, k, indent);
    int length = runLength(o);
    std::string value = readsBits(o) ? printer.expr(o.value->operands[0]) : printer.expr(o.value);
    out << indent << "#pragma unroll\n" << indent << "for (int u = 0; u < " << scalarRuns(o) << "; ++u) {\n";
    runPosition(o, indent + "  ");
    out << indent << "  " << v(o.indexVar) << " = " << o.base << " + ii;\n";
    out << indent << "#pragma unroll\n" << indent << "  for (int s = 0; s < " << length << "; ++s) {\n";
    out << indent << "    " << v(spec.r) << " = " << k << " + kk + s;\n";
    out << indent << "    " << o.registers << "[u * " << length << " + s] = (" << v(o.indexVar) << " < "
        << o.limit << "LL && " << v(spec.r) << " < " << spec.k << "LL) ? " << value << " : 0;\n";
    out << indent << "  }\n" << indent << "}\n";
  };
  auto storeScalar = [&](const Operand &o, const std::string &stage, const std::string &indent) {
    int length = runLength(o);
    auto element = [&](int s) {
      return o.registers + std::string("[u * ") + std::to_string(length) + " + " + std::to_string(s) + "]";
    };
    auto bits = [&](const std::string &element) {
      return readsBits(o) ? "(unsigned)" + element : "(unsigned)" + std::string(toHalf) + "(" + element + ")";
    };
    auto word = [&](int w) { return "(" + bits(element(2 * w)) + " | (" + bits(element(2 * w + 1)) + " << 16))"; };
    out << indent << "#pragma unroll\n" << indent << "for (int u = 0; u < " << scalarRuns(o) << "; ++u) {\n";
    runPosition(o, indent + "  ");
    std::string at = place(o, stage, "ii", "kk");
    if (format.tf32() && length == 1)
      out << indent << "  " << o.shared << "[" << stage << "][ii][kk] = " << element(0) << ";\n";
    else if (format.tf32())
      out << indent << "  *reinterpret_cast<float4 *>(" << at << ") = float4{" << element(0) << ", "
          << element(1) << ", " << element(2) << ", " << element(3) << "};\n";
    else if (length == 2)
      out << indent << "  *reinterpret_cast<unsigned *>(" << at << ") = " << word(0) << ";\n";
    else
      out << indent << "  *reinterpret_cast<uint4 *>(" << at << ") = uint4{" << word(0) << ", " << word(1)
          << ", " << word(2) << ", " << word(3) << "};\n";
    out << indent << "}\n";
  };
  for (const Operand &o : operands)
    if (o.staging == Staging::Scalar)
      out << "  " << (readsBits(o) ? "unsigned short" : "float") << " " << o.registers << "["
          << scalarRuns(o) * runLength(o) << "];\n";
  // Narrowed vectors: the same runs as a vector along k, read as two float4 into registers and
  // rounded when stored (cvt.rn, as the expression's cast does).
  auto loadNarrowed = [&](const Operand &o, const char *k, const std::string &indent) {
    out << indent << "#pragma unroll\n" << indent << "for (int u = 0; u < " << vectorRuns(o) << "; ++u) {\n";
    runPositionK(o, indent + "  ");
    out << indent << "  " << v(o.indexVar) << " = " << o.base << " + ii; " << v(spec.r) << " = " << k << " + kk;\n";
    out << indent << "  if (" << v(o.indexVar) << " < " << o.limit << "LL && " << v(spec.r) << " < " << spec.k
        << "LL) {\n";
    out << indent << "    const float4 *run = reinterpret_cast<const float4 *>(b" << o.load->id << " + "
        << printer.expr(o.load->operands[0]) << ");\n";
    out << indent << "    " << o.registers << "[2 * u] = run[0]; " << o.registers << "[2 * u + 1] = run[1];\n";
    out << indent << "  } else {\n";
    out << indent << "    " << o.registers << "[2 * u] = " << o.registers << "[2 * u + 1] = float4{0.f, 0.f, 0.f, 0.f};\n";
    out << indent << "  }\n" << indent << "}\n";
  };
  auto storeNarrowed = [&](const Operand &o, const std::string &stage, const std::string &indent) {
    auto pair = [&](const std::string &low, const std::string &high) { return packedHalves(toHalf, low, high); };
    std::string first = std::string(o.registers) + "[2 * u]", second = std::string(o.registers) + "[2 * u + 1]";
    out << indent << "#pragma unroll\n" << indent << "for (int u = 0; u < " << vectorRuns(o) << "; ++u) {\n";
    runPositionK(o, indent + "  ");
    out << indent << "  *reinterpret_cast<uint4 *>(" << place(o, stage, "ii", "kk") << ") = uint4{"
        << pair(first + ".x", first + ".y") << ", " << pair(first + ".z", first + ".w") << ", "
        << pair(second + ".x", second + ".y") << ", " << pair(second + ".z", second + ".w") << "};\n";
    out << indent << "}\n";
  };
  for (const Operand &o : operands)
    if (o.staging == Staging::NarrowedK)
      out << "  float4 " << o.registers << "[" << 2 * vectorRuns(o) << "];\n";
  auto registerStaged = [](const Operand &o) {
    return o.staging == Staging::Scalar || o.staging == Staging::NarrowedK;
  };
  auto storeStaged = [&](const Operand &o, const std::string &stage, const std::string &indent) {
    if (o.staging == Staging::NarrowedK)
      storeNarrowed(o, stage, indent);
    else
      storeScalar(o, stage, indent);
  };
  auto issue = [&](const std::string &stage, const char *k, const std::string &indent) {
    for (const Operand &o : operands)
      if (o.staging == Staging::Scalar)
        loadScalar(o, k, indent);
      else if (o.staging == Staging::NarrowedK)
        loadNarrowed(o, k, indent);
      else
        issueVector(o, stage, k, indent);
  };
  // A whole slice at once: the copies, and the registers' stores right after their loads.
  auto request = [&](const std::string &stage, const char *k, const std::string &indent) {
    issue(stage, k, indent);
    for (const Operand &o : operands)
      if (registerStaged(o))
        storeStaged(o, stage, indent);
  };

  for (const Operand &o : operands)
    if (o.walked)
      walkSetup(o);

  if (wgmma) {
    printWgmmaLoop(out, tile, format, kTiles, stageBytes, aBytes, operands[1].staging == Staging::VectorMN, split,
                   request);
    if (split)
      printPieceExchange(out, schedule, tile, contraction.kernel.name + "_arrivals");
  } else {
    // The ring: slices 0 .. STAGES-2 are requested first; then at step t the warps wait for slice
    // t, request slice t + STAGES - 1 into the place slice t - 1 left, multiply slice t, and store
    // the scalar operands' registers for slice t + STAGES - 1.
    printRingPrologue(out, kStages - 1, kTiles, tile.bk, request);
    out << mainLoopUnroll(kTiles) << "  for (int t = 0; t < " << kTiles << "; ++t) {\n";
    out << "    sn_cp_async_wait<" << kStages - 2 << ">();\n    __syncthreads();\n";
    out << "    const int stage = (int)(t % " << kStages << "), nextStage = (int)((t + " << kStages - 1
        << ") % " << kStages << ");\n";
    out << "    const bool more = t + " << kStages - 1 << " < " << kTiles << "LL;\n";
    out << "    if (more) {\n      const long long next = (long long)(t + " << kStages - 1 << ") * " << tile.bk << ";\n";
    issue("nextStage", "next", "      ");
    out << "    }\n    sn_cp_async_commit<0>();\n";
    // Fragments (PTX ISA, mma.m16n8k16 with .f16/.bf16): lane = 4 * group + quad; A's registers
    // hold rows group and group + 8 at columns 2 * quad (+1) and 2 * quad + 8 (+1); B's hold
    // column group at rows 2 * quad (+1) and 2 * quad + 8 (+1); the f32 sums are rows group and
    // group + 8 at columns 2 * quad (+1). ldmatrix.x2.trans of two 8x8 k-major blocks gives B's
    // two registers directly: lanes 0-15 name the blocks' rows kk .. kk + 15.
    // m16n8k8 with .tf32: A's registers hold rows group and group + 8 at columns quad and
    // quad + 4; B's hold column group at rows quad and quad + 4; the sums are laid out as above.
    const Operand &lhs = operands[0], &rhs = operands[1];
    out << "#pragma unroll\n    for (int kk = 0; kk < " << tile.bk << "; kk += " << format.kStep << ") {\n";
    out << "      unsigned a[" << mTiles << "][4], b[" << nTiles << "][2];\n";
    if (format.split)
      out << "      unsigned aRest[" << mTiles << "][4], bRest[" << nTiles << "][2];\n";
    // An f32 element of a slice into its tf32 fragment register (and remainder, when split).
    auto tf32 = [&](const std::string &element, const std::string &fragment, const std::string &rest) {
      if (format.split)
        return "sn_tf32_split(" + element + ", " + fragment + ", " + rest + ");";
      return fragment + " = sn_tf32(" + element + ");";
    };
    if (format.tf32()) {
      const std::string below = std::to_string(8 * lhs.rowLength);
      out << "#pragma unroll\n      for (int p = 0; p < " << mTiles << "; ++p) {\n"
          << "        const float *top = &sA[stage][warpRow + p * 16 + group][kk + quad];\n"
          << "        " << tf32("top[0]", "a[p][0]", "aRest[p][0]") << "\n"
          << "        " << tf32("top[" + below + "]", "a[p][1]", "aRest[p][1]") << "\n"
          << "        " << tf32("top[4]", "a[p][2]", "aRest[p][2]") << "\n"
          << "        " << tf32("top[" + below + " + 4]", "a[p][3]", "aRest[p][3]") << "\n"
          << "      }\n";
      out << "#pragma unroll\n      for (int q = 0; q < " << nTiles << "; ++q) {\n";
      if (rhs.staging == Staging::VectorMN)
        out << "        const float *column = &sB[stage][kk + quad][warpColumn + q * 8 + group];\n"
            << "        " << tf32("column[0]", "b[q][0]", "bRest[q][0]") << "\n"
            << "        " << tf32("column[" + std::to_string(4 * rhs.rowLength) + "]", "b[q][1]", "bRest[q][1]") << "\n";
      else
        out << "        const float *column = &sB[stage][warpColumn + q * 8 + group][kk + quad];\n"
            << "        " << tf32("column[0]", "b[q][0]", "bRest[q][0]") << "\n"
            << "        " << tf32("column[4]", "b[q][1]", "bRest[q][1]") << "\n";
      out << "      }\n";
    } else {
      out << "#pragma unroll\n      for (int p = 0; p < " << mTiles << "; ++p) {\n"
          << "        const unsigned short *top = &sA[stage][warpRow + p * 16 + group][kk + 2 * quad];\n"
          << "        a[p][0] = *reinterpret_cast<const unsigned *>(top);\n"
          << "        a[p][1] = *reinterpret_cast<const unsigned *>(top + 8 * " << lhs.rowLength << ");\n"
          << "        a[p][2] = *reinterpret_cast<const unsigned *>(top + 8);\n"
          << "        a[p][3] = *reinterpret_cast<const unsigned *>(top + 8 * " << lhs.rowLength << " + 8);\n"
          << "      }\n";
      out << "#pragma unroll\n      for (int q = 0; q < " << nTiles << "; ++q) {\n";
      if (rhs.staging == Staging::VectorMN) {
        out << "        sn_ldmatrix_x2_trans(b[q], &sB[stage][kk + lane % 16][warpColumn + q * 8]);\n";
      } else {
        out << "        const unsigned short *column = &sB[stage][warpColumn + q * 8 + group][kk + 2 * quad];\n"
            << "        b[q][0] = *reinterpret_cast<const unsigned *>(column);\n"
            << "        b[q][1] = *reinterpret_cast<const unsigned *>(column + 8);\n";
      }
      out << "      }\n";
    }
    auto mma = [&](const char *sums, const char *a, const char *b) {
      out << "          asm volatile(\"" << format.mma
          << " {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\"\n"
          << "                       : \"+f\"(" << sums << "[0]), \"+f\"(" << sums << "[1]), \"+f\"(" << sums
          << "[2]), \"+f\"(" << sums << "[3])\n"
          << "                       : \"r\"(" << a << "[p][0]), \"r\"(" << a << "[p][1]), \"r\"(" << a << "[p][2]), \"r\"("
          << a << "[p][3]), \"r\"(" << b << "[q][0]), \"r\"(" << b << "[q][1]));\n";
    };
    out << "#pragma unroll\n      for (int p = 0; p < " << mTiles << "; ++p)\n"
        << "#pragma unroll\n        for (int q = 0; q < " << nTiles << "; ++q)";
    if (format.split) {
      // The tensor cores add into their accumulator with truncation, not rounding to nearest: a
      // bias of up to an ulp of the running sum per step, which grew with k to 2e-5 (relative
      // L2) at k = 3072. So each step's three products (the remainders' first: they are the
      // smallest terms) are summed from zero and added to the running sum by a rounding FADD; the
      // truncation is then relative to one step's sum, and the error is the f32 FMA kernel's.
      out << " {\n          float step[4] = {0.f, 0.f, 0.f, 0.f};\n";
      mma("step", "aRest", "b");
      mma("step", "a", "bRest");
      mma("step", "a", "b");
      out << "#pragma unroll\n          for (int c = 0; c < 4; ++c) acc[p][q][c] += step[c];\n";
      out << "        }\n";
    } else {
      out << "\n";
      mma("acc[p][q]", "a", "b");
    }
    out << "    }\n";
    bool anyStaged = false;
    for (const Operand &o : operands)
      anyStaged |= registerStaged(o);
    if (anyStaged) {
      out << "    if (more) {\n";
      for (const Operand &o : operands)
        if (registerStaged(o))
          storeStaged(o, "nextStage", "      ");
      out << "    }\n";
    }
    out << "  }\n";
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

/// A statement with its expressions' index arithmetic simplified (IndexRanges::simplify).
StmtRef simplified(const StmtRef &statement, IndexRanges &ranges) {
  auto copy = std::make_shared<Stmt>(*statement);
  if (copy->a)
    copy->a = ranges.simplify(copy->a);
  if (copy->b)
    copy->b = ranges.simplify(copy->b);
  for (StmtRef &inner : copy->body)
    inner = simplified(inner, ranges);
  for (StmtRef &inner : copy->orElse)
    inner = simplified(inner, ranges);
  return copy;
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

const Expr *runLoad(const ExprRef &value, DType stored, int run, int variable, int64_t extent) {
  return vectorLoad(value, stored, run, variable, extent);
}

std::string printMmaContraction(const Contraction &original, const MmaTile &blockTile, MmaOperands mmaOperands,
                                LaunchShape &launch, const MmaKernelOptions &options) {
  const Format format = formatOf(mmaOperands);
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
    statement = simplified(statement, ranges);
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
  // workspace the compiler plans in the arena.
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
    launch.workspaceBytes = streamKWorkspaceBytes(schedule, blockTile);
  }
  launch.sharedBytes = uint32_t(sharedBytes);
  return out.str();
}

} // namespace sinter::codegen::cuda
