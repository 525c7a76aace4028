// The backends built into this sinter, behind one factory. A backend left out of the build is a
// user error at run time, not a link error (STYLE.md #9). This library links every backend; no
// backend links it, so the factory closes no cycle.
#pragma once

#include "sinter/codegen/backend/backend.h"

#include <memory>

namespace sinter::codegen {

/// Creates the backend for the options' target. Throws UserError when it is not built in.
std::unique_ptr<Backend> createBackend(const TargetOptions &options);

} // namespace sinter::codegen
