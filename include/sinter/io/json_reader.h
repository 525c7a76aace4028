// The one JSON reader of sinter, beside the writer (sinter/io/json.h): RFC 8259 documents into a
// tree of values. Used by the CLI (a golden folder's manifest.json), the Triton backend (the
// server's model configuration) and the example server (KServe v2 request bodies).
//
// Header-only and standalone (the C++ standard library, nothing of sinter), so each of them
// compiles it in: the Triton backend keeps needing glibc and libsinter_rt only, and the examples,
// which build against an installed sinter, find it installed beside runtime.hpp.
//
// parseJson takes any text and either returns the document or throws JsonError saying what is
// wrong and at which byte; it never reads past the text and bounds nesting depth (64), so a
// hostile document cannot crash it. Numbers keep their spelling as well as a double, so integers
// beyond 2^53 and floats read back exactly; object members keep their document order.
#pragma once

#include <charconv>
#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace sinter::io {

/// Malformed JSON: what() is "malformed JSON at byte OFFSET: REASON".
class JsonError : public std::runtime_error {
public:
  JsonError(size_t offset, const std::string &reason)
      : std::runtime_error("malformed JSON at byte " + std::to_string(offset) + ": " + reason),
        offset_(offset), reason_(reason) {}
  size_t offset() const { return offset_; }
  const std::string &reason() const { return reason_; }

private:
  size_t offset_;
  std::string reason_;
};

/// One JSON value.
struct JsonValue {
  enum class Kind { Null, Bool, Number, String, Array, Object };
  Kind kind = Kind::Null;
  bool boolean = false;
  double number = 0; ///< a number's value (+-HUGE_VAL beyond double's range)
  std::string text;  ///< a string's value, or a number's spelling
  std::vector<JsonValue> items;                           ///< Array
  std::vector<std::pair<std::string, JsonValue>> members; ///< Object, in document order

  /// The first member named `key` of an object, or null when absent (or not an object).
  const JsonValue *find(std::string_view key) const {
    for (const auto &[name, value] : members)
      if (name == key)
        return &value;
    return nullptr;
  }
  bool isNull() const { return kind == Kind::Null; }
  bool isBool() const { return kind == Kind::Bool; }
  bool isNumber() const { return kind == Kind::Number; }
  bool isString() const { return kind == Kind::String; }
  bool isArray() const { return kind == Kind::Array; }
  bool isObject() const { return kind == Kind::Object; }
};

namespace json_detail {

class Parser {
public:
  static constexpr int kMaxDepth = 64;

  explicit Parser(std::string_view text) : text_(text) {}

  JsonValue document() {
    JsonValue value = parseValue(0);
    skipSpace();
    if (at_ != text_.size())
      error("unexpected text after the JSON value");
    return value;
  }

private:
  [[noreturn]] void error(const std::string &reason) const { throw JsonError(at_, reason); }
  void skipSpace() {
    while (at_ < text_.size() && (text_[at_] == ' ' || text_[at_] == '\t' || text_[at_] == '\n' ||
                                  text_[at_] == '\r'))
      ++at_;
  }
  bool take(char c) {
    if (at_ < text_.size() && text_[at_] == c) {
      ++at_;
      return true;
    }
    return false;
  }
  void expect(char c, const char *where) {
    if (!take(c))
      error(std::string("expected '") + c + "' " + where);
  }
  void literal(std::string_view word) {
    if (text_.substr(at_, word.size()) != word)
      error("unknown literal");
    at_ += word.size();
  }

  JsonValue parseValue(int depth) {
    if (depth > kMaxDepth)
      error("nested deeper than " + std::to_string(kMaxDepth) + " levels");
    skipSpace();
    if (at_ >= text_.size())
      error("unexpected end of the text");
    JsonValue value;
    char c = text_[at_];
    if (c == '{') {
      ++at_;
      value.kind = JsonValue::Kind::Object;
      skipSpace();
      if (take('}'))
        return value;
      for (;;) {
        skipSpace();
        if (at_ >= text_.size() || text_[at_] != '"')
          error("expected a member name in quotes");
        std::string key = parseString();
        skipSpace();
        expect(':', "after a member name");
        value.members.emplace_back(std::move(key), parseValue(depth + 1));
        skipSpace();
        if (take('}'))
          return value;
        expect(',', "or '}' after an object member");
      }
    }
    if (c == '[') {
      ++at_;
      value.kind = JsonValue::Kind::Array;
      skipSpace();
      if (take(']'))
        return value;
      for (;;) {
        value.items.push_back(parseValue(depth + 1));
        skipSpace();
        if (take(']'))
          return value;
        expect(',', "or ']' after an array element");
      }
    }
    if (c == '"') {
      value.kind = JsonValue::Kind::String;
      value.text = parseString();
      return value;
    }
    if (c == 't' || c == 'f') {
      value.kind = JsonValue::Kind::Bool;
      value.boolean = c == 't';
      literal(value.boolean ? "true" : "false");
      return value;
    }
    if (c == 'n') {
      literal("null");
      return value;
    }
    if (c == '-' || (c >= '0' && c <= '9'))
      return parseNumber();
    error(std::string("unexpected character '") + c + "'");
  }

  /// RFC 8259's grammar: -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?
  JsonValue parseNumber() {
    size_t start = at_;
    take('-');
    auto digits = [&] {
      size_t first = at_;
      while (at_ < text_.size() && text_[at_] >= '0' && text_[at_] <= '9')
        ++at_;
      return at_ - first;
    };
    size_t integerStart = at_;
    size_t integerDigits = digits();
    if (integerDigits == 0)
      error("a number needs digits");
    if (integerDigits > 1 && text_[integerStart] == '0') {
      at_ = integerStart;
      error("a number has a leading zero");
    }
    if (take('.') && digits() == 0)
      error("a number needs digits after '.'");
    if (take('e') || take('E')) {
      if (!take('+'))
        take('-');
      if (digits() == 0)
        error("a number needs digits in its exponent");
    }
    JsonValue value;
    value.kind = JsonValue::Kind::Number;
    value.text = std::string(text_.substr(start, at_ - start));
    auto [end, status] =
        std::from_chars(value.text.data(), value.text.data() + value.text.size(), value.number);
    if (status == std::errc::result_out_of_range) {
      // Beyond double's range: +-infinity when large, +-0 when tiny (1e-400).
      value.number = decimalExponent(value.text) < 0 ? 0.0 : HUGE_VAL;
      if (value.text[0] == '-')
        value.number = -value.number;
    } else if (status != std::errc() || end != value.text.data() + value.text.size()) {
      at_ = start;
      error("bad number '" + value.text + "'");
    }
    return value;
  }

  /// The power of ten of a well-formed number's first significant digit (0 for 1.5, -3 for
  /// 0.002, 400 for 1e400); only its sign matters, so it saturates instead of overflowing.
  static long decimalExponent(const std::string &number) {
    size_t at = number[0] == '-' ? 1 : 0;
    long position = 0; // of the next digit, counting integer digits down from -1 after the point
    long integerDigits = 0;
    long first = 0;
    bool found = false;
    for (; at < number.size() && number[at] != 'e' && number[at] != 'E'; ++at) {
      if (number[at] == '.') {
        integerDigits = position;
        continue;
      }
      if (!found && number[at] != '0')
        found = true, first = position;
      ++position;
    }
    if (number.find('.') == std::string::npos)
      integerDigits = position;
    if (!found)
      return 0; // zero is never out of range
    long exponent = 0;
    if (at < number.size()) {
      size_t digit = at + 1 + (number[at + 1] == '+' || number[at + 1] == '-');
      for (; digit < number.size() && exponent < 100000; ++digit)
        exponent = exponent * 10 + (number[digit] - '0');
      if (number[at + 1] == '-')
        exponent = -exponent;
    }
    return integerDigits - 1 - first + exponent;
  }

  unsigned hex4() {
    if (at_ + 4 > text_.size())
      error("a \\u escape needs four hex digits");
    unsigned code = 0;
    for (int i = 0; i < 4; ++i) {
      char h = text_[at_++];
      code <<= 4;
      if (h >= '0' && h <= '9')
        code |= unsigned(h - '0');
      else if (h >= 'a' && h <= 'f')
        code |= unsigned(h - 'a' + 10);
      else if (h >= 'A' && h <= 'F')
        code |= unsigned(h - 'A' + 10);
      else
        error("a \\u escape needs four hex digits");
    }
    return code;
  }

  static void appendUtf8(std::string &out, unsigned code) {
    if (code < 0x80) {
      out += char(code);
    } else if (code < 0x800) {
      out += char(0xC0 | (code >> 6));
      out += char(0x80 | (code & 0x3F));
    } else if (code < 0x10000) {
      out += char(0xE0 | (code >> 12));
      out += char(0x80 | ((code >> 6) & 0x3F));
      out += char(0x80 | (code & 0x3F));
    } else {
      out += char(0xF0 | (code >> 18));
      out += char(0x80 | ((code >> 12) & 0x3F));
      out += char(0x80 | ((code >> 6) & 0x3F));
      out += char(0x80 | (code & 0x3F));
    }
  }

  std::string parseString() {
    ++at_; // the opening quote
    std::string out;
    for (;;) {
      if (at_ >= text_.size())
        error("unterminated string");
      char c = text_[at_++];
      if (c == '"')
        return out;
      if (static_cast<unsigned char>(c) < 0x20)
        error("a control character inside a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (at_ >= text_.size())
        error("unterminated string");
      char escape = text_[at_++];
      switch (escape) {
      case '"': out += '"'; break;
      case '\\': out += '\\'; break;
      case '/': out += '/'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case 'u': {
        unsigned code = hex4();
        if (code >= 0xD800 && code < 0xDC00 && text_.substr(at_, 2) == "\\u") {
          at_ += 2;
          unsigned low = hex4();
          if (low < 0xDC00 || low >= 0xE000)
            error("an unpaired surrogate in a \\u escape");
          code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
        } else if (code >= 0xD800 && code < 0xE000) {
          error("an unpaired surrogate in a \\u escape");
        }
        appendUtf8(out, code);
        break;
      }
      default:
        error(std::string("unknown escape '\\") + escape + "'");
      }
    }
  }

  std::string_view text_;
  size_t at_ = 0;
};

} // namespace json_detail

/// Parses one JSON document (surrounding whitespace allowed); throws JsonError.
inline JsonValue parseJson(std::string_view text) { return json_detail::Parser(text).document(); }

} // namespace sinter::io
