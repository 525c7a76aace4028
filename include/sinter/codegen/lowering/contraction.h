// Contractions: MatMul, Gemm and Conv described as one batched matrix product, so each backend
// can generate its own tiled, blocked or packed kernel for them from one description:
//
//   for b < batch, i < m, j < n:   acc = sum over r < k of lhs(b, i, r) * rhs(b, r, j)
//                                  epilogue(b, i, j, acc)   (stores the output element(s))
//
// `lhs`, `rhs` and the epilogue are kernel-IR expressions and statements over the variables
// b, i, j, r and acc of `kernel` (which holds the buffers: the group's inputs, then outputs).
// lhs and rhs read through the group's accessors, so they may be any index remapping: a
// convolution is an implicit GEMM whose rhs gathers the input window (zero outside the padding)
// with no im2col buffer. Every read is in bounds for b, i, j, r inside their extents.
//
// The naive lowering (one parallel index per output element, a sequential loop over r) is built
// from the same description (naiveContractionKernel), so the portable path and every tiled path
// compute the same expression.
#pragma once

#include "sinter/codegen/kernel/index_ranges.h"
#include "sinter/codegen/kernel/kernel_ir.h"
#include "sinter/codegen/lowering/lowering.h"
#include "sinter/ir/op_attributes.h"

#include <optional>

namespace sinter::codegen {

/// A convolution's rhs as a window over its input X, for a backend that packs windows through
/// small tables instead of evaluating `rhs` element by element. With image = j / positions and
/// position = j % positions:
///   at_d   = base_d(position) + displacement_d(r)              (one per spatial dim d)
///   rhs    = every 0 <= at_d < extent_d
///            ? X[image * imageStride + b * groupStride + channelOffset(r) + sum_d at_d * stride_d]
///            : 0
/// `base` reads spec.j as the position (0 <= j < positions); `displacement` and `channelOffset`
/// read spec.r. It restates what `rhs` computes when X (the buffer `rhs` loads) is read directly,
/// with no prologue; a backend using it checks that against `rhs`.
///
/// `geometry` is the convolution's window as attributes: position o (row-major over
/// geometry.output) has base_d = o_d * strides_d - padBegin_d, and r's window element e (row-major
/// over geometry.kernel) has displacement_d = e_d * dilations_d; r's channel is channelOffset(r)
/// / the plane. A backend with a direct kernel for a shape (depthwise) reads these instead of the
/// tables, and checks them against base and displacement.
struct ConvolutionWindow {
  int64_t positions = 1, imageStride = 0, groupStride = 0;
  ExprRef channelOffset;
  std::vector<ExprRef> base, displacement;
  std::vector<int64_t> extent, stride;
  WindowGeometry geometry;
};

struct ContractionSpec {
  int64_t batch = 1, m = 1, n = 1, k = 1;
  int b = -1, i = -1, j = -1, r = -1; ///< i64 variables of the kernel
  int acc = -1;                       ///< the accumulator variable, of `type`
  DType type = DType::Float32;        ///< accumulation and compute type
  ExprRef lhs, rhs;                   ///< lhs(b, i, r), rhs(b, r, j), of `type`
  /// Hints for a tiled load order: consecutive r are adjacent in memory for lhs / rhs (else
  /// consecutive i, respectively j, are the cheaper direction).
  bool lhsUnitStrideK = true, rhsUnitStrideK = false;
  /// Set for a convolution: its rhs as a window (see ConvolutionWindow).
  std::optional<ConvolutionWindow> window;
  /// Stores the output element(s) for (b, i, j) from acc: bias, scale and the output's index.
  std::vector<StmtRef> epilogue;
  /// Operation counts for the manifest: 2 * batch * m * n * k multiply-adds.
  int64_t flops() const { return 2 * batch * m * n * k; }
};

struct Contraction {
  Kernel kernel; ///< buffers and variables; its body is empty (a backend writes the loops)
  ContractionSpec spec;
};

/// Whether the node is a contraction lowerContraction describes (MatMul, Gemm, Conv).
bool isContraction(const Node &node);

/// The contraction of a group made of one contraction node; nullopt for any other group.
std::optional<Contraction> lowerContraction(const KernelGroup &group);

/// Tells `ranges` the extents of the contraction's b, i, j and r: the tiled kernels evaluate
/// lhs, rhs and the epilogue only inside them, so index arithmetic may be simplified over them
/// (and printed in int where it fits).
void setContractionRanges(IndexRanges &ranges, const ContractionSpec &spec);

/// `contraction` with the index arithmetic of lhs, rhs and the epilogue simplified over those
/// extents (IndexRanges::simplify): a bias read as bias[(i * n + j) % n] becomes bias[j].
Contraction withSimplifiedIndices(const Contraction &contraction);

/// Whether a tiled kernel pays off: the matrix is large enough in every direction that tiles
/// are mostly full. Depthwise convolutions (m = 1 per group) and matrix-vector products are not.
bool worthTiling(const ContractionSpec &spec);

} // namespace sinter::codegen
