#include "json_value.h"

#include "sinter/support/error.h"

#include <charconv>
#include <cstdlib>

namespace sinter::cli {

namespace {
const char *kindName(JsonValue::Kind kind) {
  switch (kind) {
  case JsonValue::Kind::Null: return "null";
  case JsonValue::Kind::Bool: return "a boolean";
  case JsonValue::Kind::Number: return "a number";
  case JsonValue::Kind::String: return "a string";
  case JsonValue::Kind::Array: return "an array";
  case JsonValue::Kind::Object: return "an object";
  }
  return "?";
}
} // namespace

class JsonParser {
public:
  JsonParser(const std::string &text, const std::string &name) : text_(text), name_(name) {}

  JsonValue document() {
    JsonValue value = parseValue(0);
    skipSpace();
    if (position_ != text_.size())
      fail("text after the JSON value");
    return value;
  }

private:
  [[noreturn]] void fail(const std::string &what) {
    userError(name_, ": malformed JSON at byte ", position_, ": ", what);
  }
  void skipSpace() {
    while (position_ < text_.size() && (text_[position_] == ' ' || text_[position_] == '\n' ||
                                        text_[position_] == '\r' || text_[position_] == '\t'))
      ++position_;
  }
  bool consume(char c) {
    skipSpace();
    if (position_ < text_.size() && text_[position_] == c) {
      ++position_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!consume(c))
      fail(std::string("expected '") + c + "'");
  }
  bool literal(const char *word) {
    size_t length = std::char_traits<char>::length(word);
    if (text_.compare(position_, length, word) != 0)
      return false;
    position_ += length;
    return true;
  }

  JsonValue parseValue(int depth) {
    if (depth > 64)
      fail("nested too deeply");
    skipSpace();
    if (position_ >= text_.size())
      fail("unexpected end");
    JsonValue value;
    char c = text_[position_];
    if (c == '{') {
      ++position_;
      value.kind_ = JsonValue::Kind::Object;
      if (consume('}'))
        return value;
      do {
        skipSpace();
        std::string key = parseString();
        expect(':');
        value.object_[key] = parseValue(depth + 1);
      } while (consume(','));
      expect('}');
    } else if (c == '[') {
      ++position_;
      value.kind_ = JsonValue::Kind::Array;
      if (consume(']'))
        return value;
      do
        value.array_.push_back(parseValue(depth + 1));
      while (consume(','));
      expect(']');
    } else if (c == '"') {
      value.kind_ = JsonValue::Kind::String;
      value.string_ = parseString();
    } else if (literal("true")) {
      value.kind_ = JsonValue::Kind::Bool;
      value.bool_ = true;
    } else if (literal("false")) {
      value.kind_ = JsonValue::Kind::Bool;
    } else if (literal("null")) {
      value.kind_ = JsonValue::Kind::Null;
    } else {
      size_t start = position_;
      while (position_ < text_.size() && std::string_view("+-0123456789.eE").find(text_[position_]) !=
                                             std::string_view::npos)
        ++position_;
      std::string number = text_.substr(start, position_ - start);
      char *end = nullptr;
      value.number_ = std::strtod(number.c_str(), &end);
      if (number.empty() || *end != '\0') {
        position_ = start;
        fail("expected a value");
      }
      value.kind_ = JsonValue::Kind::Number;
    }
    return value;
  }

  void appendUtf8(std::string &out, uint32_t code) {
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
  uint32_t hex4() {
    if (position_ + 4 > text_.size())
      fail("truncated \\u escape");
    uint32_t code = 0;
    auto result = std::from_chars(text_.data() + position_, text_.data() + position_ + 4, code, 16);
    if (result.ptr != text_.data() + position_ + 4)
      fail("bad \\u escape");
    position_ += 4;
    return code;
  }
  std::string parseString() {
    if (position_ >= text_.size() || text_[position_] != '"')
      fail("expected a string");
    ++position_;
    std::string out;
    while (true) {
      if (position_ >= text_.size())
        fail("unterminated string");
      char c = text_[position_++];
      if (c == '"')
        return out;
      if (static_cast<unsigned char>(c) < 0x20)
        fail("control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (position_ >= text_.size())
        fail("unterminated escape");
      char e = text_[position_++];
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
        uint32_t code = hex4();
        if (code >= 0xD800 && code < 0xDC00 && text_.compare(position_, 2, "\\u") == 0) {
          position_ += 2;
          uint32_t low = hex4();
          code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
        }
        appendUtf8(out, code);
        break;
      }
      default: fail(std::string("unknown escape \\") + e);
      }
    }
  }

  const std::string &text_;
  const std::string &name_;
  size_t position_ = 0;
};

JsonValue parseJson(const std::string &text, const std::string &displayName) {
  return JsonParser(text, displayName).document();
}

bool JsonValue::asBool(const std::string &context) const {
  if (kind_ != Kind::Bool)
    userError(context, " should be a boolean, not ", kindName(kind_));
  return bool_;
}
double JsonValue::asNumber(const std::string &context) const {
  if (kind_ != Kind::Number)
    userError(context, " should be a number, not ", kindName(kind_));
  return number_;
}
const std::string &JsonValue::asString(const std::string &context) const {
  if (kind_ != Kind::String)
    userError(context, " should be a string, not ", kindName(kind_));
  return string_;
}
const std::vector<JsonValue> &JsonValue::asArray(const std::string &context) const {
  if (kind_ != Kind::Array)
    userError(context, " should be an array, not ", kindName(kind_));
  return array_;
}
const std::map<std::string, JsonValue> &JsonValue::members(const std::string &context) const {
  if (kind_ != Kind::Object)
    userError(context, " should be an object, not ", kindName(kind_));
  return object_;
}
const JsonValue &JsonValue::at(const std::string &key, const std::string &context) const {
  const std::map<std::string, JsonValue> &object = members(context);
  auto it = object.find(key);
  if (it == object.end())
    userError(context, " has no \"", key, "\"");
  return it->second;
}
const JsonValue *JsonValue::find(const std::string &key) const {
  if (kind_ != Kind::Object)
    return nullptr;
  auto it = object_.find(key);
  return it == object_.end() ? nullptr : &it->second;
}

} // namespace sinter::cli
