// How `sinter compile` shows the compiler's progress (support/progress.h). On a terminal: one
// line per phase, redrawn in place with its count and elapsed time ("ptxas 3/8 cubins 1.2 s"),
// left standing when the phase ends. Otherwise (a log, a CI job): one plain line per phase when
// it ends ("sinter: info: ptxas: 8 cubins in 2.41 s").
#pragma once

#include "sinter/support/progress.h"

#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>

namespace sinter::cli {

class ProgressLine {
public:
  /// Draws on `stream` (stderr), in place when `terminal`.
  ProgressLine(std::FILE *stream, bool terminal) : stream_(stream), terminal_(terminal) {}

  void report(const ProgressEvent &event);

  /// A callback for CompileOptions that reports to stderr, drawing in place when stderr is a
  /// terminal.
  static ProgressCallback forStderr();

private:
  using Clock = std::chrono::steady_clock;
  std::FILE *stream_;
  bool terminal_;
  std::mutex lock_;
  std::string phase_;           ///< the phase being drawn, "" when none
  Clock::time_point start_{};   ///< when it began
  Clock::time_point drawn_{};   ///< when its line was last drawn
};

} // namespace sinter::cli
