// SHA-256 (FIPS 180-4), for the model hash a golden folder records (`sinter verify
// --write-golden`): the same digest `sha256sum` and Python's hashlib print.
#pragma once

#include <string>
#include <string_view>

namespace sinter::cli {

/// The digest of `bytes` as 64 lowercase hex digits.
std::string sha256Hex(std::string_view bytes);

} // namespace sinter::cli
