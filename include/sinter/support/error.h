// Two error channels, one mechanism each (see docs/architecture.md, "Errors").
//
//  * UserError: the input or the command line is wrong. The message says what and where
//    (file, node, op, opset) and how to fix it when that is known. The CLI exits 1.
//  * InternalError: a broken invariant inside sinter. The message names the invariant and,
//    where known, the pass. The CLI exits 2.
//
// Raise them with userError(...) and SINTER_ASSERT(cond, ...); never throw other types across
// library boundaries.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace sinter {

class UserError : public std::runtime_error {
public:
  explicit UserError(const std::string &message) : std::runtime_error(message) {}
};

class InternalError : public std::logic_error {
public:
  explicit InternalError(const std::string &message) : std::logic_error(message) {}
};

namespace detail {
template <typename... Args> std::string concat(Args &&...args) {
  std::ostringstream stream;
  (stream << ... << std::forward<Args>(args));
  return stream.str();
}
[[noreturn]] void throwInternal(const char *file, int line, const char *condition,
                                const std::string &message);
} // namespace detail

/// Throws a UserError whose message is the concatenation of the arguments.
template <typename... Args> [[noreturn]] void userError(Args &&...args) {
  throw UserError(detail::concat(std::forward<Args>(args)...));
}

} // namespace sinter

/// Checks an internal invariant; on failure throws InternalError naming the condition.
#define SINTER_ASSERT(condition, ...)                                                          \
  do {                                                                                         \
    if (!(condition))                                                                          \
      ::sinter::detail::throwInternal(__FILE__, __LINE__, #condition,                          \
                                      ::sinter::detail::concat("" __VA_OPT__(, ) __VA_ARGS__)); \
  } while (false)
