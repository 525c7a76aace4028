// A JSON document tree for Triton's model configuration: parsed from the server's
// TRITONSERVER_Message, edited (auto-complete), and written back for TRITONBACKEND_ModelSetConfig.
// Numbers keep the text they were read with, so a round trip changes no value, and members keep
// their order. Malformed text is a BackendError naming the offset.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sinter::triton {

class JsonValue {
public:
  enum class Kind { Null, Bool, Number, String, Array, Object };

  JsonValue() = default;
  static JsonValue parse(std::string_view text);
  static JsonValue string(std::string text);
  static JsonValue number(int64_t value);
  static JsonValue array();
  static JsonValue object();

  Kind kind() const { return kind_; }
  bool isObject() const { return kind_ == Kind::Object; }
  bool isArray() const { return kind_ == Kind::Array; }
  /// The text of a string, or the literal of a number.
  const std::string &text() const { return text_; }
  bool boolean() const { return boolean_; }
  /// A number, or a string holding an integer (protobuf's JSON spells int64 fields as strings);
  /// nullopt for anything else.
  std::optional<int64_t> integer() const;

  const std::vector<JsonValue> &items() const { return items_; }
  void push(JsonValue value) { items_.push_back(std::move(value)); }
  /// The member `key` of an object, or null when absent (or when this is not an object).
  const JsonValue *find(std::string_view key) const;
  /// Sets member `key`, replacing a member of that name in place or appending a new one.
  void set(std::string_view key, JsonValue value);

  /// The document as compact JSON.
  std::string dump() const;

private:
  void dumpTo(std::string &out) const;

  Kind kind_ = Kind::Null;
  bool boolean_ = false;
  std::string text_;
  std::vector<JsonValue> items_;
  std::vector<std::pair<std::string, JsonValue>> members_;
  friend class JsonParser;
};

} // namespace sinter::triton
