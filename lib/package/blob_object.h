// Emits the object file that carries the serialized manifest into model.so (writer.cpp links it).
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace sinter::package {

/// Writes an x86-64 ELF relocatable object to `path` holding `head` followed by `weights` as one
/// read-only, page-aligned blob in section ".sinter_artifact", and the exported function
/// `const void *sinter_artifact(uint64_t *size)` that returns the blob and stores its size.
/// Built as an LLVM module and emitted by an x86-64 TargetMachine, so the bytes depend on the
/// inputs only. Throws UserError when the file cannot be written.
void emitBlobObject(std::span<const uint8_t> head, std::span<const uint8_t> weights,
                    const std::string &path);

} // namespace sinter::package
