// Lowering of resampling: Resize as an injective rule (below), and GridSample as a kernel rule,
// with the semantics of lib/reference/resampling.cpp: X
// [N, C, D1..Dr] sampled at grid [N, G1..Gr, r] (x first in the last dim). One parallel index per
// output element computes, per spatial dim, the source coordinate (padding "border" clamps and
// "reflection" reflects it into range) and its taps: 1 (nearest, half to even), 2 (linear) or 4
// (cubic, Keys a = -0.75), each an input index and a weight held in locals. The output is the sum
// over every combination of taps of the product of weights times the input there; a tap outside
// the input weighs 0 with padding "zeros", and a term whose weight is 0 is skipped, as the
// reference skips it (so an infinity there does not become NaN).
#include "lowering_rules.h"

#include "sinter/ir/op_attributes.h"

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

/// Resize in nearest and linear modes (cubic is not lowered yet).
ExprRef resizeRule(const RuleContext &ctx, int, const std::vector<ExprRef> &index) {
  const Node &node = ctx.node();
  std::vector<int64_t> inDims = ctx.inputDims(0), outDims = ctx.outputDims(0);
  const ResizeAttributes attributes = resizeAttributes(node);
  const std::string &transform = attributes.coordinateMode, &nearestMode = attributes.nearestMode;
  if (attributes.mode == ResizeMode::Cubic)
    userError(node.describe(), ": Resize mode 'cubic' cannot be compiled yet");
  if (attributes.antialias || transform == "tf_crop_and_resize")
    userError(node.describe(), ": Resize with antialias or tf_crop_and_resize cannot be compiled yet");
  // Scales: from the scales input when given, else out/in (what sizes implies).
  std::vector<double> scales(inDims.size(), 1.0);
  const Value *scalesInput = node.input(2);
  std::vector<int64_t> axes = node.attrInts("axes");
  if (scalesInput && scalesInput->isConstant() && scalesInput->constant().elementCount() > 0) {
    const Tensor &t = scalesInput->constant();
    if (axes.empty())
      for (int64_t i = 0; i < t.elementCount(); ++i)
        scales[i] = t.getDouble(i);
    else
      for (size_t i = 0; i < axes.size(); ++i)
        scales[normalizedAxis(ctx.node(), axes[i], int64_t(inDims.size()))] = t.getDouble(int64_t(i));
  } else {
    for (size_t i = 0; i < inDims.size(); ++i)
      scales[i] = inDims[i] ? double(outDims[i]) / double(inDims[i]) : 1.0;
  }
  auto f32 = [](double v) { return constant(DType::Float32, v); };
  auto fop = [](BinaryOp op, ExprRef a, ExprRef b) { return binary(op, a, b); };

  // Source coordinate (float) per axis.
  std::vector<ExprRef> source(inDims.size());
  for (size_t i = 0; i < inDims.size(); ++i) {
    ExprRef x = cast(index[i], DType::Float32);
    double scale = scales[i];
    if (inDims[i] == outDims[i] && scale == 1.0) {
      source[i] = x;
      continue;
    }
    // The fractional output width, as ONNX's reference (lib/reference/resampling.cpp) uses it: with
    // scales that do not give whole elements it differs from the output dim.
    double outputWidth = scale * double(inDims[i]);
    if (transform == "asymmetric")
      source[i] = fop(BinaryOp::Div, x, f32(scale));
    else if (transform == "align_corners")
      source[i] = outputWidth == 1 ? f32(0)
                                   : fop(BinaryOp::Mul, x, f32(double(inDims[i] - 1) / (outputWidth - 1)));
    else if (transform == "pytorch_half_pixel" && outputWidth == 1)
      source[i] = f32(0);
    else if (transform == "half_pixel_symmetric") {
      double adjustment = double(outDims[i]) / (scale * double(inDims[i]));
      double center = double(inDims[i]) / 2.0;
      double offset = center * (1 - adjustment);
      source[i] = fop(BinaryOp::Sub, fop(BinaryOp::Add, f32(offset), fop(BinaryOp::Div, fop(BinaryOp::Add, x, f32(0.5)), f32(scale))), f32(0.5));
    } else // half_pixel, pytorch_half_pixel
      source[i] = fop(BinaryOp::Sub, fop(BinaryOp::Div, fop(BinaryOp::Add, x, f32(0.5)), f32(scale)), f32(0.5));
  }

  if (attributes.mode == ResizeMode::Nearest) {
    std::vector<ExprRef> inIndex(inDims.size());
    for (size_t i = 0; i < inDims.size(); ++i) {
      ExprRef s = source[i];
      ExprRef rounded;
      if (nearestMode == "floor")
        rounded = unary(UnaryOp::Floor, s);
      else if (nearestMode == "ceil")
        rounded = unary(UnaryOp::Ceil, s);
      else if (nearestMode == "round_prefer_ceil")
        rounded = unary(UnaryOp::Floor, fop(BinaryOp::Add, s, f32(0.5)));
      else // round_prefer_floor: halves go down
        rounded = unary(UnaryOp::Ceil, fop(BinaryOp::Sub, s, f32(0.5)));
      inIndex[i] = clampIndex(cast(rounded, DType::Int64), inDims[i]);
    }
    return ctx.input(0)(inIndex);
  }
  // Linear: a weighted sum over the 2^k corners of the axes that resize.
  std::vector<size_t> resized;
  std::vector<ExprRef> low(inDims.size()), high(inDims.size()), weight(inDims.size());
  std::vector<ExprRef> base(inDims.size());
  for (size_t i = 0; i < inDims.size(); ++i) {
    if (source[i] == nullptr || (inDims[i] == outDims[i] && scales[i] == 1.0)) {
      base[i] = index[i];
      continue;
    }
    ExprRef s = fop(BinaryOp::Max, source[i], f32(0));
    ExprRef floor = unary(UnaryOp::Floor, s);
    low[i] = clampIndex(cast(floor, DType::Int64), inDims[i]);
    high[i] = clampIndex(add(cast(floor, DType::Int64), 1), inDims[i]);
    weight[i] = fop(BinaryOp::Min, fop(BinaryOp::Sub, s, floor), f32(1));
    resized.push_back(i);
  }
  ExprRef total;
  for (int corner = 0; corner < (1 << resized.size()); ++corner) {
    std::vector<ExprRef> at = base;
    ExprRef w = f32(1);
    for (size_t r = 0; r < resized.size(); ++r) {
      size_t axis = resized[r];
      bool up = (corner >> r) & 1;
      at[axis] = up ? high[axis] : low[axis];
      w = fop(BinaryOp::Mul, w, up ? weight[axis] : fop(BinaryOp::Sub, f32(1), weight[axis]));
    }
    ExprRef term = fop(BinaryOp::Mul, cast(ctx.input(0)(at), DType::Float32), w);
    total = total ? fop(BinaryOp::Add, total, term) : term;
  }
  return cast(total, ctx.outputType(0));
}

} // namespace

void registerResamplingLowering(LoweringTable &table) {
  table.addKernel(OpKind::GridSample, gridSampleRule);
  table.addInjective(OpKind::Resize, resizeRule);
}

} // namespace sinter::codegen
