// Lowering of Col2Im, DeformConv, RoiAlign and MaxUnpool (semantics in lib/reference/col2im.cpp,
// deform_conv.cpp, roi_align.cpp and max_unpool.cpp): one parallel index per output element,
// except MaxUnpool, a serial scatter.
//   Col2Im      gathers, for its image element, every (block offset, block position) pair that
//               covers it (position = (pixel + pad - offset * dilation) / stride, when whole and
//               in range) and sums those input values.
//   DeformConv  sums, over its group's input channels and the kernel taps, the weight times the
//               mask times the input sampled bilinearly at the offset tap (zero outside).
//   RoiAlign    computes its region's bin from the rois input and walks the bin's sample grid
//               (whose size may depend on the region, so the loops' extents are data).
//   MaxUnpool   zeroes the output, then writes each input at its index (one thread: indices
//               may repeat, and the last write wins, as in the reference).
#include "lowering_rules.h"

#include "sinter/support/error.h"

namespace sinter::codegen {
namespace {

std::vector<int64_t> constantInts(const RuleContext &ctx, int input, const char *what) {
  const Value *value = ctx.node().input(input);
  if (!value->isConstant())
    userError(ctx.node().describe(), ": ", what, " must be a constant to generate code");
  return value->constant().toInts();
}

void col2imRule(const RuleContext &ctx) {
  const Node &node = ctx.node();
  KernelBuilder &b = ctx.builder();
  std::vector<int64_t> image = constantInts(ctx, 1, "image_shape"), block = constantInts(ctx, 2, "block_shape");
  size_t n = image.size();
  std::vector<int64_t> dilations = node.attrInts("dilations", std::vector<int64_t>(n, 1));
  std::vector<int64_t> strides = node.attrInts("strides", std::vector<int64_t>(n, 1));
  std::vector<int64_t> pads = node.attrInts("pads", std::vector<int64_t>(2 * n, 0));
  std::vector<int64_t> in = ctx.inputDims(0), out = ctx.outputDims(0);
  std::vector<int64_t> sweep(n);
  for (size_t d = 0; d < n; ++d)
    sweep[d] = (image[d] + pads[d] + pads[d + n] - dilations[d] * (block[d] - 1) - 1) / strides[d] + 1;
  int64_t blockSize = productOf(block);
  DType type = ctx.outputType(0);
  b.setParallelExtent(productOf(out));
  std::vector<ExprRef> index = unravelIndex(b.gid(), out);
  int r = b.addVariable("r", DType::Int64), sum = b.addVariable("sum", type);
  std::vector<ExprRef> offset = unravelIndex(var(r, DType::Int64), block);
  ExprRef covers = boolConstant(true);
  std::vector<ExprRef> position;
  for (size_t d = 0; d < n; ++d) {
    ExprRef shifted = sub(add(index[2 + d], intConstant(pads[d])), mul(offset[d], dilations[d]));
    covers = binary(BinaryOp::LogicalAnd, covers, binary(BinaryOp::Ge, shifted, intConstant(0)));
    covers = binary(BinaryOp::LogicalAnd, covers, binary(BinaryOp::Eq, rem(shifted, strides[d]), intConstant(0)));
    covers = binary(BinaryOp::LogicalAnd, covers, binary(BinaryOp::Lt, shifted, intConstant(sweep[d] * strides[d])));
    ExprRef clamped = binary(BinaryOp::Min, binary(BinaryOp::Max, shifted, intConstant(0)), intConstant(sweep[d] * strides[d] - 1));
    position.push_back(div(clamped, strides[d]));
  }
  ExprRef row = add(mul(index[1], blockSize), var(r, DType::Int64));
  ExprRef value = ctx.input(0)({index[0], row, ravelIndex(position, sweep)});
  b.emit(assign(sum, typedConstant(type, 0)));
  b.emit(forLoop(r, intConstant(blockSize), {ifThen(covers, {assign(sum, binary(BinaryOp::Add, var(sum, type), value))})}));
  b.emit(ctx.store(0, b.gid(), var(sum, type)));
}

void deformConvRule(const RuleContext &ctx) {
  const Node &node = ctx.node();
  KernelBuilder &b = ctx.builder();
  std::vector<int64_t> x = ctx.inputDims(0), w = ctx.inputDims(1), out = ctx.outputDims(0);
  if (x.size() != 4)
    userError(node.describe(), ": only 2-D DeformConv (4-D X) has code generation");
  int64_t channels = x[1], height = x[2], width = x[3], perGroup = w[1], kw = w[3], taps = w[2] * w[3];
  int64_t group = node.attrInt("group", 1), offsetGroup = node.attrInt("offset_group", 1);
  std::vector<int64_t> strides = node.attrInts("strides", {1, 1}), dilations = node.attrInts("dilations", {1, 1});
  std::vector<int64_t> pads = node.attrInts("pads", {0, 0, 0, 0});
  int64_t outPerGroup = out[1] / group, channelsPerOffsetGroup = channels / offsetGroup;
  DType type = ctx.outputType(0);
  b.setParallelExtent(productOf(out));
  std::vector<ExprRef> index = unravelIndex(b.gid(), out);
  ExprRef n = index[0], o = index[1], i = index[2], j = index[3];
  int ci = b.addVariable("ci", DType::Int64), k = b.addVariable("k", DType::Int64), sum = b.addVariable("sum", type);
  ExprRef civ = var(ci, DType::Int64), kv = var(k, DType::Int64);
  ExprRef c = add(mul(div(o, outPerGroup), perGroup), civ);
  ExprRef g = div(c, channelsPerOffsetGroup);
  ExprRef offsetChannel = mul(add(mul(g, taps), kv), 2);
  int yv = b.addVariable("y", type), xv = b.addVariable("x", type);
  ExprRef y = var(yv, type), xp = var(xv, type);
  auto t = [&](double value) { return typedConstant(type, value); };
  auto tapPosition = [&](ExprRef outIndex, int64_t stride, int64_t pad, ExprRef tap, int64_t dilation) {
    return cast(add(sub(mul(outIndex, stride), intConstant(pad)), mul(tap, dilation)), type);
  };
  std::vector<StmtRef> body = {
      assign(yv, binary(BinaryOp::Add, tapPosition(i, strides[0], pads[0], div(kv, kw), dilations[0]),
                        ctx.input(2)({n, offsetChannel, i, j}))),
      assign(xv, binary(BinaryOp::Add, tapPosition(j, strides[1], pads[1], rem(kv, kw), dilations[1]),
                        ctx.input(2)({n, add(offsetChannel, intConstant(1)), i, j})))};
  // Taps wholly outside the image (and NaN offsets) read zeros; inside, the four neighbours.
  ExprRef inside = binary(BinaryOp::LogicalAnd,
                          binary(BinaryOp::LogicalAnd, binary(BinaryOp::Gt, y, t(-1)), binary(BinaryOp::Lt, y, t(double(height)))),
                          binary(BinaryOp::LogicalAnd, binary(BinaryOp::Gt, xp, t(-1)), binary(BinaryOp::Lt, xp, t(double(width)))));
  int y0v = b.addVariable("y0", type), x0v = b.addVariable("x0", type);
  ExprRef y0 = var(y0v, type), x0 = var(x0v, type);
  ExprRef fy = binary(BinaryOp::Sub, y, y0), fx = binary(BinaryOp::Sub, xp, x0);
  ExprRef r0 = cast(y0, DType::Int64), s0 = cast(x0, DType::Int64);
  auto pixel = [&](ExprRef row, ExprRef column) {
    ExprRef ok = binary(BinaryOp::LogicalAnd,
                        binary(BinaryOp::LogicalAnd, binary(BinaryOp::Ge, row, intConstant(0)), binary(BinaryOp::Lt, row, intConstant(height))),
                        binary(BinaryOp::LogicalAnd, binary(BinaryOp::Ge, column, intConstant(0)), binary(BinaryOp::Lt, column, intConstant(width))));
    auto clampTo = [](ExprRef v, int64_t limit) {
      return binary(BinaryOp::Min, binary(BinaryOp::Max, v, intConstant(0)), intConstant(limit - 1));
    };
    return select(ok, ctx.input(0)({n, c, clampTo(row, height), clampTo(column, width)}), t(0));
  };
  auto lerp = [&](ExprRef a, ExprRef bb, ExprRef f) {
    return binary(BinaryOp::Add, binary(BinaryOp::Mul, binary(BinaryOp::Sub, t(1), f), a), binary(BinaryOp::Mul, f, bb));
  };
  ExprRef sample = lerp(lerp(pixel(r0, s0), pixel(r0, add(s0, 1)), fx),
                        lerp(pixel(add(r0, 1), s0), pixel(add(r0, 1), add(s0, 1)), fx), fy);
  if (ctx.hasInput(4))
    sample = binary(BinaryOp::Mul, sample, ctx.input(4)({n, add(mul(g, taps), kv), i, j}));
  ExprRef weight = ctx.input(1)({o, civ, div(kv, kw), rem(kv, kw)});
  body.push_back(ifThen(inside, {assign(y0v, unary(UnaryOp::Floor, y)), assign(x0v, unary(UnaryOp::Floor, xp)),
                                 assign(sum, binary(BinaryOp::Add, var(sum, type), binary(BinaryOp::Mul, weight, sample)))}));
  b.emit(assign(sum, ctx.hasInput(3) ? ctx.input(3)({o}) : t(0)));
  b.emit(forLoop(ci, intConstant(perGroup), {forLoop(k, intConstant(taps), body)}));
  b.emit(ctx.store(0, b.gid(), var(sum, type)));
}

void roiAlignRule(const RuleContext &ctx) {
  const Node &node = ctx.node();
  KernelBuilder &b = ctx.builder();
  std::vector<int64_t> x = ctx.inputDims(0), out = ctx.outputDims(0);
  int64_t batch = x[0], height = x[2], width = x[3], outH = out[2], outW = out[3];
  int64_t ratio = node.attrInt("sampling_ratio", 0);
  double scale = node.attrFloat("spatial_scale", 1.0f);
  bool halfPixel = node.attrString("coordinate_transformation_mode", "half_pixel") == "half_pixel";
  bool maxMode = node.attrString("mode", "avg") == "max";
  DType type = ctx.outputType(0), i64 = DType::Int64;
  auto t = [&](double value) { return typedConstant(type, value); };
  auto op = [](BinaryOp o, ExprRef a, ExprRef c) { return binary(o, a, c); };
  b.setParallelExtent(productOf(out));
  std::vector<ExprRef> index = unravelIndex(b.gid(), out);
  ExprRef roi = index[0], channel = index[1], ph = index[2], pw = index[3];
  auto let = [&](const char *name, ExprRef value) {
    DType valueType = value->type;
    int v = b.addVariable(name, valueType);
    b.emit(assign(v, std::move(value)));
    return var(v, valueType);
  };
  auto coordinate = [&](int k) {
    return op(BinaryOp::Sub, op(BinaryOp::Mul, ctx.input(1)({roi, intConstant(k)}), t(scale)), t(halfPixel ? 0.5 : 0.0));
  };
  ExprRef startW = let("start_w", coordinate(0)), startH = let("start_h", coordinate(1));
  ExprRef roiW = op(BinaryOp::Sub, coordinate(2), startW), roiH = op(BinaryOp::Sub, coordinate(3), startH);
  if (!halfPixel) {
    roiW = op(BinaryOp::Max, roiW, t(1));
    roiH = op(BinaryOp::Max, roiH, t(1));
  }
  roiW = let("roi_w", roiW);
  roiH = let("roi_h", roiH);
  ExprRef binH = let("bin_h", op(BinaryOp::Div, roiH, t(double(outH))));
  ExprRef binW = let("bin_w", op(BinaryOp::Div, roiW, t(double(outW))));
  auto gridOf = [&](const char *name, ExprRef size, int64_t bins) {
    if (ratio > 0)
      return intConstant(ratio);
    ExprRef cells = unary(UnaryOp::Ceil, op(BinaryOp::Div, size, t(double(bins))));
    cells = op(BinaryOp::Min, op(BinaryOp::Max, cells, t(0)), t(65536)); // NaN-safe: Max/Min propagate NaN
    cells = select(unary(UnaryOp::IsNaN, cells), t(0), cells);
    return let(name, cast(cells, i64));
  };
  ExprRef gridH = gridOf("grid_h", roiH, outH), gridW = gridOf("grid_w", roiW, outW);
  ExprRef image = let("image", op(BinaryOp::Min, op(BinaryOp::Max, cast(ctx.input(2)({roi}), i64), intConstant(0)),
                                  intConstant(batch - 1)));
  int iy = b.addVariable("iy", i64), ix = b.addVariable("ix", i64), acc = b.addVariable("acc", type);
  int first = b.addVariable("first", DType::Bool);
  int yv = b.addVariable("y", type), xv = b.addVariable("x", type);
  ExprRef y = var(yv, type), xp = var(xv, type);
  ExprRef sampleY = op(BinaryOp::Add, op(BinaryOp::Add, startH, op(BinaryOp::Mul, cast(ph, type), binH)),
                       op(BinaryOp::Div, op(BinaryOp::Mul, op(BinaryOp::Add, cast(var(iy, i64), type), t(0.5)), binH), cast(gridH, type)));
  ExprRef sampleX = op(BinaryOp::Add, op(BinaryOp::Add, startW, op(BinaryOp::Mul, cast(pw, type), binW)),
                       op(BinaryOp::Div, op(BinaryOp::Mul, op(BinaryOp::Add, cast(var(ix, i64), type), t(0.5)), binW), cast(gridW, type)));
  ExprRef inside = op(BinaryOp::LogicalAnd,
                      op(BinaryOp::LogicalAnd, op(BinaryOp::Ge, y, t(-1)), op(BinaryOp::Le, y, t(double(height)))),
                      op(BinaryOp::LogicalAnd, op(BinaryOp::Ge, xp, t(-1)), op(BinaryOp::Le, xp, t(double(width)))));
  // Inside: clamp to the image; the low corner is the truncation of the clamped coordinate.
  auto corner = [&](ExprRef v, int64_t limit, int lowVar, int highVar, int fracVar) {
    ExprRef clamped = op(BinaryOp::Max, v, t(0));
    ExprRef low = op(BinaryOp::Min, cast(clamped, i64), intConstant(limit - 1));
    ExprRef atEdge = op(BinaryOp::Ge, cast(clamped, i64), intConstant(limit - 1));
    return std::vector<StmtRef>{
        assign(lowVar, low),
        assign(highVar, select(atEdge, low, add(low, 1))),
        assign(fracVar, select(atEdge, t(0), op(BinaryOp::Sub, clamped, cast(low, type))))};
  };
  int yLow = b.addVariable("y_low", i64), yHigh = b.addVariable("y_high", i64), ly = b.addVariable("ly", type);
  int xLow = b.addVariable("x_low", i64), xHigh = b.addVariable("x_high", i64), lx = b.addVariable("lx", type);
  ExprRef lyv = var(ly, type), lxv = var(lx, type);
  ExprRef hy = op(BinaryOp::Sub, t(1), lyv), hx = op(BinaryOp::Sub, t(1), lxv);
  auto pixel = [&](int row, int column) { return ctx.input(0)({image, channel, var(row, i64), var(column, i64)}); };
  ExprRef v1 = op(BinaryOp::Mul, op(BinaryOp::Mul, hy, hx), pixel(yLow, xLow));
  ExprRef v2 = op(BinaryOp::Mul, op(BinaryOp::Mul, hy, lxv), pixel(yLow, xHigh));
  ExprRef v3 = op(BinaryOp::Mul, op(BinaryOp::Mul, lyv, hx), pixel(yHigh, xLow));
  ExprRef v4 = op(BinaryOp::Mul, op(BinaryOp::Mul, lyv, lxv), pixel(yHigh, xHigh));
  ExprRef accumulator = var(acc, type);
  std::vector<StmtRef> insideBody = corner(y, height, yLow, yHigh, ly);
  for (StmtRef &s : corner(xp, width, xLow, xHigh, lx))
    insideBody.push_back(s);
  std::vector<StmtRef> sample = {assign(yv, sampleY), assign(xv, sampleX)};
  if (maxMode) {
    // Outside samples weigh zero: their value is 0.
    int best = b.addVariable("best", type);
    ExprRef bestV = var(best, type);
    insideBody.push_back(assign(best, op(BinaryOp::Max, op(BinaryOp::Max, v1, v2), op(BinaryOp::Max, v3, v4))));
    sample.push_back(ifThen(inside, insideBody, {assign(best, t(0))}));
    sample.push_back(assign(acc, select(var(first, DType::Bool), bestV, op(BinaryOp::Max, accumulator, bestV))));
    sample.push_back(assign(first, boolConstant(false)));
  } else {
    insideBody.push_back(assign(acc, op(BinaryOp::Add, accumulator, op(BinaryOp::Add, op(BinaryOp::Add, v1, v2), op(BinaryOp::Add, v3, v4)))));
    sample.push_back(ifThen(inside, insideBody));
  }
  b.emit(assign(acc, t(0)));
  b.emit(assign(first, boolConstant(true)));
  b.emit(forLoop(iy, gridH, {forLoop(ix, gridW, sample)}));
  ExprRef result = accumulator;
  if (!maxMode)
    result = op(BinaryOp::Div, accumulator, cast(binary(BinaryOp::Max, mul(gridH, gridW), intConstant(1)), type));
  b.emit(ctx.store(0, b.gid(), result));
}

void maxUnpoolRule(const RuleContext &ctx) {
  KernelBuilder &b = ctx.builder();
  const Node &node = ctx.node();
  std::vector<int64_t> x = ctx.inputDims(0), out = ctx.outputDims(0);
  size_t n = x.size() - 2;
  std::vector<int64_t> kernel = node.attrInts("kernel_shape");
  std::vector<int64_t> strides = node.attrInts("strides", std::vector<int64_t>(n, 1));
  std::vector<int64_t> pads = node.attrInts("pads", std::vector<int64_t>(2 * n, 0));
  std::vector<int64_t> unpooled = {x[0], x[1]};
  for (size_t d = 0; d < n; ++d)
    unpooled.push_back((x[2 + d] - 1) * strides[d] - pads[d] - pads[d + n] + kernel[d]);
  int64_t total = productOf(unpooled);
  b.setParallelExtent(1);
  int e = b.addVariable("e", DType::Int64), i = b.addVariable("i", DType::Int64), at = b.addVariable("at", DType::Int64);
  ExprRef iv = var(i, DType::Int64), atv = var(at, DType::Int64);
  b.emit(forLoop(e, intConstant(productOf(out)), {ctx.store(0, var(e, DType::Int64), typedConstant(ctx.outputType(0), 0))}));
  std::vector<ExprRef> where = unravelIndex(iv, x);
  ExprRef valid = binary(BinaryOp::LogicalAnd, binary(BinaryOp::Ge, atv, intConstant(0)), binary(BinaryOp::Lt, atv, intConstant(total)));
  ExprRef clamped = binary(BinaryOp::Min, binary(BinaryOp::Max, atv, intConstant(0)), intConstant(total - 1));
  b.emit(forLoop(i, intConstant(productOf(x)),
                 {assign(at, ctx.input(1)(where)),
                  ifThen(valid, {ctx.store(0, ravelIndex(unravelIndex(clamped, unpooled), out), ctx.input(0)(where))})}));
}

} // namespace

void registerImageLowering(LoweringTable &table) {
  table.addKernel(OpKind::Col2Im, col2imRule);
  table.addKernel(OpKind::DeformConv, deformConvRule);
  table.addKernel(OpKind::RoiAlign, roiAlignRule);
  table.addKernel(OpKind::MaxUnpool, maxUnpoolRule);
}

} // namespace sinter::codegen
