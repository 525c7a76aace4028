#include "sinter/support/error.h"

namespace sinter::detail {

void throwInternal(const char *file, int line, const char *condition, const std::string &message) {
  std::string text = concat("internal invariant broken: ", condition);
  if (!message.empty())
    text += concat(": ", message);
  text += concat(" (", file, ":", line, ")");
  throw InternalError(text);
}

} // namespace sinter::detail
