#include "json.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace sinter::serving {
namespace {

template <typename T> std::string shortest(T value) {
  if (!std::isfinite(value))
    return "null"; // JSON has no spelling for them
  char buffer[64];
  auto [end, status] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  return std::string(buffer, end);
}

} // namespace

std::string quoteJson(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    switch (c) {
    case '"': out += "\\\""; break;
    case '\\': out += "\\\\"; break;
    case '\n': out += "\\n"; break;
    case '\r': out += "\\r"; break;
    case '\t': out += "\\t"; break;
    default:
      if (static_cast<unsigned char>(c) < 0x20) {
        char escaped[8];
        std::snprintf(escaped, sizeof(escaped), "\\u%04x", unsigned(c));
        out += escaped;
      } else {
        out += c;
      }
    }
  }
  return out + "\"";
}

std::string formatFloat(float value) { return shortest(value); }
std::string formatDouble(double value) { return shortest(value); }

} // namespace sinter::serving
