// The artifact writer: turns a Manifest (and, for the CPU target, the kernels' object files) into
// model.so, an ELF shared object that libsinter_rt loads with dlopen.
//
// model.so exports `const void *sinter_artifact(uint64_t *size)`, which returns the serialized
// manifest (format.h) with the weights inside, and for the CPU target the kernel functions
// `void name(void *const *args, int64_t begin, int64_t end)`. It is linked in-process with LLD;
// no external tool runs. The output:
//   * needs no shared library but libc.so.6 and libm.so.6 (CPU kernels that call them), and
//     none at all when no object files are given (CUDA artifacts, copy-only plans);
//   * is byte-identical for identical inputs: no build-id, timestamps or temporary paths inside;
//   * appears atomically: it is written under a temporary name in the destination folder and
//     renamed, so a failure never leaves a half-written file behind.
#pragma once

#include "sinter/package/manifest.h"

#include <string>
#include <vector>

namespace sinter::package {

/// Writes `manifest` as a shared object at `path`. `cpuObjectFiles` are x86-64 ELF relocatable
/// objects that define (at least) every kernel of a CPU manifest under its Kernel::name; they
/// must be empty for a CUDA manifest. Throws UserError when the file cannot be written or the
/// objects do not link (with the linker's message), InternalError for an invalid manifest.
void writeArtifact(const Manifest &manifest, const std::string &path,
                   const std::vector<std::string> &cpuObjectFiles = {});

} // namespace sinter::package
