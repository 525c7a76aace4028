// Emits the object file that carries the serialized manifest into model.so (writer.cpp links it).
#pragma once

#include "sinter/package/manifest.h"

#include <cstdint>
#include <span>
#include <string>

namespace sinter::package {

/// Writes an x86-64 ELF relocatable object to `path` holding `head` followed by the `weights` pieces as one
/// read-only, page-aligned blob in section ".sinter_artifact", and the exported function
/// `const void *sinter_artifact(uint64_t *size)` that returns the blob and stores its size.
/// Written directly (ELF64, x86-64 relocations), the weights in one write from where they are;
/// the bytes depend on the inputs only. Throws UserError when the file cannot be written.
void emitBlobObject(std::span<const uint8_t> head, WeightPieces weights,
                    const std::string &path);

} // namespace sinter::package
