// SHA-256 (FIPS 180-4), the same digest `sha256sum` and Python's hashlib print: the model hash a
// golden folder records (`sinter verify --write-golden`) and the kernel cache's keys and entry
// checks (kernel_cache.h).
#pragma once

#include <string>
#include <string_view>

namespace sinter {

/// The digest of `bytes` as 64 lowercase hex digits.
std::string sha256Hex(std::string_view bytes);

} // namespace sinter
