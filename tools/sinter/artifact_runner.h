// Running a compiled artifact from the CLI: loading it through libsinter_rt with runtime errors
// mapped to sinter's two error channels, its signature as the input-pairing helpers take it, and
// one run on host tensors. `sinter run` and `sinter verify` share these.
#pragma once

#include "sinter/frontend/onnx.h"
#include "sinter/ir/tensor.h"
#include "sinter/runtime.hpp"

#include <string>
#include <vector>

namespace sinter::cli {

/// Loads an artifact; a runtime refusal (not an artifact, another CPU level, no driver) is a
/// UserError with the runtime's message.
rt::Model loadArtifact(const std::string &path);

/// The artifact's inputs (or outputs) as name and type ("f32[1,3,32,32]").
std::vector<onnx::ModelSummary::Port> artifactPorts(const rt::Model &model, bool inputs);

/// Runs the artifact once on host tensors given in signature order and returns its outputs in
/// signature order. `threads`: CPU worker threads (0: one per core). The runtime checks every
/// input; its refusals are UserErrors, its internal errors InternalErrors.
std::vector<Tensor> runArtifactOnce(const rt::Model &model, const std::vector<const Tensor *> &inputs,
                                    int threads);

} // namespace sinter::cli
