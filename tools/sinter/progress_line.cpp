#include "progress_line.h"

#include <spdlog/spdlog.h>

#include <unistd.h>

namespace sinter::cli {

void ProgressLine::report(const ProgressEvent &event) {
  std::lock_guard<std::mutex> guard(lock_);
  const Clock::time_point now = Clock::now();
  if (event.phase != phase_) {
    if (terminal_ && !phase_.empty())
      std::fputc('\n', stream_); // a phase that ended without its last report keeps its line
    phase_ = event.phase;
    start_ = now;
    drawn_ = Clock::time_point{};
  }
  const bool last = event.done >= event.total;
  const double seconds = std::chrono::duration<double>(now - start_).count();
  if (terminal_) {
    // Redraw at most 20 times a second, and always for the last report.
    if (!last && now - drawn_ < std::chrono::milliseconds(50))
      return;
    drawn_ = now;
    std::fprintf(stream_, "\r\033[K%s %zu/%zu %s %.1f s%s", event.phase.c_str(), event.done,
                 event.total, event.unit.c_str(), seconds, last ? "\n" : "");
    std::fflush(stream_);
  } else if (last) {
    spdlog::info("{}: {} {} in {:.2f} s", event.phase, event.total, event.unit, seconds);
  }
  if (last)
    phase_.clear();
}

ProgressCallback ProgressLine::forStderr() {
  auto line = std::make_shared<ProgressLine>(stderr, ::isatty(STDERR_FILENO) != 0);
  return [line](const ProgressEvent &event) { line->report(event); };
}

} // namespace sinter::cli
