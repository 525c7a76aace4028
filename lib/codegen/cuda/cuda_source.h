// Prints kernel IR as CUDA C: one `extern "C" __global__` function per kernel, a grid-stride
// loop over the kernel's parallel index, and calls to the overloaded helpers of the prelude for
// math whose semantics must match the reference (NaN-propagating min/max, round-half-even, ...).
#pragma once

#include "sinter/codegen/kernel/index_ranges.h"
#include "sinter/codegen/kernel/kernel_ir.h"

#include <map>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

namespace sinter::codegen::cuda {

/// Helpers every generated translation unit starts with (no #include: NVRTC needs no headers).
const std::string &cudaPrelude();

/// Which row elements a warp-per-point kernel's lanes hold in registers (cuda_warp_kernel.cpp).
struct RowPlan;

/// Prints kernel IR as CUDA C: variable i is `vi`, buffer i is `bi`. Generators of specialised
/// kernels (cuda_contraction.cpp) print their loop skeleton themselves and the expressions and
/// statements they take from lowering through this.
class CudaPrinter {
public:
  /// With ranges, i64 index arithmetic whose every intermediate fits 32 bits is printed in int.
  void setRanges(IndexRanges *ranges) { ranges_ = ranges; }
  IndexRanges *ranges() const { return ranges_; }
  std::string expr(const ExprRef &e);
  /// The texts of expressions that go into one line of code, and the definitions to print before
  /// that line: each node the expressions share (reached more than once among them) becomes a
  /// local `const auto sN = ...;` at `pad`, so an expression DAG prints in text linear in its
  /// distinct nodes. (Index DAGs of composed reshapes and transposes, a channel shuffle's, unfold
  /// to trees exponential in their depth.) Nodes that only run under a branch of a select or a
  /// short-circuit operator are hoisted only when evaluating them anyway is harmless (no load,
  /// no division by a non-constant); with `guarded`, the line evaluates the expressions only
  /// under a condition of its own, and that holds for every node.
  struct Line {
    std::string definitions;
    std::vector<std::string> texts;
  };
  Line line(const std::vector<ExprRef> &roots, const std::string &pad, bool guarded = false);
  /// `e` with `load` (a Load node inside it) printed as `text`: a value the caller has already
  /// read, as from registers or shared memory.
  std::string exprReading(const ExprRef &e, const Expr *load, const std::string &text);
  /// Statements at an indentation depth (two spaces per level), each line ending in a newline.
  std::string statements(const std::vector<StmtRef> &list, int depth);
  /// `extern "C" __global__ void __launch_bounds__(blockSize[, minBlocksPerSm]) name(params) {`
  /// and a comment naming the buffers: one parameter per buffer (b0, b1, ...), then
  /// `extraParameters` (the backend's own, e.g. a workspace). minBlocksPerSm > 1 caps the
  /// registers per thread so that many blocks fit on an SM at once.
  static std::string signature(const Kernel &kernel, int blockSize, int minBlocksPerSm = 1,
                               const std::string &extraParameters = "");
  /// Declarations of the kernel's variables except gid, zero-initialised.
  static std::string locals(const Kernel &kernel, int depth);
  /// The whole kernel: a grid-stride loop over the parallel index around the body; with
  /// warpPerPoint(kernel), each point of the index is a warp's, which shares out the top-level
  /// Parallel and Reduction loops among its lanes.
  std::string kernelFunction(const Kernel &kernel, int blockSize);

private:
  std::string unaryExpr(const ExprRef &e);
  std::string binaryExpr(const ExprRef &e);
  std::string castExpr(const ExprRef &e);
  std::string bitcastExpr(const ExprRef &e);
  static std::string fromFloat(const std::string &floatText, DType to);
  void stmts(const std::vector<StmtRef> &list, int depth);
  void stmt(const Stmt &s, int depth);
  /// The body of a warp-per-point kernel: its grid-stride loop over warps, the locals and the
  /// statements (cuda_warp_kernel.cpp).
  std::string warpKernelBody(const Kernel &kernel);
  /// A top-level statement of a warp-per-point kernel; `rows` is the kernel's row plan.
  void warpStmt(const Stmt &s, int depth, const RowPlan &rows);
  /// A top-level loop of a warp-per-point kernel that walks the row plan's lane mapping.
  void rowLoop(const Stmt &s, int depth, const RowPlan &rows);
  /// The 32-bit form of an expression for which ranges_->fits32 holds.
  std::string narrow(const ExprRef &e);
  bool narrowable(const ExprRef &e) { return ranges_ && ranges_->fits32(e); }
  /// For a remainder by a constant n that the ranges show to be one of its dividend's terms (a
  /// dividend in [0, n), or a non-negative multiple of n plus a term in [0, n)): that term.
  const ExprRef *remainderTerm(const ExprRef &e);

  IndexRanges *ranges_ = nullptr;
  std::ostringstream out_;
  /// Nodes printed by name while line() prints one line: the local's name, and whether it holds
  /// the node's 32-bit form (narrow()).
  struct Named {
    std::string name;
    bool narrow;
  };
  std::unordered_map<const Expr *, Named> named_;
  int nextName_ = 0;
  /// Text printed in place of particular Load nodes (a row element a warp holds in registers).
  std::map<const Expr *, std::string> loadText_;
  /// Stores printed as assignments to this text instead (row elements gathered for one vector
  /// store).
  std::map<const Stmt *, std::string> storeTarget_;
};

/// The CUDA C of one kernel; `blockSize` is its __launch_bounds__.
std::string printCudaKernel(const Kernel &kernel, int blockSize);

/// Whether a warp works on each point of the kernel's parallel index rather than a thread: when
/// the body has a top-level Parallel or Reduction loop of at least a warp's length, and no other
/// top-level statement stores inside a loop or branch (those would run once per lane).
bool warpPerPoint(const Kernel &kernel);
/// Points of the parallel index a thread of the grid-stride kernel computes, `stride` apart (the
/// grid's threads): 4 for a large loop-free body (an elementwise kernel), so that each thread has
/// four independent loads in flight; 1 otherwise. A thread a point of 16-bit elements kept about
/// 0.5 MB of loads in flight on an H200, a quarter of what its memory's bandwidth needs.
int pointsPerThread(const Kernel &kernel);
/// Threads the launch needs for the kernel: parallelExtent / pointsPerThread, or parallelExtent
/// times 32 when warpPerPoint.
int64_t threadsNeeded(const Kernel &kernel);

/// The CUDA C of binary op `op` on operand texts `a` and `b`: infix, or a prelude helper where
/// the reference's semantics need one (sn_min, sn_max, sn_rem, ...).
std::string binaryText(BinaryOp op, const std::string &a, const std::string &b);

/// The C type a buffer of this dtype is declared with ("float", "unsigned short" for f16, ...).
const char *cudaStorageType(DType type);

} // namespace sinter::codegen::cuda
