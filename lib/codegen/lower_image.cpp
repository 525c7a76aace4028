// Lowering of Col2Im and DeformConv (semantics in lib/reference/col2im.cpp and
// deform_conv.cpp): one parallel index per output element.
//   Col2Im      gathers, for its image element, every (block offset, block position) pair that
//               covers it (position = (pixel + pad - offset * dilation) / stride, when whole and
//               in range) and sums those input values.
//   DeformConv  sums, over its group's input channels and the kernel taps, the weight times the
//               mask times the input sampled bilinearly at the offset tap (zero outside).
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

} // namespace

void registerImageLowering(LoweringTable &table) {
  table.addKernel(OpKind::Col2Im, col2imRule);
  table.addKernel(OpKind::DeformConv, deformConvRule);
}

} // namespace sinter::codegen
