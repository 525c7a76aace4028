// A small JSON reader and writer for the example server and its load generator: enough of RFC 8259
// for the KServe v2 inference protocol's bodies. parse() takes any text and either returns the
// document or throws JsonError saying what is wrong and at which byte; it never reads past the
// text, and bounds nesting depth, so a hostile body cannot crash it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace sinter::serving {

class JsonError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// One JSON value. Numbers keep their text as well as a double, so integers beyond 2^53 and
/// floats read back exactly (int64 and float64 tensors).
struct Json {
  enum class Kind { Null, Bool, Number, String, Array, Object };
  Kind kind = Kind::Null;
  bool boolean = false;
  double number = 0;
  std::string text; ///< a string's value, or a number's spelling
  std::vector<Json> items;                          ///< Array
  std::vector<std::pair<std::string, Json>> members; ///< Object, in document order

  /// The member `key` of an object, or null when absent (or not an object).
  const Json *find(std::string_view key) const;
  bool isNumber() const { return kind == Kind::Number; }
  bool isString() const { return kind == Kind::String; }
  bool isArray() const { return kind == Kind::Array; }
  bool isObject() const { return kind == Kind::Object; }
};

/// Parses one JSON document (surrounding whitespace allowed); throws JsonError.
Json parseJson(std::string_view text);

/// Escapes and quotes a string for JSON output.
std::string quoteJson(std::string_view text);

/// The shortest decimal text that reads back to exactly `value` (for float and double).
std::string formatFloat(float value);
std::string formatDouble(double value);

} // namespace sinter::serving
