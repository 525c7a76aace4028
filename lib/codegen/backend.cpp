#include "sinter/codegen/backend.h"

#include "backends.h"
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
    return createCudaBackend(options);
#else
    userError("this sinter was built without the CUDA backend, so --target cuda is unavailable");
#endif
  }
  userError("unknown target");
}

} // namespace sinter::codegen
