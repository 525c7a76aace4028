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

/// The level of `levels` (an artifact's, ascending) whose kernels to run here: the highest whose
/// features this host has, and no higher than SINTER_MAX_CPU_LEVEL when that is set (so a test
/// or a user can run a lower level's kernels). Throws RuntimeError(UNSUPPORTED) naming what is
/// missing when no level fits; `path` names the artifact in the message. No levels at all is
/// the baseline, "x86-64".
std::string chooseCpuLevel(const std::vector<std::string> &levels, const std::string &path);

} // namespace sinter::rt
