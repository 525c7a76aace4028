// libFuzzer target: bytes -> parseNpy and parseNpz (the first byte picks which). UserError is the
// expected answer to malformed files.
#include "sinter/io/npy.h"
#include "sinter/support/error.h"

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  std::string_view bytes(reinterpret_cast<const char *>(data) + 1, size - 1);
  try {
    if (data[0] & 1)
      sinter::io::parseNpz(bytes, "<fuzz>.npz");
    else
      sinter::io::parseNpy(bytes, "<fuzz>.npy");
  } catch (const sinter::UserError &) {
  }
  return 0;
}
