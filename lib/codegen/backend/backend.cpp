#include "sinter/codegen/backend/backend.h"

#include "sinter/support/error.h"

namespace sinter::codegen {

package::Kernel describeKernel(const KernelGroup &group, const Kernel &kernel,
                               const std::string &generator) {
  package::Kernel entry;
  entry.name = kernel.name;
  entry.generator = generator;
  for (const Node *node : group.nodes)
    entry.ops.push_back(std::string(node->opName()));
  entry.flops = double(kernel.flops);
  auto bytesOf = [](const Value *value) {
    return double(*elementCount(value->shape()) * dtypeSize(value->dtype()));
  };
  for (const Value *value : group.inputs)
    entry.bytesMoved += bytesOf(value);
  for (const Value *value : group.outputs)
    entry.bytesMoved += bytesOf(value);
  return entry;
}

} // namespace sinter::codegen
