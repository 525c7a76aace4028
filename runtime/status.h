// Errors inside libsinter_rt: code throws RuntimeError (a status and a message); each C entry
// point runs its body under guardCall, which turns any exception into a status and the calling
// thread's last-error message. Nothing throws across the C ABI.
#pragma once

#include "sinter/runtime.h"
#include "sinter/support/error.h"

#include <new>
#include <stdexcept>
#include <string>
#include <utility>

namespace sinter::rt {

class RuntimeError : public std::runtime_error {
public:
  RuntimeError(sinter_status status, const std::string &message)
      : std::runtime_error(message), status_(status) {}
  sinter_status status() const { return status_; }

private:
  sinter_status status_;
};

/// Throws a RuntimeError whose message is the concatenation of the arguments.
template <typename... Args> [[noreturn]] void fail(sinter_status status, Args &&...args) {
  throw RuntimeError(status, detail::concat(std::forward<Args>(args)...));
}

/// Records `message` as the calling thread's last error.
void setLastError(const std::string &message);
/// The calling thread's last error ("" if none).
const char *lastError();

/// Runs `body`; returns SINTER_OK, or the status of the exception it threw with its message
/// recorded as the last error. UserError (corrupt artifact bytes) maps to INVALID_ARTIFACT,
/// std::bad_alloc to OUT_OF_MEMORY and anything else to INTERNAL.
template <typename Body> sinter_status guardCall(Body &&body) noexcept {
  try {
    body();
    return SINTER_OK;
  } catch (const RuntimeError &error) {
    setLastError(error.what());
    return error.status();
  } catch (const UserError &error) {
    setLastError(error.what());
    return SINTER_ERROR_INVALID_ARTIFACT;
  } catch (const std::bad_alloc &) {
    setLastError("out of host memory");
    return SINTER_ERROR_OUT_OF_MEMORY;
  } catch (const std::exception &error) {
    setLastError(std::string("internal error: ") + error.what());
    return SINTER_ERROR_INTERNAL;
  } catch (...) {
    setLastError("internal error: unknown exception");
    return SINTER_ERROR_INTERNAL;
  }
}

} // namespace sinter::rt
