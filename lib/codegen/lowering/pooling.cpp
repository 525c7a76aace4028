#include "sinter/codegen/lowering/pooling.h"

#include "lowering_rules.h"

namespace sinter::codegen {
namespace {

bool isWindowPool(const Node &node) { return node.kind() == OpKind::MaxPool || node.kind() == OpKind::AveragePool; }

/// The taps of a window along one dim that count toward an average, as kernel IR: those inside
/// the input, or (count_include_pad) inside the input and its end padding, as poolRule counts.
ExprRef tapsCounted(const ExprRef &start, int64_t taps, int64_t dilation, int64_t limit, bool includePad) {
  ExprRef count = intConstant(0);
  for (int64_t k = 0; k < taps; ++k) {
    ExprRef at = add(start, intConstant(k * dilation));
    ExprRef in = binary(BinaryOp::Lt, at, intConstant(limit));
    if (!includePad)
      in = binary(BinaryOp::LogicalAnd, binary(BinaryOp::Ge, at, intConstant(0)), in);
    count = add(count, select(in, intConstant(1), intConstant(0)));
  }
  return count;
}

} // namespace

std::optional<Pooling> lowerPooling(const KernelGroup &group) {
  const Node *core = soleCoreNode(group, isWindowPool);
  if (!core || core->numOutputs() != 1 || !core->output(0))
    return std::nullopt; // MaxPool's Indices are not described
  KernelBuilder builder(group.name);
  GroupBuffers buffers = declareGroupBuffers(group, builder);
  std::optional<Pooling> pooling;
  lowerGroupNodes(group, builder, buffers, [&](const RuleContext &ctx) {
    const Node &node = ctx.node();
    std::vector<int64_t> x = ctx.inputDims(0), out = ctx.outputDims(0);
    const size_t spatial = x.size() - 2;
    if (spatial < 1 || spatial > 2 || ctx.inputType(0) != DType::Float32 || ctx.outputType(0) != DType::Float32)
      return;
    std::vector<int64_t> kernel = node.attrInts("kernel_shape");
    Pooling described;
    described.max = node.kind() == OpKind::MaxPool;
    described.geometry = windowGeometry(node, {x.begin() + 2, x.end()}, kernel);
    described.images = x[0];
    described.channels = x[1];
    described.image = builder.addVariable("image", DType::Int64);
    described.channel = builder.addVariable("channel", DType::Int64);
    described.position = builder.addVariable("position", DType::Int64);
    described.acc = builder.addVariable("acc", DType::Float32);
    ExprRef image = var(described.image, DType::Int64), channel = var(described.channel, DType::Int64);
    ExprRef position = var(described.position, DType::Int64);
    std::vector<ExprRef> probe = {image, channel};
    for (size_t d = 0; d < spatial; ++d)
      probe.push_back(var(described.position, DType::Int64));
    // X must be read directly: its accessor is a load at the row-major index, of f32 or 16 bits,
    // through casts between those to f32 (a graph input rounded to f16 on its way in).
    ExprRef read = ctx.input(0)(probe), loaded = floatLoadBeneathCasts(read);
    // (A fused elementwise prologue indexes a dim of one as 0, as broadcastIndex does.)
    auto readAt = [&](const std::vector<ExprRef> &index) { return structurallyEqual(loaded->operands[0], ravelIndex(index, x)); };
    if (!loaded || read->type != DType::Float32 || !(readAt(probe) || readAt(broadcastIndex(probe, x))))
      return;
    described.source = loaded->id;
    described.load = loaded;
    described.read = read;
    ExprRef result = var(described.acc, DType::Float32);
    if (!described.max) {
      bool includePad = node.attrInt("count_include_pad", 0) != 0;
      std::vector<int64_t> pads = node.attrInts("pads", std::vector<int64_t>(2 * spatial, 0));
      std::vector<ExprRef> outAt = unravelIndex(position, described.geometry.output);
      ExprRef count = intConstant(1);
      for (size_t d = 0; d < spatial; ++d) {
        ExprRef start = sub(mul(outAt[d], described.geometry.strides[d]), intConstant(described.geometry.padBegin[d]));
        int64_t limit = includePad ? x[2 + d] + pads[spatial + d] : x[2 + d];
        count = mul(count, tapsCounted(start, kernel[d], described.geometry.dilations[d], limit, includePad));
      }
      result = binary(BinaryOp::Div, result, cast(count, DType::Float32));
    }
    int64_t positions = productOf(out, 2);
    ExprRef flat = add(mul(add(mul(image, x[1]), channel), positions), position);
    described.epilogue = {ctx.store(0, flat, result)};
    pooling = std::move(described);
  });
  if (!pooling)
    return std::nullopt;
  pooling->kernel = builder.take();
  pooling->kernel.flops = 0;
  return pooling;
}

} // namespace sinter::codegen
