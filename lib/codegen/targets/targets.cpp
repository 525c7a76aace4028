#include "sinter/codegen/targets/targets.h"

#ifdef SINTER_HAVE_CUDA_BACKEND
#include "sinter/codegen/cuda/cuda_backend.h"
#endif
#ifdef SINTER_HAVE_LLVM_BACKEND
#include "sinter/codegen/cpu/cpu_backend.h"
#include "sinter/codegen/nvptx/nvptx_backend.h"
#endif
#include "sinter/support/error.h"

namespace sinter::codegen {

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
    if (options.cuda.gpuCodegen == "cuda-c")
      return createCudaBackend(options);
    if (options.cuda.gpuCodegen == "llvm") {
#ifdef SINTER_HAVE_LLVM_BACKEND
      return createNvptxBackend(options);
#else
      userError("this sinter was built without the LLVM backend, so --gpu-codegen llvm is "
                "unavailable");
#endif
    }
    userError("unknown GPU code generator '", options.cuda.gpuCodegen, "'; use cuda-c or llvm");
#else
    userError("this sinter was built without the CUDA backend, so --target cuda is unavailable");
#endif
  }
  userError("unknown target");
}

} // namespace sinter::codegen
