// The JSON writer: layout, RFC 8259 string escaping, numbers, and misuse as internal errors.
#include "sinter/io/json.h"
#include "sinter/support/error.h"

#include <gtest/gtest.h>

#include <limits>

using namespace sinter;
using namespace sinter::io;

TEST(Json, QuotesPerRfc8259) {
  EXPECT_EQ(jsonQuote("plain"), "\"plain\"");
  EXPECT_EQ(jsonQuote("a\"b\\c/d"), "\"a\\\"b\\\\c/d\"");
  EXPECT_EQ(jsonQuote("\n\t\r\b\f"), "\"\\n\\t\\r\\b\\f\"");
  EXPECT_EQ(jsonQuote(std::string("\x01\x1f\0", 3)), "\"\\u0001\\u001f\\u0000\"");
  EXPECT_EQ(jsonQuote("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"), // é € 😀 pass through
            "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"");
  // Invalid UTF-8: a lone continuation byte, a truncated sequence, an overlong '/', a surrogate.
  EXPECT_EQ(jsonQuote("\x80"), "\"\\ufffd\"");
  EXPECT_EQ(jsonQuote("\xe2\x82"), "\"\\ufffd\\ufffd\"");
  EXPECT_EQ(jsonQuote("\xc0\xaf"), "\"\\ufffd\\ufffd\"");
  EXPECT_EQ(jsonQuote("\xed\xa0\x80"), "\"\\ufffd\\ufffd\\ufffd\"");
}

TEST(Json, WritesNestedDocumentsInCallOrder) {
  JsonWriter json(0);
  json.beginObject();
  json.key("z").value(int64_t(-3));
  json.key("a").beginArray().value(0.5).value(true).null().value("s").endArray();
  json.key("empty").beginObject().endObject();
  json.key("list").beginArray().endArray();
  json.endObject();
  EXPECT_EQ(json.str(),
            "{\"z\": -3, \"a\": [0.5, true, null, \"s\"], \"empty\": {}, \"list\": []}");

  JsonWriter pretty(2);
  pretty.beginObject().key("a").beginArray().value(1).value(2).endArray().endObject();
  EXPECT_EQ(pretty.str(), "{\n  \"a\": [\n    1,\n    2\n  ]\n}");
}

TEST(Json, NumbersRoundTripAndNonFiniteIsNull) {
  JsonWriter json(0);
  json.beginArray()
      .value(0.1)
      .value(1e300)
      .value(-0.0)
      .value(std::numeric_limits<double>::infinity())
      .value(std::numeric_limits<double>::quiet_NaN())
      .value(std::numeric_limits<int64_t>::min())
      .endArray();
  EXPECT_EQ(json.str(), "[0.1, 1e+300, -0, null, null, -9223372036854775808]");
}

TEST(Json, MisuseIsAnInternalError) {
  JsonWriter valueWithoutKey;
  valueWithoutKey.beginObject();
  EXPECT_THROW(valueWithoutKey.value(1), InternalError);
  JsonWriter keyInArray;
  keyInArray.beginArray();
  EXPECT_THROW(keyInArray.key("k"), InternalError);
  JsonWriter unbalanced;
  unbalanced.beginArray();
  EXPECT_THROW(unbalanced.endObject(), InternalError);
  EXPECT_THROW(unbalanced.str(), InternalError);
}
