#include "json_value.h"

#include "sinter/io/json.h"
#include "sinter/io/json_reader.h"
#include "sinter/support/error.h"

#include <charconv>

namespace sinter::triton {

/// Parses with sinter's one JSON reader (sinter/io/json_reader.h, header-only, so the backend
/// still needs glibc and libsinter_rt only; it bounds depth, so a hostile document cannot exhaust
/// the stack of the server's thread), then moves the document into this editable tree.
class JsonParser {
public:
  static JsonValue document(std::string_view text) {
    io::JsonValue parsed;
    try {
      parsed = io::parseJson(text);
    } catch (const io::JsonError &error) {
      userError("the model configuration is not valid JSON: ", error.reason(), " at offset ",
                error.offset());
    }
    return convert(parsed);
  }

private:
  static JsonValue convert(io::JsonValue &from) {
    JsonValue to;
    static_assert(int(JsonValue::Kind::Object) == int(io::JsonValue::Kind::Object));
    to.kind_ = static_cast<JsonValue::Kind>(from.kind);
    to.boolean_ = from.boolean;
    to.text_ = std::move(from.text); // a string's text, a number's literal
    for (io::JsonValue &item : from.items)
      to.items_.push_back(convert(item));
    for (auto &[key, member] : from.members)
      to.members_.emplace_back(std::move(key), convert(member));
    return to;
  }
};

JsonValue JsonValue::parse(std::string_view text) { return JsonParser::document(text); }

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
