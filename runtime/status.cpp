#include "status.h"

namespace sinter::rt {
namespace {
thread_local std::string lastErrorMessage;
} // namespace

void setLastError(const std::string &message) {
  try {
    lastErrorMessage = message;
  } catch (...) {
    lastErrorMessage.clear(); // no memory for the message: keep the status, drop the text
  }
}

const char *lastError() { return lastErrorMessage.c_str(); }

} // namespace sinter::rt
