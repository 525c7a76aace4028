// Lexical rules of the IR's text form, shared by the printer and the parser (printer.h has the
// grammar). Kept in one place so that what the printer leaves bare the lexer reads back.
#pragma once

#include <cstdint>
#include <string_view>

namespace sinter::text {

/// Characters of a bare value name (%x), graph or node name (@x) and identifier tail.
inline bool isNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.';
}

/// First character of an identifier (op names, dtypes, keywords, attribute names, symbols).
inline bool isIdentifierStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

/// True when a value, graph or node name can be printed after % or @ without quotes.
inline bool isBareName(std::string_view name) {
  if (name.empty())
    return false;
  for (char c : name)
    if (!isNameChar(c))
      return false;
  return true;
}

/// True when an identifier (a dim symbol or an attribute name) can be printed without quotes.
inline bool isBareIdentifier(std::string_view name) {
  return !name.empty() && isIdentifierStart(name[0]) && isBareName(name);
}

/// The NaNs spelled plain "nan"; any other NaN is spelled with its bits, "nan(0x7FC00001)".
inline constexpr uint32_t kCanonicalNanBits32 = 0x7FC00000u;
inline constexpr uint64_t kCanonicalNanBits64 = 0x7FF8000000000000ull;

/// Constants and tensor attributes with more elements than this print as hex bytes.
inline constexpr int64_t kMaxListedElements = 16;

} // namespace sinter::text
