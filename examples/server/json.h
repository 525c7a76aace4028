// JSON for the example server and its load generator: the reader is sinter's one JSON reader
// (sinter/io/json_reader.h: header-only, installed beside runtime.hpp), which takes any text and
// either returns the document or throws JsonError saying what is wrong and at which byte; it never
// reads past the text and bounds nesting depth, so a hostile body cannot crash it. The writing
// helpers below are the server's own.
#pragma once

#include "sinter/io/json_reader.h"

#include <string>
#include <string_view>

namespace sinter::serving {

/// One JSON value. Numbers keep their text as well as a double, so integers beyond 2^53 and
/// floats read back exactly (int64 and float64 tensors).
using Json = sinter::io::JsonValue;
using JsonError = sinter::io::JsonError;
using sinter::io::parseJson;

/// Escapes and quotes a string for JSON output.
std::string quoteJson(std::string_view text);

/// The shortest decimal text that reads back to exactly `value` (for float and double).
std::string formatFloat(float value);
std::string formatDouble(double value);

} // namespace sinter::serving
