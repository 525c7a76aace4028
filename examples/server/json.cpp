#include "json.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace sinter::serving {
namespace {

constexpr int kMaxDepth = 64;

class Parser {
public:
  explicit Parser(std::string_view text) : text_(text) {}

  Json document() {
    Json value = parseValue(0);
    skipSpace();
    if (at_ != text_.size())
      error("unexpected text after the JSON value");
    return value;
  }

private:
  [[noreturn]] void error(const std::string &what) const {
    throw JsonError("malformed JSON at byte " + std::to_string(at_) + ": " + what);
  }
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

  Json parseValue(int depth) {
    if (depth > kMaxDepth)
      error("nested deeper than " + std::to_string(kMaxDepth) + " levels");
    skipSpace();
    if (at_ >= text_.size())
      error("unexpected end of the text");
    Json value;
    char c = text_[at_];
    if (c == '{') {
      ++at_;
      value.kind = Json::Kind::Object;
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
      value.kind = Json::Kind::Array;
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
      value.kind = Json::Kind::String;
      value.text = parseString();
      return value;
    }
    if (c == 't' || c == 'f') {
      value.kind = Json::Kind::Bool;
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

  Json parseNumber() {
    size_t start = at_;
    take('-');
    auto digits = [&] {
      size_t first = at_;
      while (at_ < text_.size() && text_[at_] >= '0' && text_[at_] <= '9')
        ++at_;
      return at_ > first;
    };
    if (!digits())
      error("a number needs digits");
    if (take('.') && !digits())
      error("a number needs digits after '.'");
    if (take('e') || take('E')) {
      if (!take('+'))
        take('-');
      if (!digits())
        error("a number needs digits in its exponent");
    }
    Json value;
    value.kind = Json::Kind::Number;
    value.text = std::string(text_.substr(start, at_ - start));
    auto [end, status] =
        std::from_chars(value.text.data(), value.text.data() + value.text.size(), value.number);
    if (status == std::errc::result_out_of_range)
      value.number = value.text[0] == '-' ? -HUGE_VAL : HUGE_VAL;
    else if (status != std::errc() || end != value.text.data() + value.text.size())
      error("bad number '" + value.text + "'");
    return value;
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

  void appendUtf8(std::string &out, unsigned code) {
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

template <typename T> std::string shortest(T value) {
  if (!std::isfinite(value))
    return "null"; // JSON has no spelling for them
  char buffer[64];
  auto [end, status] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  return std::string(buffer, end);
}

} // namespace

const Json *Json::find(std::string_view key) const {
  for (const auto &[name, value] : members)
    if (name == key)
      return &value;
  return nullptr;
}

Json parseJson(std::string_view text) { return Parser(text).document(); }

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
