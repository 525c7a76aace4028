#include "sinter/codegen/lowering/attention.h"

#include "lowering_rules.h"
#include "sinter/support/error.h"

#include <cmath>

namespace sinter::codegen {
namespace {

/// Whether the node is the Attention the fused kernel computes (attention.h).
bool fusable(const Node &node) {
  if (node.kind() != OpKind::Attention || node.numInputs() < 3 || node.numInputs() > 4)
    return false;
  for (int o = 1; o < node.numOutputs(); ++o)
    if (node.output(o) && node.output(o)->hasUses())
      return false;
  const Value *q = node.input(0), *k = node.input(1), *v = node.input(2);
  if (q->rank() != 4 || k->rank() != 4 || v->rank() != 4 || q->shape()[1] != k->shape()[1])
    return false;
  if (node.attrInt("is_causal", 0) != 0 || node.attrFloat("softcap", 0.0f) != 0.0f ||
      node.attrInt("qk_matmul_output_mode", 0) != 0 || node.attrInt("left_window_size", -1) >= 0 ||
      node.attrInt("right_window_size", -1) >= 0)
    return false;
  return node.numInputs() < 4 || !node.input(3) || isFloat(node.input(3)->dtype());
}

} // namespace

std::optional<FusedAttention> lowerFusedAttention(const KernelGroup &group) {
  const Node *core = soleCoreNode(group, [](const Node &node) { return node.kind() == OpKind::Attention; });
  if (!core || !fusable(*core))
    return std::nullopt;
  KernelBuilder builder(group.name);
  GroupBuffers buffers = declareGroupBuffers(group, builder);
  AttentionSpec spec;
  lowerGroupNodes(group, builder, buffers, [&](const RuleContext &ctx) {
    const Node &node = ctx.node();
    std::vector<int64_t> q = ctx.inputDims(0), k = ctx.inputDims(1), v = ctx.inputDims(2);
    const int64_t heads = q[1];
    spec.batch = q[0] * heads;
    spec.lq = q[2];
    spec.lk = k[2];
    spec.d = q[3];
    spec.dv = v[3];
    spec.scale = node.hasAttr("scale") ? double(node.attrFloat("scale", 1.0f)) : 1.0 / std::sqrt(double(spec.d));
    KernelBuilder &b = ctx.builder();
    spec.b = b.addVariable("b", DType::Int64);
    spec.i = b.addVariable("i", DType::Int64);
    spec.j = b.addVariable("j", DType::Int64);
    spec.c = b.addVariable("c", DType::Int64);
    spec.acc = b.addVariable("acc", DType::Float32);
    ExprRef bv = var(spec.b, DType::Int64), iv = var(spec.i, DType::Int64), jv = var(spec.j, DType::Int64),
            cv = var(spec.c, DType::Int64);
    ExprRef batch = div(bv, heads), head = rem(bv, heads);
    spec.query = cast(ctx.input(0)({batch, head, iv, cv}), DType::Float32);
    spec.key = cast(ctx.input(1)({batch, head, jv, cv}), DType::Float32);
    spec.value = cast(ctx.input(2)({batch, head, jv, cv}), DType::Float32);
    if (ctx.hasInput(3)) {
      // Broadcast right-aligned onto [batch, heads, lq, lk].
      std::vector<int64_t> maskDims = ctx.inputDims(3);
      std::vector<ExprRef> full = {batch, head, iv, jv};
      std::vector<ExprRef> index;
      for (size_t a = 4 - maskDims.size(); a < 4; ++a)
        index.push_back(maskDims[a - (4 - maskDims.size())] == 1 ? intConstant(0) : full[a]);
      spec.mask = cast(ctx.input(3)(index), DType::Float32);
    }
    ExprRef flat = add(mul(add(mul(bv, spec.lq), iv), spec.dv), cv);
    spec.epilogue = {ctx.store(0, flat, var(spec.acc, DType::Float32))};
  });
  builder.kernel().flops = spec.flops();
  return FusedAttention{builder.take(), std::move(spec)};
}

} // namespace sinter::codegen
