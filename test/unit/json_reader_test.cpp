// sinter's one JSON reader (sinter/io/json_reader.h), which the CLI, the Triton backend and the
// example server share: values per RFC 8259 (expected values written from the RFC and the Unicode
// encodings, not from the reader), numbers' spellings kept, out-of-range numbers, every class of
// malformed text with the byte it names, and every truncation of a document an error, never a
// read past the text.
#include "sinter/io/json_reader.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>

using sinter::io::JsonError;
using sinter::io::JsonValue;
using sinter::io::parseJson;

namespace {

/// The error parseJson gives for `text`, as "OFFSET: REASON"; "" when it parses.
std::string errorOf(const std::string &text) {
  try {
    parseJson(text);
  } catch (const JsonError &error) {
    EXPECT_EQ(std::string(error.what()),
              "malformed JSON at byte " + std::to_string(error.offset()) + ": " + error.reason());
    return std::to_string(error.offset()) + ": " + error.reason();
  }
  return "";
}

TEST(JsonReader, ValuesKindsAndOrder) {
  JsonValue doc = parseJson(" {\"z\": [1, -2.5e3, true, false, null, \"a\\\"b\\\\c\\/\\n\\t\"],"
                            " \"a\": {}, \"m\": []}\n");
  ASSERT_TRUE(doc.isObject());
  ASSERT_EQ(doc.members.size(), 3u);
  EXPECT_EQ(doc.members[0].first, "z"); // document order, not key order
  EXPECT_EQ(doc.members[1].first, "a");
  EXPECT_EQ(doc.members[2].first, "m");
  const JsonValue &list = *doc.find("z");
  ASSERT_TRUE(list.isArray());
  ASSERT_EQ(list.items.size(), 6u);
  EXPECT_EQ(list.items[0].number, 1.0);
  EXPECT_EQ(list.items[1].number, -2500.0);
  EXPECT_EQ(list.items[1].text, "-2.5e3");
  EXPECT_TRUE(list.items[2].isBool() && list.items[2].boolean);
  EXPECT_TRUE(list.items[3].isBool() && !list.items[3].boolean);
  EXPECT_TRUE(list.items[4].isNull());
  EXPECT_EQ(list.items[5].text, "a\"b\\c/\n\t");
  EXPECT_TRUE(doc.find("a")->isObject() && doc.find("a")->members.empty());
  EXPECT_TRUE(doc.find("m")->isArray() && doc.find("m")->items.empty());
  EXPECT_EQ(doc.find("missing"), nullptr);
  EXPECT_EQ(list.find("z"), nullptr); // not an object
  // A repeated key: find() reads the first.
  EXPECT_EQ(parseJson("{\"k\": 1, \"k\": 2}").find("k")->number, 1.0);
  EXPECT_TRUE(parseJson("null").isNull());
  EXPECT_EQ(parseJson("\"\"").text, "");
}

TEST(JsonReader, UnicodeEscapesBecomeUtf8) {
  // U+00E9 is C3 A9; U+20AC is E2 82 AC; U+1F600 (the pair D83D DE00) is F0 9F 98 80.
  EXPECT_EQ(parseJson("\"\\u00e9\\u20AC\\ud83d\\ude00\\u0041\"").text,
            "\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80" "A");
  EXPECT_EQ(parseJson("\"\xC3\xA9\"").text, "\xC3\xA9"); // raw UTF-8 passes through
}

TEST(JsonReader, NumbersKeepTheirSpellingAndSaturate) {
  JsonValue big = parseJson("123456789012345678901");
  EXPECT_EQ(big.text, "123456789012345678901");
  EXPECT_EQ(big.number, 123456789012345678901.0);
  EXPECT_EQ(parseJson("-0").text, "-0");
  EXPECT_TRUE(std::signbit(parseJson("-0").number));
  EXPECT_EQ(parseJson("0.1").number, 0.1);
  EXPECT_EQ(parseJson("1E+2").number, 100.0);
  // Beyond double's range: infinity when large, zero (with the sign) when tiny.
  EXPECT_EQ(parseJson("1e400").number, HUGE_VAL);
  EXPECT_EQ(parseJson("-1e400").number, -HUGE_VAL);
  EXPECT_EQ(parseJson("1" + std::string(400, '0')).number, HUGE_VAL);
  EXPECT_EQ(parseJson("1e-400").number, 0.0);
  JsonValue tiny = parseJson("-0." + std::string(400, '0') + "1");
  EXPECT_EQ(tiny.number, 0.0);
  EXPECT_TRUE(std::signbit(tiny.number));
  EXPECT_EQ(parseJson("0.00001e-400").number, 0.0);
  EXPECT_EQ(parseJson("1000e-402").number, 0.0);
  EXPECT_EQ(parseJson("100000e305").number, HUGE_VAL);
}

TEST(JsonReader, MalformedTextNamesTheByteAndWhat) {
  EXPECT_EQ(errorOf(""), "0: unexpected end of the text");
  EXPECT_EQ(errorOf("   "), "3: unexpected end of the text");
  EXPECT_EQ(errorOf("[1,]"), "3: unexpected character ']'");
  EXPECT_EQ(errorOf("[1 2]"), "3: expected ',' or ']' after an array element");
  EXPECT_EQ(errorOf("{\"a\" 1}"), "5: expected ':' after a member name");
  EXPECT_EQ(errorOf("{a: 1}"), "1: expected a member name in quotes");
  EXPECT_EQ(errorOf("{\"a\": 1,}"), "8: expected a member name in quotes");
  EXPECT_EQ(errorOf("1 2"), "2: unexpected text after the JSON value");
  EXPECT_EQ(errorOf("01"), "0: a number has a leading zero");
  EXPECT_EQ(errorOf("-"), "1: a number needs digits");
  EXPECT_EQ(errorOf("1."), "2: a number needs digits after '.'");
  EXPECT_EQ(errorOf("1e"), "2: a number needs digits in its exponent");
  EXPECT_EQ(errorOf("+1"), "0: unexpected character '+'");
  EXPECT_EQ(errorOf("tru"), "0: unknown literal");
  EXPECT_EQ(errorOf("nul"), "0: unknown literal");
  EXPECT_EQ(errorOf("\"abc"), "4: unterminated string");
  EXPECT_EQ(errorOf("\"a\nb\""), "3: a control character inside a string");
  EXPECT_EQ(errorOf("\"\\x\""), "3: unknown escape '\\x'");
  EXPECT_EQ(errorOf("\"\\u12\""), "3: a \\u escape needs four hex digits");
  EXPECT_EQ(errorOf("\"\\ud800\""), "7: an unpaired surrogate in a \\u escape");
  EXPECT_EQ(errorOf("\"\\ude00\""), "7: an unpaired surrogate in a \\u escape");
  EXPECT_EQ(errorOf("\"\\ud800\\u0041\""), "13: an unpaired surrogate in a \\u escape");
  // Depth is bounded: 65 nested arrays parse, 66 do not.
  EXPECT_EQ(errorOf(std::string(65, '[') + std::string(65, ']')), "");
  EXPECT_EQ(errorOf(std::string(66, '[') + std::string(66, ']')),
            "65: nested deeper than 64 levels");
  EXPECT_EQ(errorOf(std::string(100000, '[')), "65: nested deeper than 64 levels");
}

TEST(JsonReader, EveryTruncationIsAnErrorWithinTheText) {
  const std::string document =
      "{\"inputs\": [{\"name\": \"x\\u00e9\", \"shape\": [1, 64], \"data\": [0.5, -1e-3, true]}],"
      " \"id\": \"\\ud83d\\ude00\", \"n\": null}";
  ASSERT_EQ(errorOf(document), "");
  for (size_t length = 0; length < document.size(); ++length) {
    // An exact-size copy, so a read past the text is a read past the allocation (ASan's build
    // reports it).
    std::unique_ptr<char[]> exact(new char[length ? length : 1]);
    std::copy(document.begin(), document.begin() + std::ptrdiff_t(length), exact.get());
    try {
      parseJson(std::string_view(exact.get(), length));
      ADD_FAILURE() << "a truncation to " << length << " bytes parsed";
    } catch (const JsonError &error) {
      EXPECT_LE(error.offset(), length);
    }
  }
}

} // namespace
