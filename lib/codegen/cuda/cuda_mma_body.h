// The pieces of a tensor-core kernel's body (cuda_mma_contraction.cpp puts them together), one
// file per part:
//   cuda_mma_staging.cpp  how the operands reach shared memory, the same for both instruction
//                         families (SliceStaging: copies, register gathers, the ring's prologue);
//   cuda_mma_sync.cpp     the warp-level mma.sync main loop: fragments from padded slices;
//   cuda_wgmma.cpp        the warpgroup MMA main loop (sm_90a): descriptors over 128-byte-
//                         swizzled slices, asynchronous products.
// Which family a kernel gets is decided before any of this prints (cuda_kernel_choice.cpp,
// MmaKernelOptions::warpgroupMma).
#pragma once

#include "cuda_contraction.h"
#include "cuda_source.h"

#include "sinter/codegen/kernel/index_runs.h"
#include "sinter/codegen/lowering/depthwise.h"

#include <functional>
#include <optional>
#include <sstream>
#include <string>

namespace sinter::codegen::cuda {

/// How the operands sit in shared memory and reach the tensor cores.
struct MmaFormat {
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

MmaFormat formatOf(MmaOperands operands);

/// Slices in the mma.sync ring: three in flight while the warps multiply the fourth.
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
const char *mainLoopUnroll(int64_t slices);

/// The wgmma form of a block tile: the same block (128x128, 256 threads: two warpgroups of 64
/// rows), with slices of 128 bytes of reduction per row, the width of the 128-byte swizzle.
MmaTile wgmmaTile(MmaTile tile, const MmaFormat &format);

/// A request of the slice at reduction step `k` into `stage`: its copies and register stores.
using SliceRequest = std::function<void(const std::string &stage, const char *k, const std::string &indent)>;

/// The ring's first `slices` slices, requested before the main loop (each commits a group, empty
/// past the end of the reduction, so the loop's wait counts stay fixed).
void printRingPrologue(std::ostringstream &out, int slices, int64_t kTiles, int bk, const SliceRequest &request);

/// The ring's first `slices` slices of the range kBegin .. kEnd - 1 of a tile's slices (a
/// stream-K launch's), in the stages the main loop expects them (t % stages).
void printRangeRingPrologue(std::ostringstream &out, int slices, int stages, int bk, const SliceRequest &request);

/// How an operand reaches shared memory (cuda_mma_contraction.cpp's header lists the forms).
enum class Staging { VectorK, VectorMN, NarrowedK, Scalar };

/// One operand of the contraction as the staging sees it.
struct StagedOperand {
  const char *name, *shared, *registers, *base;
  int extent, indexVar;
  bool unitStrideK;
  int64_t limit;
  ExprRef value;
  Staging staging = Staging::Scalar;
  const Expr *load = nullptr; ///< the load copied or narrowed; null for a scalar operand
  int rows = 0, rowLength = 0; ///< shape of one slice in shared memory, in elements
  /// A copied operand whose index is linear in r, over a reduction that is whole slices: each
  /// run's source and place are computed once, and the source advances by sliceStride
  /// elements per slice requested (the slices are requested in order).
  bool walked = false;
  int64_t sliceStride = 0;
  /// A scalar operand whose runs are strided gathers (set with the run length below).
  std::optional<StridedGather> strided = std::nullopt;
  /// A scalar rhs that is a convolution's window over its input (no strided gather): each of a
  /// thread's columns has its image and window origin computed once a tile, and each element
  /// only its reduction step's channel and tap (32-bit index arithmetic throughout).
  std::optional<DepthwiseWindow> window = std::nullopt;
};

/// The operands' way into shared memory, for both instruction families: which form each takes,
/// where an element of a slice lives (padded k-contiguous rows for mma.sync; 128-byte-swizzled
/// rows for wgmma, `swizzled`), and the code that requests a slice (cp.async copies, and the
/// loads and stores of register-staged operands). Prints into `out`.
class SliceStaging {
public:
  SliceStaging(std::ostringstream &out, CudaPrinter &printer, const Contraction &contraction,
               const MmaFormat &format, const MmaTile &tile, bool swizzled, bool ranged);

  StagedOperand &lhs() { return operands_[0]; }
  StagedOperand &rhs() { return operands_[1]; }
  const StagedOperand &lhs() const { return operands_[0]; }
  const StagedOperand &rhs() const { return operands_[1]; }
  /// "vector along k", "strided gather of 2 steps 64 apart", ... for the header comment.
  std::string describe(const StagedOperand &o) const;
  /// The bytes of one stage of both slices in the swizzled layout, and of its lhs part.
  int64_t stageBytes() const { return stageBytes_; }
  int64_t aBytes() const { return aBytes_; }
  int64_t kTiles() const { return kTiles_; }

  /// The registers of register-staged operands (scalar, narrowed), declared once.
  void declareRegisters();
  /// The walked operands' sources and places, and the window gather's columns, before the
  /// first request (once a tile).
  void walkSetups();
  /// The copies and register loads of the slice at `k` into `stage`.
  void issue(const std::string &stage, const char *k, const std::string &indent);
  /// A whole slice at once: the copies, and the registers' stores right after their loads.
  void request(const std::string &stage, const char *k, const std::string &indent);
  /// Whether the operand goes through registers (stored to the slice after the loads).
  static bool registerStaged(const StagedOperand &o) {
    return o.staging == Staging::Scalar || o.staging == Staging::NarrowedK;
  }
  bool anyRegisterStaged() const { return registerStaged(operands_[0]) || registerStaged(operands_[1]); }
  /// The register-staged operand's store into `stage`.
  void storeStaged(const StagedOperand &o, const std::string &stage, const std::string &indent);

private:
  int runLength(const StagedOperand &o) const;
  std::string place(const StagedOperand &o, const std::string &stage, const std::string &row,
                    const std::string &column) const;
  void runIndex(int runs, const std::string &indent);
  int vectorRunCount(const StagedOperand &o) const { return o.extent * tile_.bk / run_; }
  int vectorRuns(const StagedOperand &o) const { return int(ceilDiv(vectorRunCount(o), threads_)); }
  void runPositionK(const StagedOperand &o, const std::string &indent);
  int64_t stageStride(const StagedOperand &o) const;
  static bool ragged(const StagedOperand &o) { return o.limit % o.extent != 0; }
  void vectorPosition(const StagedOperand &o, const std::string &indent);
  void walkSetup(const StagedOperand &o);
  void issueVector(const StagedOperand &o, const std::string &stage, const char *k, const std::string &indent);
  int scalarRunCount(const StagedOperand &o) const { return o.extent * tile_.bk / runLength(o); }
  int scalarRuns(const StagedOperand &o) const { return int(ceilDiv(scalarRunCount(o), threads_)); }
  bool readsBits(const StagedOperand &o) const;
  void runPosition(const StagedOperand &o, const std::string &indent);
  void loadStrided(const StagedOperand &o, const char *k, const std::string &indent);
  void windowSetup(const StagedOperand &o);
  void loadWindow(const StagedOperand &o, const char *k, const std::string &indent);
  void loadScalar(const StagedOperand &o, const char *k, const std::string &indent);
  void storeScalar(const StagedOperand &o, const std::string &stage, const std::string &indent);
  void loadNarrowed(const StagedOperand &o, const char *k, const std::string &indent);
  void storeNarrowed(const StagedOperand &o, const std::string &stage, const std::string &indent);
  static std::string v(int id) { return "v" + std::to_string(id); }

  std::ostringstream &out_;
  CudaPrinter &printer_;
  const ContractionSpec &spec_;
  const MmaFormat &format_;
  const MmaTile tile_;
  const bool swizzled_, ranged_;
  const int threads_, run_;
  const char *toHalf_;
  const int64_t aBytes_, stageBytes_, kTiles_;
  StagedOperand operands_[2];
};

/// The mma.sync main loop over the ring of kStages padded slices (cuda_mma_sync.cpp): each warp
/// multiplies its mTiles x nTiles 16x8 tiles into acc.
void printMmaSyncLoop(std::ostringstream &out, SliceStaging &staging, const MmaFormat &format, const MmaTile &tile,
                      int mTiles, int nTiles);

/// The wgmma main loop over the ring of kWgmmaStages swizzled slices (cuda_wgmma.cpp); with
/// `ranged` over the slices kBegin .. kEnd - 1 of the tile (a stream-K launch's).
void printWgmmaLoop(std::ostringstream &out, SliceStaging &staging, const MmaFormat &format, const MmaTile &tile,
                    bool ranged);

} // namespace sinter::codegen::cuda
