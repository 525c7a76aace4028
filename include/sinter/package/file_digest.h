// model.so as a file: the whole-file digest the writer appends and the checks the runtime makes
// before dlopen ever sees the file (docs/artifact-format.md, "The digest trailer").
//
// The digest is XXH64 (xxHash's 64-bit variant, seed 0, as its specification defines it) of
// every byte of the file before a fixed 32-byte trailer: ELF header, program and section headers,
// code, read-only data, the dynamic section, relocations, the manifest and the weights. It
// detects damage (a truncated copy, flipped bits); it is not a signature: anyone who can write
// the file can recompute it.
//
// Like format.cpp, this file is compiled into libsinter_rt: POSIX and the C++ library only.
#pragma once

#include "sinter/support/xxh64.h"

#include <array>
#include <cstdint>
#include <span>
#include <string>

namespace sinter::package {

using sinter::Xxh64;
using sinter::xxh64;

/// The last 8 bytes of every artifact.
inline constexpr char kDigestTrailerMagic[8] = {'S', 'I', 'N', 'T', 'E', 'R', 'D', 'G'};
inline constexpr uint64_t kDigestTrailerBytes = 32;
inline constexpr uint32_t kDigestTrailerVersion = 1;
inline constexpr uint32_t kDigestAlgorithmXxh64 = 1;

/// The trailer for a file whose first `coveredBytes` bytes hash to `digest`: u64 digest, u64
/// coveredBytes, u32 version, u32 algorithm, then the magic (all little-endian).
std::array<uint8_t, kDigestTrailerBytes> digestTrailer(uint64_t coveredBytes, uint64_t digest);

/// Appends the digest trailer to the file at `path` (the writer, after linking). Throws UserError
/// when it cannot be read or written.
void appendFileDigest(const std::string &path);

/// The first thing wrong with the open regular file `descriptor` of `fileBytes` bytes, or "":
/// the ELF header (64-bit little-endian x86-64 shared object), the program and section header
/// tables, every segment's and section's file range, the trailer, and the digest. Reads with
/// pread only (never maps the file), so a file that shrinks meanwhile is an error, not a SIGBUS.
std::string findArtifactFileProblem(int descriptor, uint64_t fileBytes);

} // namespace sinter::package
