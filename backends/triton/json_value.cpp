#include "json_value.h"

#include "sinter/io/json.h"
#include "sinter/support/error.h"

#include <charconv>

namespace sinter::triton {

/// Recursive descent over RFC 8259 JSON. Depth is bounded so a hostile document cannot exhaust
/// the stack of the server's thread.
class JsonParser {
public:
  explicit JsonParser(std::string_view text) : text_(text) {}

  JsonValue document() {
    JsonValue value = parseValue(0);
    skipSpace();
    if (pos_ != text_.size())
      error("unexpected text after the document");
    return value;
  }

private:
  static constexpr int kMaxDepth = 64;

  [[noreturn]] void error(const char *what) {
    userError("the model configuration is not valid JSON: ", what, " at offset ", pos_);
  }
  void skipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r'))
      ++pos_;
  }
  bool consume(char c) {
    skipSpace();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!consume(c))
      error(c == ':' ? "expected ':'" : c == ',' ? "expected ','" : "expected a closing bracket");
  }
  bool literal(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word)
      return false;
    pos_ += word.size();
    return true;
  }

  JsonValue parseValue(int depth) {
    if (depth > kMaxDepth)
      error("nesting deeper than 64 levels");
    skipSpace();
    if (pos_ >= text_.size())
      error("unexpected end of text");
    JsonValue value;
    char c = text_[pos_];
    if (c == '{') {
      ++pos_;
      value.kind_ = JsonValue::Kind::Object;
      if (consume('}'))
        return value;
      do {
        skipSpace();
        std::string key = parseString();
        expect(':');
        value.members_.emplace_back(std::move(key), parseValue(depth + 1));
      } while (consume(','));
      expect('}');
    } else if (c == '[') {
      ++pos_;
      value.kind_ = JsonValue::Kind::Array;
      if (consume(']'))
        return value;
      do
        value.items_.push_back(parseValue(depth + 1));
      while (consume(','));
      expect(']');
    } else if (c == '"') {
      value.kind_ = JsonValue::Kind::String;
      value.text_ = parseString();
    } else if (literal("true")) {
      value.kind_ = JsonValue::Kind::Bool;
      value.boolean_ = true;
    } else if (literal("false")) {
      value.kind_ = JsonValue::Kind::Bool;
    } else if (literal("null")) {
      value.kind_ = JsonValue::Kind::Null;
    } else {
      value.kind_ = JsonValue::Kind::Number;
      value.text_ = parseNumber();
    }
    return value;
  }

  std::string parseNumber() {
    size_t start = pos_;
    auto digits = [&] {
      size_t first = pos_;
      while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9')
        ++pos_;
      if (pos_ == first)
        error("expected a digit");
    };
    if (text_[pos_] == '-')
      ++pos_;
    digits();
    if (pos_ < text_.size() && text_[pos_] == '.') {
      ++pos_;
      digits();
    }
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-'))
        ++pos_;
      digits();
    }
    return std::string(text_.substr(start, pos_ - start));
  }

  unsigned hexQuad() {
    if (pos_ + 4 > text_.size())
      error("truncated \\u escape");
    unsigned code = 0;
    auto [end, ec] = std::from_chars(text_.data() + pos_, text_.data() + pos_ + 4, code, 16);
    if (ec != std::errc() || end != text_.data() + pos_ + 4)
      error("bad \\u escape");
    pos_ += 4;
    return code;
  }

  static void appendUtf8(std::string &out, unsigned code) {
    if (code < 0x80) {
      out += static_cast<char>(code);
    } else if (code < 0x800) {
      out += static_cast<char>(0xc0 | (code >> 6));
      out += static_cast<char>(0x80 | (code & 0x3f));
    } else if (code < 0x10000) {
      out += static_cast<char>(0xe0 | (code >> 12));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (code & 0x3f));
    } else {
      out += static_cast<char>(0xf0 | (code >> 18));
      out += static_cast<char>(0x80 | ((code >> 12) & 0x3f));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (code & 0x3f));
    }
  }

  std::string parseString() {
    if (pos_ >= text_.size() || text_[pos_] != '"')
      error("expected a string");
    ++pos_;
    std::string out;
    while (true) {
      if (pos_ >= text_.size())
        error("unterminated string");
      char c = text_[pos_++];
      if (c == '"')
        return out;
      if (static_cast<unsigned char>(c) < 0x20)
        error("control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= text_.size())
        error("unterminated escape");
      char e = text_[pos_++];
      switch (e) {
      case '"': out += '"'; break;
      case '\\': out += '\\'; break;
      case '/': out += '/'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case 'u': {
        unsigned code = hexQuad();
        if (code >= 0xd800 && code <= 0xdbff && text_.substr(pos_, 2) == "\\u") {
          pos_ += 2;
          unsigned low = hexQuad();
          if (low < 0xdc00 || low > 0xdfff)
            error("unpaired UTF-16 surrogate");
          code = 0x10000 + ((code - 0xd800) << 10) + (low - 0xdc00);
        } else if (code >= 0xd800 && code <= 0xdfff) {
          error("unpaired UTF-16 surrogate");
        }
        appendUtf8(out, code);
        break;
      }
      default: error("unknown escape");
      }
    }
  }

  std::string_view text_;
  size_t pos_ = 0;
};

JsonValue JsonValue::parse(std::string_view text) { return JsonParser(text).document(); }

JsonValue JsonValue::string(std::string text) {
  JsonValue value;
  value.kind_ = Kind::String;
  value.text_ = std::move(text);
  return value;
}

JsonValue JsonValue::number(int64_t number) {
  JsonValue value;
  value.kind_ = Kind::Number;
  value.text_ = std::to_string(number);
  return value;
}

JsonValue JsonValue::array() {
  JsonValue value;
  value.kind_ = Kind::Array;
  return value;
}

JsonValue JsonValue::object() {
  JsonValue value;
  value.kind_ = Kind::Object;
  return value;
}

std::optional<int64_t> JsonValue::integer() const {
  if (kind_ != Kind::Number && kind_ != Kind::String)
    return std::nullopt;
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text_.data(), text_.data() + text_.size(), value);
  if (ec != std::errc() || end != text_.data() + text_.size())
    return std::nullopt;
  return value;
}

const JsonValue *JsonValue::find(std::string_view key) const {
  for (const auto &[name, value] : members_)
    if (name == key)
      return &value;
  return nullptr;
}

void JsonValue::set(std::string_view key, JsonValue value) {
  for (auto &[name, existing] : members_)
    if (name == key) {
      existing = std::move(value);
      return;
    }
  members_.emplace_back(std::string(key), std::move(value));
}

void JsonValue::dumpTo(std::string &out) const {
  switch (kind_) {
  case Kind::Null: out += "null"; break;
  case Kind::Bool: out += boolean_ ? "true" : "false"; break;
  case Kind::Number: out += text_; break;
  case Kind::String: out += io::jsonQuote(text_); break;
  case Kind::Array:
    out += '[';
    for (size_t i = 0; i < items_.size(); ++i) {
      if (i)
        out += ',';
      items_[i].dumpTo(out);
    }
    out += ']';
    break;
  case Kind::Object:
    out += '{';
    for (size_t i = 0; i < members_.size(); ++i) {
      if (i)
        out += ',';
      out += io::jsonQuote(members_[i].first);
      out += ':';
      members_[i].second.dumpTo(out);
    }
    out += '}';
    break;
  }
}

std::string JsonValue::dump() const {
  std::string out;
  dumpTo(out);
  return out;
}

} // namespace sinter::triton
