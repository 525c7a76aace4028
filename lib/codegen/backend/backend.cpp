#include "sinter/codegen/backend/backend.h"

#include "sinter/support/error.h"

namespace sinter::codegen {

LoweredGroup lowerForBackend(const KernelGroup &group, const BackendCapabilities &capabilities) {
  LoweredGroup lowered;
  lowered.kernel = lowerGroup(group);
  if (capabilities.describesFusedAttention)
    lowered.attention = lowerFusedAttention(group);
  lowered.contraction = lowerContraction(group);
  for (const Value *input : group.inputs)
    lowered.constantInputs.push_back(input->isConstant() ? &input->constant() : nullptr);
  for (const Node *node : group.nodes)
    lowered.ops.push_back(node->kind());
  auto bytesOf = [](const Value *value) {
    return double(*elementCount(value->shape()) * dtypeSize(value->dtype()));
  };
  for (const Value *value : group.inputs)
    lowered.bytesMoved += bytesOf(value);
  for (const Value *value : group.outputs)
    lowered.bytesMoved += bytesOf(value);
  return lowered;
}

package::Kernel describeKernel(const LoweredGroup &group, const Kernel &kernel,
                               const std::string &generator) {
  package::Kernel entry;
  entry.name = kernel.name;
  entry.generator = generator;
  for (OpKind op : group.ops)
    entry.ops.push_back(std::string(opName(op)));
  entry.flops = double(kernel.flops);
  entry.bytesMoved = group.bytesMoved;
  return entry;
}

} // namespace sinter::codegen
