// Lowering of convolutions: Conv as a contraction (describeConv, read by every backend through
// describeContraction), ConvTranspose as a plain loop nest (one parallel index per output
// element), DeformConv and Col2Im as kernel rules (semantics in lib/reference/convolution*.cpp),
// one parallel index per output element:
//   Col2Im      gathers, for its image element, every (block offset, block position) pair that
//               covers it (position = (pixel + pad - offset * dilation) / stride, when whole and
//               in range) and sums those input values.
//   DeformConv  sums, over its group's input channels and the kernel taps, the weight times the
//               mask times the input sampled bilinearly at the offset tap (zero outside).
#include "lowering_rules.h"

#include "sinter/codegen/lowering/contraction.h"
#include "sinter/ir/conv_layout.h"
#include "sinter/ir/op_attributes.h"
#include "sinter/support/error.h"

namespace sinter::codegen {
namespace {

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

void convTransposeRule(const RuleContext &ctx) {
  const Node &node = ctx.node();
  KernelBuilder &b = ctx.builder();
  std::vector<int64_t> x = ctx.inputDims(0), w = ctx.inputDims(1), out = ctx.outputDims(0);
  size_t n = x.size() - 2;
  int64_t group = node.attrInt("group", 1);
  int64_t perGroupIn = x[1] / group, perGroupOut = w[1];
  std::vector<int64_t> kernel(w.begin() + 2, w.end());
  // The padding (and so where each input position lands) as the reference evaluator resolves it.
  const WindowGeometry window = windowGeometry(node, {x.begin() + 2, x.end()}, kernel);
  const std::vector<int64_t> &strides = window.strides, &dilations = window.dilations, &padBegin = window.padBegin;
  DType type = ctx.outputType(0);
  b.setParallelExtent(productOf(out));
  std::vector<ExprRef> index = unravelIndex(b.gid(), out);
  ExprRef m = index[1];
  ExprRef g = div(m, perGroupOut);
  std::vector<int64_t> reduction = {perGroupIn};
  reduction.insert(reduction.end(), kernel.begin(), kernel.end());
  int acc = b.addVariable("acc", type), r = b.addVariable("r", DType::Int64);
  std::vector<ExprRef> at = unravelIndex(var(r, DType::Int64), reduction);
  ExprRef channel = add(mul(g, perGroupIn), at[0]);
  std::vector<ExprRef> inIndex = {index[0], channel};
  std::vector<ExprRef> weightIndex = {channel, rem(m, perGroupOut)};
  ExprRef valid = boolConstant(true);
  for (size_t i = 0; i < n; ++i) {
    // out = in * stride - padBegin + k * dilation  =>  in = (out + padBegin - k * dilation) / stride
    ExprRef numerator = sub(add(index[2 + i], intConstant(padBegin[i])), mul(at[1 + i], dilations[i]));
    ExprRef position = div(numerator, strides[i]);
    ExprRef ok = binary(BinaryOp::LogicalAnd, binary(BinaryOp::Ge, numerator, intConstant(0)),
                        binary(BinaryOp::Eq, rem(numerator, strides[i]), intConstant(0)));
    ok = binary(BinaryOp::LogicalAnd, ok, binary(BinaryOp::Lt, position, intConstant(x[2 + i])));
    valid = binary(BinaryOp::LogicalAnd, valid, ok);
    inIndex.push_back(binary(BinaryOp::Min, binary(BinaryOp::Max, position, intConstant(0)), intConstant(x[2 + i] - 1)));
    weightIndex.push_back(at[1 + i]);
  }
  ExprRef term = binary(BinaryOp::Mul, cast(ctx.input(0)(inIndex), type), cast(ctx.input(1)(weightIndex), type));
  b.emit(assign(acc, ctx.hasInput(2) ? cast(ctx.input(2)({m}), type) : typedConstant(type, 0)));
  b.emit(forLoop(r, intConstant(productOf(reduction)),
                 {ifThen(valid, {assign(acc, binary(BinaryOp::Add, var(acc, type), term))})}));
  b.emit(ctx.store(0, b.gid(), var(acc, type)));
  b.kernel().flops = 2 * productOf(out) * productOf(reduction);
}

} // namespace

// Conv as an implicit GEMM, one batch per group: i is the output channel within the group, j runs
// over (image, output position), r over (kernel position, input channel within the group) with
// the channels innermost where the group has a multiple of eight channels, else over (input
// channel, kernel position) (include/sinter/ir/conv_layout.h says why). The rhs gathers the
// input window, zero in the padding; no im2col buffer is written.
ContractionSpec describeConv(const RuleContext &ctx) {
  const Node &node = ctx.node();
  std::vector<int64_t> x = ctx.inputDims(0), w = ctx.inputDims(1), out = ctx.outputDims(0);
  size_t spatialRank = x.size() - 2;
  int64_t groups = node.attrInt("group", 1);
  int64_t images = x[0], channelsPerGroup = w[1], outputsPerGroup = out[1] / groups;
  std::vector<int64_t> kernel(w.begin() + 2, w.end());
  std::vector<int64_t> outSpatial(out.begin() + 2, out.end());
  const WindowGeometry window = windowGeometry(node, {x.begin() + 2, x.end()}, kernel);
  int64_t positions = productOf(outSpatial);
  ContractionSpec spec;
  spec.type = ctx.outputType(0);
  spec.batch = groups;
  spec.m = outputsPerGroup;
  spec.n = images * positions;
  const bool channelsInnermost = convReducesChannelsInnermost(channelsPerGroup);
  std::vector<int64_t> reduction = kernel;
  reduction.insert(channelsInnermost ? reduction.end() : reduction.begin(), channelsPerGroup);
  spec.k = productOf(reduction);
  spec.lhsUnitStrideK = true;
  spec.rhsUnitStrideK = false;
  ContractionVariables v = declareVariables(ctx.builder(), spec);
  ExprRef channelOut = add(mul(v.b, outputsPerGroup), v.i);
  std::vector<ExprRef> at = unravelIndex(v.r, reduction);
  ExprRef channelIn = channelsInnermost ? at.back() : at.front();
  at.erase(channelsInnermost ? at.end() - 1 : at.begin()); // the window position
  std::vector<ExprRef> weightIndex = {channelOut, channelIn};
  weightIndex.insert(weightIndex.end(), at.begin(), at.end());
  spec.lhs = cast(ctx.input(1)(weightIndex), spec.type);

  ExprRef image = images == 1 ? intConstant(0) : div(v.j, positions);
  ExprRef position = images == 1 ? v.j : rem(v.j, positions);
  std::vector<ExprRef> outIndex = unravelIndex(position, outSpatial);
  std::vector<ExprRef> inIndex = {image, add(mul(v.b, channelsPerGroup), channelIn)};
  ExprRef inside = boolConstant(true);
  bool padded = false;
  for (size_t d = 0; d < spatialRank; ++d) {
    ExprRef where = add(sub(mul(outIndex[d], window.strides[d]), intConstant(window.padBegin[d])),
                        mul(at[d], window.dilations[d]));
    // Only a window that can reach past an edge needs the bounds check and the clamp.
    int64_t lowest = -window.padBegin[d];
    int64_t highest = (outSpatial[d] - 1) * window.strides[d] - window.padBegin[d] + (kernel[d] - 1) * window.dilations[d];
    if (lowest < 0 || highest >= x[2 + d]) {
      padded = true;
      inside = binary(BinaryOp::LogicalAnd, inside,
                      binary(BinaryOp::LogicalAnd, binary(BinaryOp::Ge, where, intConstant(0)),
                             binary(BinaryOp::Lt, where, intConstant(x[2 + d]))));
      where = binary(BinaryOp::Min, binary(BinaryOp::Max, where, intConstant(0)), intConstant(x[2 + d] - 1));
    }
    inIndex.push_back(where);
  }
  ExprRef value = cast(ctx.input(0)(inIndex), spec.type);
  spec.rhs = padded ? select(inside, value, typedConstant(spec.type, 0)) : value;

  ExprRef result = var(spec.acc, spec.type);
  if (ctx.hasInput(2))
    result = binary(BinaryOp::Add, result, cast(ctx.input(2)({channelOut}), spec.type));
  ExprRef flat = add(mul(add(mul(image, out[1]), channelOut), positions), position);
  spec.epilogue = {ctx.store(0, flat, result)};

  // The same window, restated in parts a backend can tabulate (contraction.h), when X is read
  // directly: its accessor is then a load at the row-major index of `inIndex` (a fused prologue
  // that remaps indices or computes would give another expression).
  ExprRef loaded = value->kind == ExprKind::Cast ? value->operands[0] : value;
  if (loaded->kind == ExprKind::Cast)
    loaded = loaded->operands[0];
  if (loaded->kind != ExprKind::Load || !structurallyEqual(loaded->operands[0], ravelIndex(inIndex, x)))
    return spec;
  ConvolutionWindow described;
  described.positions = positions;
  int64_t plane = productOf(x, 2);
  described.imageStride = x[1] * plane;
  described.groupStride = channelsPerGroup * plane;
  described.channelOffset = mul(channelIn, plane);
  std::vector<ExprRef> outAt = unravelIndex(v.j, outSpatial);
  int64_t stride = plane;
  for (size_t d = 0; d < spatialRank; ++d) {
    described.base.push_back(sub(mul(outAt[d], window.strides[d]), intConstant(window.padBegin[d])));
    described.displacement.push_back(mul(at[d], window.dilations[d]));
    described.extent.push_back(x[2 + d]);
    stride /= x[2 + d];
    described.stride.push_back(stride);
  }
  described.geometry = window;
  spec.window = std::move(described);
  return spec;
}

void registerConvolutionLowering(LoweringTable &table) {
  table.addKernel(OpKind::Col2Im, col2imRule);
  table.addKernel(OpKind::DeformConv, deformConvRule);
  table.addKernel(OpKind::Conv, naiveContractionRule);
  table.addKernel(OpKind::ConvTranspose, convTransposeRule);
}

} // namespace sinter::codegen
