// Lowering of DFT and STFT (semantics in lib/reference/signal_fourier.cpp): one parallel index per
// output point (all dims but the last, complex one), summing its n terms in a sequential loop in
// f64 (for STFT, the frame's windowed samples).
// The angle 2 pi ((k m) mod n) / n is reduced in integers first, as the reference does.
#include "lowering_rules.h"

#include "sinter/support/error.h"

#include <numbers>

namespace sinter::codegen {
namespace {

/// re + i im = sum over m < count of (xr + i xi) * e^(i angle), in f64: the loop both
/// transforms share (angle, xr and xi read the loop variable m).
void emitComplexSum(KernelBuilder &b, int m, int re, int im, int64_t count, const ExprRef &angle,
                    const ExprRef &xr, const ExprRef &xi) {
  DType f64 = DType::Float64;
  int c = b.addVariable("cos", f64), s = b.addVariable("sin", f64);
  ExprRef cv = var(c, f64), sv = var(s, f64);
  b.emit(assign(re, constant(f64, 0)));
  b.emit(assign(im, constant(f64, 0)));
  b.emit(forLoop(m, intConstant(count),
                 {assign(c, unary(UnaryOp::Cos, angle)), assign(s, unary(UnaryOp::Sin, angle)),
                  assign(re, binary(BinaryOp::Add, var(re, f64),
                                    binary(BinaryOp::Sub, binary(BinaryOp::Mul, xr, cv), binary(BinaryOp::Mul, xi, sv)))),
                  assign(im, binary(BinaryOp::Add, var(im, f64),
                                    binary(BinaryOp::Add, binary(BinaryOp::Mul, xi, cv), binary(BinaryOp::Mul, xr, sv))))}));
}

void dftRule(const RuleContext &ctx) {
  const Node &node = ctx.node();
  KernelBuilder &b = ctx.builder();
  std::vector<int64_t> in = ctx.inputDims(0), out = ctx.outputDims(0);
  int64_t rank = int64_t(in.size());
  if (ctx.hasInput(1) && !node.input(1)->isConstant())
    userError(node.describe(), ": dft_length must be a constant to generate code");
  if (ctx.hasInput(2) && !node.input(2)->isConstant())
    userError(node.describe(), ": axis must be a constant to generate code");
  int64_t axis = ctx.hasInput(2) ? node.input(2)->constant().getInt(0) : -2;
  axis = normalizedAxis(node, axis, rank);
  bool inverse = node.attrInt("inverse", 0) != 0, onesided = node.attrInt("onesided", 0) != 0;
  bool hermitian = inverse && onesided, complexInput = in.back() == 2;
  int64_t size = in[size_t(axis)];
  int64_t n = ctx.hasInput(1) ? node.input(1)->constant().getInt(0) : (hermitian ? 2 * (size - 1) : size);
  if (n <= 0)
    userError(node.describe(), ": the transform length is ", n);

  std::vector<int64_t> points(out.begin(), out.end() - 1);
  b.setParallelExtent(productOf(points));
  std::vector<ExprRef> index = unravelIndex(b.gid(), points);
  ExprRef k = index[size_t(axis)];
  DType f64 = DType::Float64;
  int m = b.addVariable("m", DType::Int64), re = b.addVariable("re", f64), im = b.addVariable("im", f64);
  ExprRef mv = var(m, DType::Int64);
  // The spectrum (or signal) point m: for a Hermitian input, points past n / 2 mirror
  // conjugated ones; points past the input's length are zero.
  ExprRef source = mv, conjugate = boolConstant(false);
  if (hermitian) {
    conjugate = binary(BinaryOp::Gt, mv, intConstant(n / 2));
    source = select(conjugate, sub(intConstant(n), mv), mv);
  }
  ExprRef present = binary(BinaryOp::Lt, source, intConstant(size));
  std::vector<ExprRef> at = index;
  at.push_back(intConstant(0));
  at[size_t(axis)] = binary(BinaryOp::Min, source, intConstant(size - 1));
  auto part = [&](int which) {
    std::vector<ExprRef> where = at;
    where.back() = intConstant(which);
    return select(present, cast(ctx.input(0)(where), f64), constant(f64, 0));
  };
  ExprRef xr = part(0);
  ExprRef xi = complexInput ? part(1) : constant(f64, 0);
  if (hermitian)
    xi = select(conjugate, binary(BinaryOp::Sub, constant(f64, 0), xi), xi);
  double sign = inverse ? 1.0 : -1.0;
  ExprRef angle = binary(BinaryOp::Mul, constant(f64, sign * 2.0 * std::numbers::pi / double(n)),
                         cast(rem(mul(k, mv), intConstant(n)), f64));
  emitComplexSum(b, m, re, im, n, angle, xr, xi);
  ExprRef scale = constant(f64, inverse ? 1.0 / double(n) : 1.0);
  DType type = ctx.outputType(0);
  ExprRef base = mul(b.gid(), out.back());
  b.emit(ctx.store(0, base, cast(binary(BinaryOp::Mul, var(re, f64), scale), type)));
  if (out.back() == 2)
    b.emit(ctx.store(0, add(base, intConstant(1)), cast(binary(BinaryOp::Mul, var(im, f64), scale), type)));
}

void stftRule(const RuleContext &ctx) {
  const Node &node = ctx.node();
  KernelBuilder &b = ctx.builder();
  std::vector<int64_t> in = ctx.inputDims(0), out = ctx.outputDims(0);
  if (!node.input(1)->isConstant())
    userError(node.describe(), ": frame_step must be a constant to generate code");
  int64_t step = node.input(1)->constant().getInt(0);
  int64_t frame = ctx.hasInput(2) ? ctx.inputDims(2)[0] : node.input(3)->constant().getInt(0);
  bool complexInput = in[2] == 2;
  DType f64 = DType::Float64;
  std::vector<int64_t> points(out.begin(), out.end() - 1); // [batch, frames, bins]
  b.setParallelExtent(productOf(points));
  std::vector<ExprRef> index = unravelIndex(b.gid(), points);
  int m = b.addVariable("m", DType::Int64), re = b.addVariable("re", f64), im = b.addVariable("im", f64);
  ExprRef mv = var(m, DType::Int64);
  ExprRef position = add(mul(index[1], step), mv);
  ExprRef weight = ctx.hasInput(2) ? cast(ctx.input(2)({mv}), f64) : constant(f64, 1);
  auto sample = [&](int part) {
    return binary(BinaryOp::Mul, cast(ctx.input(0)({index[0], position, intConstant(part)}), f64), weight);
  };
  ExprRef xr = sample(0), xi = complexInput ? sample(1) : constant(f64, 0);
  ExprRef angle = binary(BinaryOp::Mul, constant(f64, -2.0 * std::numbers::pi / double(frame)),
                         cast(rem(mul(index[2], mv), intConstant(frame)), f64));
  emitComplexSum(b, m, re, im, frame, angle, xr, xi);
  DType type = ctx.outputType(0);
  ExprRef base = mul(b.gid(), 2);
  b.emit(ctx.store(0, base, cast(var(re, f64), type)));
  b.emit(ctx.store(0, add(base, intConstant(1)), cast(var(im, f64), type)));
}

} // namespace

void registerSignalLowering(LoweringTable &table) {
  table.addKernel(OpKind::DFT, dftRule);
  table.addKernel(OpKind::STFT, stftRule);
}

} // namespace sinter::codegen
