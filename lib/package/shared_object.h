// Writes model.so itself when it holds no CPU kernels (every CUDA artifact, and CPU artifacts
// whose plans only copy): nothing to link, so no linker runs (writer.cpp chooses).
#pragma once

#include "sinter/package/manifest.h"

#include <cstdint>
#include <span>
#include <string>

namespace sinter::package {

/// Writes an x86-64 ELF shared object to `path` holding `head` followed by the `weights` pieces as one
/// read-only, page-aligned blob in section ".sinter_artifact" and exporting only
/// `const void *sinter_artifact(uint64_t *size)`, then the digest trailer (file_digest.h), hashed
/// as it is written. The file is what `ld.lld -shared -z now -z relro --hash-style=both` makes of
/// blob_object.cpp's object, laid out by hand: no relocations, no DT_NEEDED, no soname, no
/// build-id; the bytes depend on the inputs only. Throws UserError when it cannot be written.
void writeBlobSharedObject(std::span<const uint8_t> head, WeightPieces weights,
                           const std::string &path);

} // namespace sinter::package
