// The host's x86-64 instruction set, read with cpuid and xgetbv, against the level a CPU artifact
// was compiled for.
#pragma once

#include <string>
#include <vector>

namespace sinter::rt {

/// The features that `cpuLevel` ("x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4", "" for the
/// baseline, or a known CPU name such as "haswell" or "znver4") needs and this host lacks, by
/// their usual names ("avx2", "avx512bw"); empty when the host has them all. AVX and AVX-512 count
/// as present only when the OS saves their registers (XCR0). Throws RuntimeError(UNSUPPORTED)
/// for a level this runtime does not know.
std::vector<std::string> missingCpuFeatures(const std::string &cpuLevel);

} // namespace sinter::rt
