// Lowering of contractions, convolution and pooling as plain loop nests: one parallel index per
// output element and a sequential loop over the reduction. This is the portable form every
// backend can build; backends replace the hot ones (GEMM, convolution) with tiled kernels of
// their own (see backend.h).
#include "lowering_rules.h"

#include "sinter/support/error.h"

#include <limits>

namespace sinter::codegen {
namespace {

void matMulRule(const RuleContext &ctx) {
  KernelBuilder &b = ctx.builder();
  std::vector<int64_t> a = ctx.inputDims(0), w = ctx.inputDims(1), out = ctx.outputDims(0);
  DType type = ctx.outputType(0);
  bool aVector = a.size() == 1, bVector = w.size() == 1;
  int64_t k = a.back();
  b.setParallelExtent(productOf(out));
  std::vector<ExprRef> index = unravelIndex(b.gid(), out);
  // Output index = batch..., [i], [j]; find i and j.
  size_t batchRank = out.size() - (aVector ? 0 : 1) - (bVector ? 0 : 1);
  std::vector<ExprRef> batch(index.begin(), index.begin() + batchRank);
  ExprRef i = aVector ? nullptr : index[batchRank];
  ExprRef j = bVector ? nullptr : index.back();
  int acc = b.addVariable("acc", type), kk = b.addVariable("k", DType::Int64);
  ExprRef kv = var(kk, DType::Int64);
  auto operandIndex = [&](const std::vector<int64_t> &dims, ExprRef row, ExprRef column) {
    std::vector<ExprRef> matrix;
    if (row) matrix.push_back(row);
    if (column) matrix.push_back(column);
    size_t operandBatch = dims.size() - matrix.size();
    std::vector<int64_t> batchDims(dims.begin(), dims.begin() + operandBatch);
    std::vector<ExprRef> at = operandBatch ? broadcastIndex(batch, batchDims) : std::vector<ExprRef>{};
    at.insert(at.end(), matrix.begin(), matrix.end());
    return at;
  };
  ExprRef x = cast(ctx.input(0)(operandIndex(a, i, kv)), type);
  ExprRef y = cast(ctx.input(1)(operandIndex(w, kv, j)), type);
  b.emit(assign(acc, typedConstant(type, 0)));
  b.emit(forLoop(kk, intConstant(k), {assign(acc, binary(BinaryOp::Add, var(acc, type), binary(BinaryOp::Mul, x, y)))}));
  b.emit(ctx.store(0, b.gid(), var(acc, type)));
  b.kernel().flops = 2 * productOf(out) * k;
}

void gemmRule(const RuleContext &ctx) {
  const Node &node = ctx.node();
  KernelBuilder &b = ctx.builder();
  std::vector<int64_t> out = ctx.outputDims(0), a = ctx.inputDims(0);
  bool transA = node.attrInt("transA", 0) != 0, transB = node.attrInt("transB", 0) != 0;
  DType type = ctx.outputType(0);
  int64_t k = transA ? a[0] : a[1];
  b.setParallelExtent(productOf(out));
  ExprRef i = div(b.gid(), out[1]), j = rem(b.gid(), out[1]);
  int acc = b.addVariable("acc", type), kk = b.addVariable("k", DType::Int64);
  ExprRef kv = var(kk, DType::Int64);
  ExprRef x = ctx.input(0)(transA ? std::vector<ExprRef>{kv, i} : std::vector<ExprRef>{i, kv});
  ExprRef y = ctx.input(1)(transB ? std::vector<ExprRef>{j, kv} : std::vector<ExprRef>{kv, j});
  b.emit(assign(acc, typedConstant(type, 0)));
  b.emit(forLoop(kk, intConstant(k), {assign(acc, binary(BinaryOp::Add, var(acc, type), binary(BinaryOp::Mul, x, y)))}));
  ExprRef result = binary(BinaryOp::Mul, var(acc, type), typedConstant(type, node.attrFloat("alpha", 1.0f)));
  if (ctx.hasInput(2)) {
    ExprRef c = ctx.input(2)(broadcastIndex({i, j}, ctx.inputDims(2)));
    result = binary(BinaryOp::Add, result, binary(BinaryOp::Mul, c, typedConstant(type, node.attrFloat("beta", 1.0f))));
  }
  b.emit(ctx.store(0, b.gid(), result));
  b.kernel().flops = 2 * productOf(out) * k;
}

/// Per spatial axis: stride, dilation, kernel size, and the padding before the first element.
struct Window {
  std::vector<int64_t> kernel, strides, dilations, padBegin;
};

Window windowOf(const RuleContext &ctx, const std::vector<int64_t> &kernel,
                const std::vector<int64_t> &inSpatial, const std::vector<int64_t> &outSpatial) {
  const Node &node = ctx.node();
  size_t n = inSpatial.size();
  Window window;
  window.kernel = kernel;
  window.strides = node.attrInts("strides", std::vector<int64_t>(n, 1));
  window.dilations = node.attrInts("dilations", std::vector<int64_t>(n, 1));
  std::vector<int64_t> pads = node.attrInts("pads", std::vector<int64_t>(2 * n, 0));
  std::string autoPad = node.attrString("auto_pad", "NOTSET");
  window.padBegin.assign(n, 0);
  for (size_t i = 0; i < n; ++i) {
    if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
      int64_t extent = (kernel[i] - 1) * window.dilations[i] + 1;
      int64_t total = std::max<int64_t>((outSpatial[i] - 1) * window.strides[i] + extent - inSpatial[i], 0);
      window.padBegin[i] = autoPad == "SAME_UPPER" ? total / 2 : total - total / 2;
    } else if (autoPad == "VALID") {
      window.padBegin[i] = 0;
    } else {
      window.padBegin[i] = pads[i];
    }
  }
  return window;
}

void convRule(const RuleContext &ctx) {
  const Node &node = ctx.node();
  KernelBuilder &b = ctx.builder();
  std::vector<int64_t> x = ctx.inputDims(0), w = ctx.inputDims(1), out = ctx.outputDims(0);
  size_t n = x.size() - 2;
  int64_t group = node.attrInt("group", 1);
  int64_t perGroupIn = w[1], perGroupOut = out[1] / group;
  std::vector<int64_t> kernel(w.begin() + 2, w.end());
  Window window = windowOf(ctx, kernel, {x.begin() + 2, x.end()}, {out.begin() + 2, out.end()});
  DType type = ctx.outputType(0);
  b.setParallelExtent(productOf(out));
  std::vector<ExprRef> index = unravelIndex(b.gid(), out);
  ExprRef batch = index[0], m = index[1];
  ExprRef groupBase = mul(div(m, perGroupOut), perGroupIn);
  // The reduction: input channel within the group, then the kernel window.
  std::vector<int64_t> reduction = {perGroupIn};
  reduction.insert(reduction.end(), kernel.begin(), kernel.end());
  int acc = b.addVariable("acc", type), r = b.addVariable("r", DType::Int64);
  std::vector<ExprRef> at = unravelIndex(var(r, DType::Int64), reduction);
  std::vector<ExprRef> inIndex = {batch, add(groupBase, at[0])};
  std::vector<ExprRef> weightIndex = {m, at[0]};
  ExprRef inside = boolConstant(true);
  for (size_t i = 0; i < n; ++i) {
    ExprRef position = add(sub(mul(index[2 + i], window.strides[i]), intConstant(window.padBegin[i])),
                           mul(at[1 + i], window.dilations[i]));
    inside = binary(BinaryOp::LogicalAnd, inside,
                    binary(BinaryOp::LogicalAnd, binary(BinaryOp::Ge, position, intConstant(0)),
                           binary(BinaryOp::Lt, position, intConstant(x[2 + i]))));
    inIndex.push_back(position);
    weightIndex.push_back(at[1 + i]);
  }
  ExprRef product_ = binary(BinaryOp::Mul, cast(ctx.input(0)(inIndex), type), cast(ctx.input(1)(weightIndex), type));
  b.emit(assign(acc, ctx.hasInput(2) ? cast(ctx.input(2)({m}), type) : typedConstant(type, 0)));
  b.emit(forLoop(r, intConstant(productOf(reduction)),
                 {ifThen(inside, {assign(acc, binary(BinaryOp::Add, var(acc, type), product_))})}));
  b.emit(ctx.store(0, b.gid(), var(acc, type)));
  b.kernel().flops = 2 * productOf(out) * productOf(reduction);
}

void convTransposeRule(const RuleContext &ctx) {
  const Node &node = ctx.node();
  KernelBuilder &b = ctx.builder();
  std::vector<int64_t> x = ctx.inputDims(0), w = ctx.inputDims(1), out = ctx.outputDims(0);
  size_t n = x.size() - 2;
  int64_t group = node.attrInt("group", 1);
  int64_t perGroupIn = x[1] / group, perGroupOut = w[1];
  std::vector<int64_t> kernel(w.begin() + 2, w.end());
  std::vector<int64_t> strides = node.attrInts("strides", std::vector<int64_t>(n, 1));
  std::vector<int64_t> dilations = node.attrInts("dilations", std::vector<int64_t>(n, 1));
  std::vector<int64_t> pads = node.attrInts("pads", std::vector<int64_t>(2 * n, 0));
  std::vector<int64_t> outputPadding = node.attrInts("output_padding", std::vector<int64_t>(n, 0));
  std::string autoPad = node.attrString("auto_pad", "NOTSET");
  std::vector<int64_t> padBegin(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t total = strides[i] * (x[2 + i] - 1) + outputPadding[i] + ((kernel[i] - 1) * dilations[i] + 1) - out[2 + i];
    if (autoPad == "SAME_UPPER")
      padBegin[i] = total / 2;
    else if (autoPad == "SAME_LOWER")
      padBegin[i] = total - total / 2;
    else if (!node.attrInts("output_shape").empty() && node.attrInts("pads").empty())
      padBegin[i] = total - total / 2; // output_shape given: pads derived, extra at the start
    else
      padBegin[i] = pads[i];
  }
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

void poolRule(const RuleContext &ctx) {
  const Node &node = ctx.node();
  KernelBuilder &b = ctx.builder();
  std::vector<int64_t> x = ctx.inputDims(0), out = ctx.outputDims(0);
  size_t n = x.size() - 2;
  bool global = node.kind() == OpKind::GlobalAveragePool || node.kind() == OpKind::GlobalMaxPool;
  bool isMax = node.kind() == OpKind::MaxPool || node.kind() == OpKind::GlobalMaxPool;
  bool isLp = node.kind() == OpKind::LpPool;
  std::vector<int64_t> kernel = global ? std::vector<int64_t>(x.begin() + 2, x.end()) : node.attrInts("kernel_shape");
  Window window = global ? Window{kernel, std::vector<int64_t>(n, 1), std::vector<int64_t>(n, 1), std::vector<int64_t>(n, 0)}
                         : windowOf(ctx, kernel, {x.begin() + 2, x.end()}, {out.begin() + 2, out.end()});
  DType type = ctx.outputType(0);
  b.setParallelExtent(productOf(out));
  std::vector<ExprRef> index = unravelIndex(b.gid(), out);
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
    update = {ifThen(binary(BinaryOp::LogicalOr, binary(BinaryOp::Gt, value, accumulator), unary(UnaryOp::IsNaN, value)),
                     {assign(acc, value), assign(where, ravelIndex(inIndex, x))})};
  } else if (isLp) {
    ExprRef magnitude = p == 1 ? unary(UnaryOp::Abs, value)
                               : binary(BinaryOp::Pow, unary(UnaryOp::Abs, value), typedConstant(type, double(p)));
    update = {assign(acc, binary(BinaryOp::Add, accumulator, magnitude))};
  } else {
    update = {assign(acc, binary(BinaryOp::Add, accumulator, value)),
              assign(count, add(var(count, DType::Int64), 1))};
  }
  b.emit(assign(acc, isMax ? constant(type, -std::numeric_limits<double>::infinity()) : typedConstant(type, 0)));
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

} // namespace

void registerContractionLowering(LoweringTable &table) {
  table.addKernel(OpKind::MatMul, matMulRule);
  table.addKernel(OpKind::Gemm, gemmRule);
  table.addKernel(OpKind::Conv, convRule);
  table.addKernel(OpKind::ConvTranspose, convTransposeRule);
  for (OpKind kind : {OpKind::MaxPool, OpKind::AveragePool, OpKind::LpPool, OpKind::GlobalAveragePool,
                      OpKind::GlobalMaxPool})
    table.addKernel(kind, poolRule);
}

} // namespace sinter::codegen
