// `sinter inspect model.so`: what a compiled artifact holds (inspect_artifact.cpp).
#pragma once

#include <string>

namespace sinter::cli {

/// Prints the artifact's manifest: target, producer, ABI version, CUDA binaries or CPU level,
/// signature, memory, weights and kernels; with `plan` every step of the plan too. `json` prints
/// one JSON object instead of text. Throws UserError for a file that is not a valid artifact.
void inspectArtifact(const std::string &path, bool json, bool plan);

} // namespace sinter::cli
