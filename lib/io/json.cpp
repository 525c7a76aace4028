#include "sinter/io/json.h"

#include "sinter/support/error.h"

#include <charconv>
#include <cmath>

namespace sinter::io {
namespace {

/// Length of the valid UTF-8 sequence starting at text[i], or 0 when it is not valid.
size_t utf8SequenceLength(std::string_view text, size_t i) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  unsigned char lead = byte(i);
  size_t length;
  uint32_t codePoint;
  if (lead < 0x80)
    return 1;
  if (lead >= 0xc2 && lead <= 0xdf) {
    length = 2;
    codePoint = lead & 0x1f;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    length = 3;
    codePoint = lead & 0x0f;
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    length = 4;
    codePoint = lead & 0x07;
  } else {
    return 0;
  }
  if (i + length > text.size())
    return 0;
  for (size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xc0) != 0x80)
      return 0;
    codePoint = (codePoint << 6) | (byte(i + k) & 0x3f);
  }
  // Reject overlong forms, UTF-16 surrogates and code points past U+10FFFF.
  if ((length == 3 && codePoint < 0x800) || (length == 4 && codePoint < 0x10000) ||
      (codePoint >= 0xd800 && codePoint <= 0xdfff) || codePoint > 0x10ffff)
    return 0;
  return length;
}

} // namespace

std::string jsonQuote(std::string_view text) {
  std::string out = "\"";
  for (size_t i = 0; i < text.size();) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x80) {
      size_t length = utf8SequenceLength(text, i);
      if (length == 0) {
        out += "\\ufffd";
        ++i;
      } else {
        out.append(text.substr(i, length));
        i += length;
      }
      continue;
    }
    switch (c) {
    case '"': out += "\\\""; break;
    case '\\': out += "\\\\"; break;
    case '\b': out += "\\b"; break;
    case '\f': out += "\\f"; break;
    case '\n': out += "\\n"; break;
    case '\r': out += "\\r"; break;
    case '\t': out += "\\t"; break;
    default:
      if (c < 0x20 || c == 0x7f) {
        static const char *hex = "0123456789abcdef";
        out += "\\u00";
        out += hex[c >> 4];
        out += hex[c & 15];
      } else {
        out += static_cast<char>(c);
      }
    }
    ++i;
  }
  out += '"';
  return out;
}

void JsonWriter::newline() {
  if (indent_ == 0)
    return;
  out_ += '\n';
  out_.append(stack_.size() * indent_, ' ');
}

void JsonWriter::beforeValue() {
  SINTER_ASSERT(!done_, "JSON value written after the document was complete");
  if (expectingValue_) {
    expectingValue_ = false;
    return;
  }
  if (stack_.empty())
    return;
  Level &level = stack_.back();
  SINTER_ASSERT(!level.isObject, "JSON object member written without a key");
  if (!level.empty)
    out_ += indent_ ? "," : ", ";
  level.empty = false;
  newline();
}

JsonWriter &JsonWriter::key(std::string_view name) {
  SINTER_ASSERT(!stack_.empty() && stack_.back().isObject && !expectingValue_,
                "JSON key outside an object, or two keys in a row");
  Level &level = stack_.back();
  if (!level.empty)
    out_ += indent_ ? "," : ", ";
  level.empty = false;
  newline();
  out_ += jsonQuote(name);
  out_ += ": ";
  expectingValue_ = true;
  return *this;
}

JsonWriter &JsonWriter::beginObject() {
  beforeValue();
  out_ += '{';
  stack_.push_back({true});
  return *this;
}

JsonWriter &JsonWriter::beginArray() {
  beforeValue();
  out_ += '[';
  stack_.push_back({false});
  return *this;
}

void JsonWriter::close(bool isObject) {
  SINTER_ASSERT(!stack_.empty() && stack_.back().isObject == isObject && !expectingValue_,
                "unbalanced JSON ", isObject ? "object" : "array");
  bool empty = stack_.back().empty;
  stack_.pop_back();
  if (!empty)
    newline();
  out_ += isObject ? '}' : ']';
  if (stack_.empty())
    done_ = true;
}

JsonWriter &JsonWriter::endObject() {
  close(true);
  return *this;
}

JsonWriter &JsonWriter::endArray() {
  close(false);
  return *this;
}

JsonWriter &JsonWriter::value(std::string_view text) {
  beforeValue();
  out_ += jsonQuote(text);
  if (stack_.empty())
    done_ = true;
  return *this;
}

JsonWriter &JsonWriter::value(int64_t number) {
  beforeValue();
  out_ += std::to_string(number);
  if (stack_.empty())
    done_ = true;
  return *this;
}

JsonWriter &JsonWriter::value(double number) {
  if (!std::isfinite(number))
    return null();
  beforeValue();
  char buffer[64];
  auto result = std::to_chars(buffer, buffer + sizeof buffer, number);
  out_.append(buffer, result.ptr); // "0.5", "1e+20": both valid JSON numbers
  if (stack_.empty())
    done_ = true;
  return *this;
}

JsonWriter &JsonWriter::value(bool flag) {
  beforeValue();
  out_ += flag ? "true" : "false";
  if (stack_.empty())
    done_ = true;
  return *this;
}

JsonWriter &JsonWriter::null() {
  beforeValue();
  out_ += "null";
  if (stack_.empty())
    done_ = true;
  return *this;
}

const std::string &JsonWriter::str() const {
  SINTER_ASSERT(stack_.empty() && !expectingValue_, "JSON document read before it was complete");
  return out_;
}

} // namespace sinter::io
