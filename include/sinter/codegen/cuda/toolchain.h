// The CUDA toolchain sinter drives, found at run time so the compiler binary needs neither the
// toolkit's shared libraries at link time nor a fixed install path:
//  * NVRTC, loaded with dlopen ($SINTER_NVRTC, then libnvrtc.so.13/.12 on the loader's path, then
//    $CUDA_HOME/lib64 and /usr/local/cuda/lib64), compiles CUDA C to PTX;
//  * ptxas ($SINTER_PTXAS, then the PATH, then $CUDA_HOME/bin and /usr/local/cuda/bin) assembles PTX
//    to SASS (a cubin) for one architecture.
// Both take the kernel cache (support/kernel_cache.h; null: none): the key is the input, every
// option passed to the tool and the tool's own version, so a hit is the tool's output for that
// input, byte for byte.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sinter {
class KernelCache;
}

namespace sinter::codegen::cuda {

/// Compiles a translation unit to PTX for a virtual architecture ("compute_80"), with line info
/// (`-lineinfo`, for a profiler's source view) when asked. Throws UserError when NVRTC is
/// missing, and InternalError (with NVRTC's log) when the generated source fails.
std::string compileToPtx(const std::string &source, const std::string &virtualArch,
                         const std::string &programName, const KernelCache *cache = nullptr,
                         bool lineInfo = false);

/// Assembles PTX into a cubin for a real architecture ("sm_90"), in workDirectory.
std::vector<uint8_t> assemblePtx(const std::string &ptx, const std::string &arch,
                                 const std::string &workDirectory, const KernelCache *cache = nullptr);

/// "NVRTC 13.0" or the reason it cannot be loaded.
std::string describeNvrtc();

} // namespace sinter::codegen::cuda
