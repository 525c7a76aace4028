// Kernel IR as an NVPTX module: each kernel is an entry point (`.entry`) whose body is a
// grid-stride loop over gid in [0, parallelExtent), built by the shared KernelEmitter with
// libdevice for math. The module is linked with libdevice when a kernel needs it, optimised at
// O3 with LLVM's new pass manager (the NVPTX target adds NVVMReflect, which resolves libdevice's
// __nvvm_reflect("__CUDA_FTZ") to 0 and "__CUDA_ARCH" to the target's), then printed as PTX.
//
//   void NAME(ptr noalias [readonly] b0, ..., ptr noalias bN)  ; nvvm.annotations: kernel, maxntidx
//     for (gid = ctaid.x * ntid.x + tid.x; gid < extent; gid += nctaid.x * ntid.x) BODY(gid)
//
// Buffers are generic pointers: NVPTX's argument lowering marks a kernel's pointer parameters
// global and InferAddressSpaces carries that to every access (ld.global, and ld.global.nc for a
// noalias read-only buffer).
#pragma once

#include "sinter/codegen/kernel/kernel_ir.h"

#include <map>
#include <string>
#include <vector>

namespace sinter::codegen::llvmgen {

/// libdevice.10.bc: $SINTER_LIBDEVICE, else nvvm/libdevice/ beside the bin/ folder of the ptxas
/// sinter runs ($SINTER_PTXAS, then the PATH), else under $CUDA_HOME, $CUDA_PATH and
/// /usr/local/cuda. Empty when none exists.
std::string findLibdevice();

/// True when the kernel calls a libdevice function on NVPTX (exp, log, tanh, erf, pow, fmod, ...;
/// square root is an instruction).
bool needsLibdevice(const Kernel &kernel);

struct NvptxModuleOptions {
  std::string arch;          ///< "sm_90"
  int blockSize = 256;       ///< the launch's block size, declared as maxntid
  std::string libdevicePath; ///< linked when a kernel needs it; must be set then
  bool keepText = false;     ///< fill NvptxModule's IR texts (for --emit-source)
};

struct NvptxModule {
  std::string ptx;
  std::string unoptimizedIr, optimizedIr;     ///< the module, when keepText
  std::map<std::string, std::string> kernelIr; ///< optimised IR per kernel name, when keepText
};

/// Builds, links, optimises and prints one module holding every kernel, in its own LLVMContext
/// (so several architectures may be compiled on several threads at once).
NvptxModule compileNvptxModule(const std::vector<const Kernel *> &kernels,
                               const NvptxModuleOptions &options);

} // namespace sinter::codegen::llvmgen
