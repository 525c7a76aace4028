// Lowering of pooling: MaxPool, AveragePool, LpPool and their global forms, one parallel index
// per output element and a sequential loop over the window; and MaxUnpool, which zeroes the
// output, then writes each input at its index (one thread: indices may repeat, and the last write
// wins, as in the reference, lib/reference/pooling_unpool.cpp).
#include "lowering_rules.h"

#include "sinter/ir/op_attributes.h"

#include <limits>

namespace sinter::codegen {
namespace {

void poolRule(const RuleContext &ctx) {
  const Node &node = ctx.node();
  KernelBuilder &b = ctx.builder();
  std::vector<int64_t> x = ctx.inputDims(0), out = ctx.outputDims(0);
  size_t n = x.size() - 2;
  bool global = node.kind() == OpKind::GlobalAveragePool || node.kind() == OpKind::GlobalMaxPool;
  bool isMax = node.kind() == OpKind::MaxPool || node.kind() == OpKind::GlobalMaxPool;
  bool isLp = node.kind() == OpKind::LpPool;
  std::vector<int64_t> kernel = global ? std::vector<int64_t>(x.begin() + 2, x.end()) : node.attrInts("kernel_shape");
  WindowGeometry window;
  if (global) {
    window.kernel = kernel;
    window.strides.assign(n, 1);
    window.dilations.assign(n, 1);
    window.padBegin.assign(n, 0);
  } else {
    window = windowGeometry(node, {x.begin() + 2, x.end()}, kernel);
  }
  DType type = ctx.outputType(0);
  b.setParallelExtent(productOf(out));
  std::vector<ExprRef> index = unravelIndex(b.gid(), out);
  if (global && node.kind() == OpKind::GlobalAveragePool) {
    // A plane's mean: every tap is inside, so the sum is a reduction loop (the CPU vectorizes
    // it, the CUDA backend splits it over a warp) and the count is the plane's size.
    int acc = b.addVariable("acc", type), r = b.addVariable("r", DType::Int64);
    std::vector<ExprRef> inIndex = {index[0], index[1]};
    for (const ExprRef &at : unravelIndex(var(r, DType::Int64), kernel))
      inIndex.push_back(at);
    b.emit(assign(acc, typedConstant(type, 0)));
    b.emit(reductionLoop(r, intConstant(productOf(kernel)),
                         {assign(acc, binary(BinaryOp::Add, var(acc, type), cast(ctx.input(0)(inIndex), type)))}));
    b.emit(ctx.store(0, b.gid(), binary(BinaryOp::Div, var(acc, type), typedConstant(type, double(productOf(kernel))))));
    return;
  }
  int acc = b.addVariable("acc", type), count = b.addVariable("count", DType::Int64);
  int where = b.addVariable("where", DType::Int64), r = b.addVariable("r", DType::Int64);
  std::vector<ExprRef> at = unravelIndex(var(r, DType::Int64), kernel);
  std::vector<ExprRef> inIndex = {index[0], index[1]};
  ExprRef inside = boolConstant(true);
  std::vector<int64_t> pads = node.attrInts("pads", std::vector<int64_t>(2 * n, 0));
  for (size_t i = 0; i < n; ++i) {
    ExprRef position = add(sub(mul(index[2 + i], window.strides[i]), intConstant(window.padBegin[i])),
                           mul(at[i], window.dilations[i]));
    inside = binary(BinaryOp::LogicalAnd, inside,
                    binary(BinaryOp::LogicalAnd, binary(BinaryOp::Ge, position, intConstant(0)),
                           binary(BinaryOp::Lt, position, intConstant(x[2 + i]))));
    inIndex.push_back(binary(BinaryOp::Min, binary(BinaryOp::Max, position, intConstant(0)), intConstant(x[2 + i] - 1)));
  }
  ExprRef value = cast(ctx.input(0)(inIndex), type);
  ExprRef accumulator = var(acc, type);
  int64_t p = node.attrInt("p", 2);
  std::vector<StmtRef> update;
  if (isMax) {
    // A NaN never wins a MaxPool window (as the reference evaluator, onnxruntime and the onnx
    // package's evaluator have it) and always wins GlobalMaxPool (as the reference has it);
    // integers (MaxPool takes i8 and u8) have no NaN to test for.
    ExprRef better = binary(BinaryOp::Gt, value, accumulator);
    if (isFloat(type) && global)
      better = binary(BinaryOp::LogicalOr, better, unary(UnaryOp::IsNaN, value));
    // Indices are flat positions in the input: row-major, or with storage_order = 1 column-major
    // within each (image, channel) plane (the first spatial dim fastest), as ONNX defines them.
    ExprRef position = ravelIndex(inIndex, x);
    if (node.attrInt("storage_order", 0) != 0) {
      int64_t planeSize = productOf(std::vector<int64_t>(x.begin() + 2, x.end()));
      ExprRef within = intConstant(0);
      int64_t stride = 1;
      for (size_t i = 0; i < n; ++i) {
        within = add(within, mul(inIndex[2 + i], stride));
        stride *= x[2 + i];
      }
      position = add(mul(add(mul(index[0], x[1]), index[1]), planeSize), within);
    }
    update = {ifThen(better, {assign(acc, value), assign(where, position)})};
  } else if (isLp) {
    ExprRef magnitude = p == 1 ? unary(UnaryOp::Abs, value)
                               : binary(BinaryOp::Pow, unary(UnaryOp::Abs, value), typedConstant(type, double(p)));
    update = {assign(acc, binary(BinaryOp::Add, accumulator, magnitude))};
  } else {
    update = {assign(acc, binary(BinaryOp::Add, accumulator, value)),
              assign(count, add(var(count, DType::Int64), 1))};
  }
  int bits = 8 * dtypeSize(type);
  int64_t smallest = !isSigned(type) ? 0
                     : bits == 64    ? std::numeric_limits<int64_t>::min()
                                     : -(int64_t(1) << (bits - 1));
  ExprRef lowest = isFloat(type) ? constant(type, -std::numeric_limits<double>::infinity())
                                 : intConstant(smallest, type);
  b.emit(assign(acc, isMax ? lowest : typedConstant(type, 0)));
  b.emit(assign(count, intConstant(0)));
  b.emit(assign(where, intConstant(0)));
  b.emit(forLoop(r, intConstant(productOf(kernel)), {ifThen(inside, update)}));
  ExprRef result = accumulator;
  if (isLp) {
    result = binary(BinaryOp::Pow, accumulator, typedConstant(type, 1.0 / double(p)));
  } else if (!isMax) {
    bool includePad = node.attrInt("count_include_pad", 0) != 0;
    ExprRef divisor = cast(var(count, DType::Int64), type);
    if (includePad) {
      // Counts the window positions inside the padded input (not those past it with ceil_mode).
      int padded = b.addVariable("padded", DType::Int64), s = b.addVariable("s", DType::Int64);
      std::vector<ExprRef> at2 = unravelIndex(var(s, DType::Int64), kernel);
      ExprRef in = boolConstant(true);
      for (size_t i = 0; i < n; ++i) {
        ExprRef position = add(sub(mul(index[2 + i], window.strides[i]), intConstant(window.padBegin[i])),
                               mul(at2[i], window.dilations[i]));
        in = binary(BinaryOp::LogicalAnd, in, binary(BinaryOp::Lt, position, intConstant(x[2 + i] + pads[n + i])));
      }
      b.emit(assign(padded, intConstant(0)));
      b.emit(forLoop(s, intConstant(productOf(kernel)), {ifThen(in, {assign(padded, add(var(padded, DType::Int64), 1))})}));
      divisor = cast(var(padded, DType::Int64), type);
    }
    result = binary(BinaryOp::Div, accumulator, divisor);
  }
  b.emit(ctx.store(0, b.gid(), result));
  if (isMax && ctx.hasOutput(1))
    b.emit(ctx.store(1, b.gid(), var(where, DType::Int64)));
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

void registerPoolingLowering(LoweringTable &table) {
  for (OpKind kind : {OpKind::MaxPool, OpKind::AveragePool, OpKind::LpPool, OpKind::GlobalAveragePool,
                      OpKind::GlobalMaxPool})
    table.addKernel(kind, poolRule);
  table.addKernel(OpKind::MaxUnpool, maxUnpoolRule);
}

} // namespace sinter::codegen
