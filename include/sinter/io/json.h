// A small, deterministic JSON writer for machine-readable CLI output (`sinter inspect --json`).
//
// Output depends only on the calls made: keys appear in call order, numbers print in the shortest
// form that reads back to the same double (non-finite doubles print as null, since JSON has no
// spelling for them), and strings are escaped per RFC 8259 (quotes, backslashes and control
// characters; bytes that are not valid UTF-8 become U+FFFD so the output is always valid JSON).
//
//   JsonWriter json;
//   json.beginObject();
//   json.key("name").value("resnet");
//   json.key("inputs").beginArray().value(1).value(2).endArray();
//   json.endObject();
//   std::string text = json.str(); // {"name": "resnet", "inputs": [1, 2]} (pretty-printed)
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sinter::io {

/// Escapes a string as a JSON string literal, quotes included.
std::string jsonQuote(std::string_view text);

class JsonWriter {
public:
  /// `indent` spaces per level; 0 writes everything on one line.
  explicit JsonWriter(int indent = 2) : indent_(indent) {}

  JsonWriter &beginObject();
  JsonWriter &endObject();
  JsonWriter &beginArray();
  JsonWriter &endArray();
  /// The next member's key; only inside an object, and each key must be followed by one value.
  JsonWriter &key(std::string_view name);
  JsonWriter &value(std::string_view text);
  JsonWriter &value(const char *text) { return value(std::string_view(text)); }
  JsonWriter &value(const std::string &text) { return value(std::string_view(text)); }
  JsonWriter &value(int64_t number);
  JsonWriter &value(int number) { return value(static_cast<int64_t>(number)); }
  JsonWriter &value(double number);
  JsonWriter &value(bool flag);
  JsonWriter &null();

  /// The document; only valid once every object and array is closed.
  const std::string &str() const;

private:
  struct Level {
    bool isObject;
    bool empty = true;
  };
  void beforeValue();
  void newline();
  void close(bool isObject);

  int indent_;
  std::string out_;
  std::vector<Level> stack_;
  bool expectingValue_ = false; ///< a key was written and awaits its value
  bool done_ = false;
};

} // namespace sinter::io
