// Progress of the compiler's long phases, for a person watching (`sinter compile` draws one
// updating line per phase on a terminal, plain lines otherwise). Reports may come from worker
// threads (job_pool.h): a callback must be safe to call from several threads at once.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

namespace sinter {

/// `done` of `total` units of a phase: {"NVRTC", "modules", 2, 3}. A phase begins with done 0
/// and ends with done == total; the reports of one phase come in increasing order of done.
struct ProgressEvent {
  std::string phase;
  std::string unit;
  size_t done = 0, total = 0;
};

using ProgressCallback = std::function<void(const ProgressEvent &)>;

} // namespace sinter
