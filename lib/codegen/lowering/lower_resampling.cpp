// Lowering of GridSample as a kernel rule, with the semantics of lib/reference/resize.cpp: X
// [N, C, D1..Dr] sampled at grid [N, G1..Gr, r] (x first in the last dim). One parallel index per
// output element computes, per spatial dim, the source coordinate (padding "border" clamps and
// "reflection" reflects it into range) and its taps: 1 (nearest, half to even), 2 (linear) or 4
// (cubic, Keys a = -0.75), each an input index and a weight held in locals. The output is the sum
// over every combination of taps of the product of weights times the input there; a tap outside
// the input weighs 0 with padding "zeros", and a term whose weight is 0 is skipped, as the
// reference skips it (so an infinity there does not become NaN).
#include "lowering_rules.h"

#include "sinter/support/error.h"

namespace sinter::codegen {
namespace {

struct Sampler {
  const RuleContext &ctx;
  DType type;
  std::string padding;

  ExprRef number(double value) const { return typedConstant(type, value); }
  ExprRef op(BinaryOp o, ExprRef a, ExprRef b) const { return binary(o, std::move(a), std::move(b)); }

  /// x reflected into [low, high] (folding back and forth), as reflectInto in the reference.
  ExprRef reflect(ExprRef x, double low, double high) const {
    double range = high - low;
    if (range <= 0)
      return number(low);
    auto fold = [&](ExprRef distance, double near, double far) {
      ExprRef folds = unary(UnaryOp::Trunc, op(BinaryOp::Div, distance, number(range)));
      ExprRef rest = op(BinaryOp::Sub, distance, op(BinaryOp::Mul, folds, number(range)));
      ExprRef even = op(BinaryOp::Eq, rem(cast(folds, DType::Int64), 2), intConstant(0));
      ExprRef towardFar = near < far ? op(BinaryOp::Add, number(near), rest) : op(BinaryOp::Sub, number(near), rest);
      ExprRef towardNear = near < far ? op(BinaryOp::Sub, number(far), rest) : op(BinaryOp::Add, number(far), rest);
      return select(even, towardFar, towardNear);
    };
    ExprRef below = fold(op(BinaryOp::Sub, number(low), x), low, high);
    ExprRef above = fold(op(BinaryOp::Sub, x, number(high)), high, low);
    return select(op(BinaryOp::Lt, x, number(low)), below,
                  select(op(BinaryOp::Gt, x, number(high)), above, x));
  }

  /// The input index for integer coordinate `c` along a dim of `size`, clamped in range, and
  /// whether it is inside (always true unless padding is "zeros").
  std::pair<ExprRef, ExprRef> neighbour(ExprRef c, int64_t size, double low, double high) const {
    ExprRef inside = op(BinaryOp::LogicalAnd, op(BinaryOp::Ge, c, intConstant(0)), op(BinaryOp::Lt, c, intConstant(size)));
    auto clamp = [&](ExprRef i) {
      return op(BinaryOp::Min, op(BinaryOp::Max, i, intConstant(0)), intConstant(size - 1));
    };
    if (padding == "zeros")
      return {clamp(c), inside};
    if (padding == "border")
      return {clamp(c), boolConstant(true)};
    ExprRef reflected = clamp(cast(reflect(cast(c, type), low, high), DType::Int64));
    return {select(inside, c, reflected), boolConstant(true)};
  }
};

void gridSampleRule(const RuleContext &ctx) {
  const Node &node = ctx.node();
  KernelBuilder &b = ctx.builder();
  std::string mode = node.attrString("mode", "linear");
  if (mode == "bilinear")
    mode = "linear";
  if (mode == "bicubic")
    mode = "cubic";
  if (mode != "nearest" && mode != "linear" && mode != "cubic")
    userError(node.describe(), ": mode '", mode, "' is not nearest, linear or cubic");
  std::string padding = node.attrString("padding_mode", "zeros");
  if (padding != "zeros" && padding != "border" && padding != "reflection")
    userError(node.describe(), ": padding_mode '", padding, "' is not zeros, border or reflection");
  bool alignCorners = node.attrInt("align_corners", 0) != 0;
  std::vector<int64_t> xDims = ctx.inputDims(0), gridDims = ctx.inputDims(1);
  int spatial = int(xDims.size()) - 2;
  if (spatial < 1 || gridDims.size() != xDims.size() || gridDims.back() != spatial || gridDims[0] != xDims[0])
    userError(node.describe(), ": grid must be [N, G1..G", spatial, ", ", spatial, "]");
  DType type = ctx.outputType(0) == DType::Float64 ? DType::Float64 : DType::Float32;
  Sampler sampler{ctx, type, padding};
  std::vector<int64_t> outDims = ctx.outputDims(0);
  std::vector<int64_t> outSpatial(outDims.begin() + 2, outDims.end());

  b.setParallelExtent(productOf(outDims));
  std::vector<ExprRef> at = unravelIndex(b.gid(), outDims);
  ExprRef n = at[0], channel = at[1];
  int taps = mode == "cubic" ? 4 : mode == "linear" ? 2 : 1;
  std::vector<std::vector<int>> indexVar(spatial, std::vector<int>(taps)), weightVar(spatial, std::vector<int>(taps));
  for (int i = 0; i < spatial; ++i) {
    double size = double(xDims[2 + i]);
    double low = alignCorners ? 0.0 : -0.5, high = alignCorners ? size - 1 : size - 0.5;
    std::vector<ExprRef> gridAt = {n};
    gridAt.insert(gridAt.end(), at.begin() + 2, at.end());
    gridAt.push_back(intConstant(spatial - 1 - i));
    ExprRef g = cast(ctx.input(1)(gridAt), type);
    ExprRef one = sampler.number(1);
    ExprRef coordinate = alignCorners
        ? binary(BinaryOp::Mul, binary(BinaryOp::Div, binary(BinaryOp::Add, g, one), sampler.number(2)), sampler.number(size - 1))
        : binary(BinaryOp::Div, binary(BinaryOp::Sub, binary(BinaryOp::Mul, binary(BinaryOp::Add, g, one), sampler.number(size)), one),
                 sampler.number(2));
    if (mode == "nearest")
      coordinate = unary(UnaryOp::RoundEven, coordinate);
    int c = b.addVariable("coord", type);
    b.emit(assign(c, coordinate));
    ExprRef cv = var(c, type);
    if (padding != "zeros") {
      ExprRef outside = binary(BinaryOp::LogicalOr, binary(BinaryOp::Lt, cv, sampler.number(low)),
                               binary(BinaryOp::Gt, cv, sampler.number(high)));
      ExprRef moved = padding == "border"
          ? binary(BinaryOp::Min, binary(BinaryOp::Max, cv, sampler.number(0)), sampler.number(size - 1))
          : sampler.reflect(cv, low, high);
      b.emit(assign(c, select(outside, moved, cv)));
    }
    ExprRef base = mode == "nearest" ? cv : unary(UnaryOp::Floor, cv);
    ExprRef t = binary(BinaryOp::Sub, cv, base);
    std::vector<ExprRef> weights;
    if (mode == "nearest") {
      weights = {one};
    } else if (mode == "linear") {
      weights = {binary(BinaryOp::Sub, one, t), t};
    } else {
      // Keys cubic convolution, a = -0.75, at distances t + 1, t, 1 - t, 2 - t.
      auto number = [&](double v) { return sampler.number(v); };
      auto mul = [&](ExprRef x, ExprRef y) { return binary(BinaryOp::Mul, x, y); };
      auto plus = [&](ExprRef x, ExprRef y) { return binary(BinaryOp::Add, x, y); };
      auto minus = [&](ExprRef x, ExprRef y) { return binary(BinaryOp::Sub, x, y); };
      double a = -0.75;
      auto outer = [&](ExprRef s) { // |s| in [1, 2]
        return minus(mul(plus(mul(minus(mul(number(a), s), number(5 * a)), s), number(8 * a)), s), number(4 * a));
      };
      auto inner = [&](ExprRef s) { // |s| in [0, 1]
        return plus(mul(mul(minus(mul(number(a + 2), s), number(a + 3)), s), s), number(1));
      };
      ExprRef u = minus(one, t);
      weights = {outer(plus(t, one)), inner(t), inner(u), outer(plus(u, one))};
    }
    ExprRef first = cast(base, DType::Int64);
    if (mode == "cubic")
      first = sub(first, intConstant(1));
    for (int k = 0; k < taps; ++k) {
      auto [index, inside] = sampler.neighbour(add(first, k), xDims[2 + i], low, high);
      indexVar[i][k] = b.addVariable("tap", DType::Int64);
      weightVar[i][k] = b.addVariable("weight", type);
      b.emit(assign(indexVar[i][k], index));
      b.emit(assign(weightVar[i][k], select(inside, weights[k], sampler.number(0))));
    }
  }
  int sum = b.addVariable("sum", type), w = b.addVariable("w", type);
  b.emit(assign(sum, sampler.number(0)));
  int64_t combinations = 1;
  for (int i = 0; i < spatial; ++i)
    combinations *= taps;
  for (int64_t combination = 0; combination < combinations; ++combination) {
    std::vector<ExprRef> xAt = {n, channel};
    ExprRef weight;
    int64_t rest = combination;
    std::vector<int> chosen(spatial);
    for (int i = spatial - 1; i >= 0; --i) {
      chosen[i] = int(rest % taps);
      rest /= taps;
    }
    for (int i = 0; i < spatial; ++i) {
      xAt.push_back(var(indexVar[i][chosen[i]], DType::Int64));
      ExprRef factor = var(weightVar[i][chosen[i]], type);
      weight = weight ? binary(BinaryOp::Mul, weight, factor) : factor;
    }
    ExprRef value = cast(ctx.input(0)(xAt), type);
    b.emit(assign(w, weight));
    b.emit(ifThen(binary(BinaryOp::Ne, var(w, type), sampler.number(0)),
                  {assign(sum, binary(BinaryOp::Add, var(sum, type), binary(BinaryOp::Mul, var(w, type), value)))}));
  }
  b.emit(ctx.store(0, b.gid(), cast(var(sum, type), ctx.outputType(0))));
}

} // namespace

void registerSamplingLowering(LoweringTable &table) {
  table.addKernel(OpKind::GridSample, gridSampleRule);
}

} // namespace sinter::codegen
