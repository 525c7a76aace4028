#include "sinter/codegen/lowering/concatenation.h"

#include "lowering_rules.h"

#include <algorithm>

namespace sinter::codegen {

std::optional<Concatenation> describeConcatenation(const KernelGroup &group) {
  if (group.nodes.size() != 1 || group.nodes[0]->kind() != OpKind::Concat || group.outputs.size() != 1)
    return std::nullopt;
  const Node &node = *group.nodes[0];
  const Value *output = node.output(0);
  if (!output || output != group.outputs[0] || !isStatic(output->shape()))
    return std::nullopt;
  std::vector<int64_t> dims = staticDims(output->shape());
  const int64_t rank = int64_t(dims.size());
  if (rank == 0)
    return std::nullopt;
  const int64_t axis = normalizedAxis(node, node.attrInt("axis", 0), rank);
  Concatenation concatenation;
  concatenation.outer = productOf(dims, 0, size_t(axis));
  concatenation.inner = productOf(dims, size_t(axis) + 1);
  concatenation.elementBytes = dtypeSize(output->dtype());
  for (const Value *input : node.inputs()) {
    if (!input || !isStatic(input->shape()) || input->dtype() != output->dtype())
      return std::nullopt;
    auto at = std::find(group.inputs.begin(), group.inputs.end(), input);
    if (at == group.inputs.end())
      return std::nullopt;
    std::vector<int64_t> inputDims = staticDims(input->shape());
    if (int64_t(inputDims.size()) != rank)
      return std::nullopt;
    concatenation.sources.push_back(int(at - group.inputs.begin()));
    concatenation.extents.push_back(inputDims[size_t(axis)]);
  }
  concatenation.output = int(group.inputs.size());
  return concatenation;
}

} // namespace sinter::codegen
