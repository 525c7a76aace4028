// The JSON documents sinter reads back (a golden folder's manifest.json), with typed reads that
// name what a field should have been. Parsed by sinter's one reader (sinter/io/json_reader.h);
// malformed text is a UserError naming the file and the byte offset. The writer is
// sinter/io/json.h.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace sinter::cli {

class JsonValue {
public:
  enum class Kind { Null, Bool, Number, String, Array, Object };

  Kind kind() const { return kind_; }
  bool isNull() const { return kind_ == Kind::Null; }
  /// Typed reads; the wrong kind is a UserError saying what `context` expected.
  bool asBool(const std::string &context) const;
  double asNumber(const std::string &context) const;
  const std::string &asString(const std::string &context) const;
  const std::vector<JsonValue> &asArray(const std::string &context) const;
  /// An object member; a missing member is a UserError naming `context`.
  const JsonValue &at(const std::string &key, const std::string &context) const;
  /// An object member or null when absent (or when this is not an object).
  const JsonValue *find(const std::string &key) const;
  /// Members in key order.
  const std::map<std::string, JsonValue> &members(const std::string &context) const;

private:
  friend JsonValue parseJson(const std::string &text, const std::string &displayName);
  Kind kind_ = Kind::Null;
  bool bool_ = false;
  double number_ = 0;
  std::string string_;
  std::vector<JsonValue> array_;
  std::map<std::string, JsonValue> object_;
};

/// Parses a JSON document; `displayName` names it in errors.
JsonValue parseJson(const std::string &text, const std::string &displayName);

} // namespace sinter::cli
