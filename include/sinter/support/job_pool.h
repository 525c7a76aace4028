// A pool of worker threads for the compiler's toolchain work (NVRTC, ptxas, LLVM code
// generation): `sinter compile -j N`. Jobs are independent and each writes its own result slot,
// so what they produce does not depend on how many workers ran them or in which order.
#pragma once

#include "sinter/support/progress.h"

#include <cstddef>
#include <functional>

namespace sinter {

/// The host's cores (at least 1): the default of `-j`.
unsigned defaultJobCount();

/// Runs job(0) .. job(count - 1) on min(workers, count) threads (workers 0: defaultJobCount()),
/// and once all have run, rethrows the failure of the lowest-numbered job that failed.
void runJobs(size_t count, unsigned workers, const std::function<void(size_t)> &job);

/// runJobs, reporting to `progress` (may be null) 0 of `count` `unit` of `phase` first and then
/// each job done, in increasing order of the count done.
void runReportedJobs(const ProgressCallback &progress, const char *phase, const char *unit, size_t count,
                     unsigned workers, const std::function<void(size_t)> &job);

} // namespace sinter
