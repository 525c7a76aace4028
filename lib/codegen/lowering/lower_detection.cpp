// Lowering of RoiAlign (semantics in lib/reference/detection_roi_align.cpp): one parallel index
// per output element computes its region's bin from the rois input and walks the bin's sample
// grid (whose size may depend on the region, so the loops' extents are data).
#include "lowering_rules.h"

#include "sinter/support/error.h"

namespace sinter::codegen {
namespace {

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

} // namespace

void registerDetectionLowering(LoweringTable &table) {
  table.addKernel(OpKind::RoiAlign, roiAlignRule);
}

} // namespace sinter::codegen
