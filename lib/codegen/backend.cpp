#include "sinter/codegen/backend.h"

#include "backends.h"
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

std::unique_ptr<Backend> createBackend(const TargetOptions &options) {
  switch (options.target) {
  case package::Target::Cpu:
#ifdef SINTER_HAVE_LLVM_BACKEND
    return createCpuBackend(options);
#else
    userError("this sinter was built without the LLVM backend, so --target cpu is unavailable");
#endif
  case package::Target::Cuda:
#ifdef SINTER_HAVE_CUDA_BACKEND
    if (options.gpuCodegen == "cuda-c")
      return createCudaBackend(options);
    if (options.gpuCodegen == "llvm") {
#ifdef SINTER_HAVE_LLVM_BACKEND
      return createNvptxBackend(options);
#else
      userError("this sinter was built without the LLVM backend, so --gpu-codegen llvm is "
                "unavailable");
#endif
    }
    userError("unknown GPU code generator '", options.gpuCodegen, "'; use cuda-c or llvm");
#else
    userError("this sinter was built without the CUDA backend, so --target cuda is unavailable");
#endif
  }
  userError("unknown target");
}

} // namespace sinter::codegen
