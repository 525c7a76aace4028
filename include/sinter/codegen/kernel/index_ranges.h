// Interval analysis of a kernel's integer expressions, so backends can compute indices in 32-bit
// arithmetic where every intermediate value provably fits (64-bit division and multiplication
// cost several 32-bit instructions on a GPU). Kernel IR computes all indices in i64; ranges come
// from the parallel extent, loop extents, constants, and the values assigned to variables.
#pragma once

#include "sinter/codegen/kernel/kernel_ir.h"

#include <map>
#include <optional>
#include <set>
#include <utility>

namespace sinter::codegen {

struct IndexRange {
  int64_t lo, hi; ///< inclusive
};

class IndexRanges {
public:
  /// gid is in [0, parallelExtent); a loop variable in [0, extent); an assigned variable in the
  /// union of the ranges of the values assigned to it (unknown if any is unknown or recursive).
  explicit IndexRanges(const Kernel &kernel);

  /// Overrides what the kernel's body says (for generated code that assigns variables itself).
  void setVariable(int id, IndexRange range);

  /// The range of an integer expression, when known.
  std::optional<IndexRange> of(const ExprRef &e);

  /// Whether e is an i64 expression that can be computed in 32-bit arithmetic: e and every
  /// integer subexpression it is computed from lie in [-2^31, 2^31).
  bool fits32(const ExprRef &e);

  /// `e` with the divisions and remainders by positive constants that the ranges decide taken
  /// out: with a dividend that is a sum of multiples of n (the sum of the rest in [0, n), the
  /// multiples' sum non-negative), div(..., n) is the multiples divided by n and rem(..., n) is
  /// the rest; div(div(x, a), b) is div(x, a * b) for x >= 0. A flattened index reshaped and
  /// transposed back (attention's heads) comes out affine in the variables it was built from.
  ExprRef simplify(const ExprRef &e);
  /// `statement` (and the statements inside it) with every expression simplified.
  StmtRef simplify(const StmtRef &statement);

private:
  std::optional<IndexRange> variable(int id);
  void collect(const std::vector<StmtRef> &statements);
  ExprRef simplifyNode(const ExprRef &e);

  std::map<int, std::vector<ExprRef>> assigned_; ///< variable -> values assigned to it
  std::map<int, std::vector<ExprRef>> loops_;    ///< variable -> extents of loops over it
  std::map<int, std::optional<IndexRange>> variables_;
  std::set<int> inProgress_;
  // Keyed by address; each entry holds its expression so the address cannot be reused.
  std::map<const Expr *, std::pair<ExprRef, std::optional<IndexRange>>> memo_;
  std::map<const Expr *, std::pair<ExprRef, bool>> fits_;
  std::map<const Expr *, std::pair<ExprRef, ExprRef>> simplified_;
};

/// `kernel` with its body's index arithmetic simplified over the ranges its own body gives
/// (IndexRanges::simplify): what a backend that does not print ranges itself (the CPU's LLVM IR)
/// runs, so a flattened index reshaped back costs no division per element.
Kernel withSimplifiedIndices(const Kernel &kernel);

} // namespace sinter::codegen
