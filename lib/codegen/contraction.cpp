#include "sinter/codegen/contraction.h"

#include "lowering_rules.h"

namespace sinter::codegen {

bool isContraction(const Node &node) {
  return node.kind() == OpKind::MatMul || node.kind() == OpKind::Gemm || node.kind() == OpKind::Conv;
}

std::optional<Contraction> lowerContraction(const KernelGroup &group) {
  if (group.nodes.size() != 1 || !isContraction(*group.nodes[0]))
    return std::nullopt;
  const Node &node = *group.nodes[0];
  KernelBuilder builder(group.name);
  GroupBuffers buffers = declareGroupBuffers(group, builder);
  std::vector<Accessor> inputs;
  for (Value *input : node.inputs())
    inputs.push_back(input ? buffers.accessors.at(input) : Accessor());
  std::vector<int> outputs;
  for (Value *output : node.outputs())
    outputs.push_back(buffers.outputBuffers.count(output) ? buffers.outputBuffers.at(output) : -1);
  RuleContext context(node, builder, inputs, outputs);
  ContractionSpec spec = describeContraction(context);
  builder.kernel().flops = spec.flops();
  return Contraction{builder.take(), std::move(spec)};
}

bool worthTiling(const ContractionSpec &spec) {
  return spec.m >= 16 && spec.n >= 16 && spec.k >= 16;
}

} // namespace sinter::codegen
