#include "json_value.h"

#include "sinter/io/json_reader.h"
#include "sinter/support/error.h"

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

JsonValue parseJson(const std::string &text, const std::string &displayName) {
  io::JsonValue document;
  try {
    document = io::parseJson(text);
  } catch (const io::JsonError &error) {
    userError(displayName, ": ", error.what());
  }
  // Into the CLI's tree: members by key (the first of a repeated key, as find() reads it).
  static_assert(int(JsonValue::Kind::Object) == int(io::JsonValue::Kind::Object));
  auto convert = [](auto &self, io::JsonValue &from) -> JsonValue {
    JsonValue to;
    to.kind_ = static_cast<JsonValue::Kind>(from.kind);
    to.bool_ = from.boolean;
    to.number_ = from.number;
    if (from.kind == io::JsonValue::Kind::String)
      to.string_ = std::move(from.text);
    for (io::JsonValue &item : from.items)
      to.array_.push_back(self(self, item));
    for (auto &[key, member] : from.members)
      if (!to.object_.count(key))
        to.object_.emplace(key, self(self, member));
    return to;
  };
  return convert(convert, document);
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
