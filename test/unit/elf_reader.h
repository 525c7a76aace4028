// A small reader of ELF64 shared objects for tests: the libraries a file NEEDs and the symbols it
// exports, read from its section headers (no readelf needed).
#pragma once

#include <string>
#include <vector>

namespace sinter::testing {

struct ElfDynamicInfo {
  std::vector<std::string> needed;  ///< DT_NEEDED entries, in order
  std::vector<std::string> exported; ///< defined global or weak symbols of .dynsym, sorted
};

/// Reads `path`; throws std::runtime_error when it is not a readable little-endian ELF64 file.
ElfDynamicInfo readElfDynamicInfo(const std::string &path);

} // namespace sinter::testing
