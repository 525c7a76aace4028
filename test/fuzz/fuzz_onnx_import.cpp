// libFuzzer target: ONNX bytes -> importModelBytes (parse, import, shape inference, folding).
// A UserError is the expected answer to bad bytes; anything else (a crash, a sanitizer report,
// an InternalError or another exception escaping) is a finding.
#include "sinter/frontend/onnx.h"
#include "sinter/support/error.h"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string bytes(reinterpret_cast<const char *>(data), size);
  sinter::onnx::ImportOptions options;
  options.foldLimitElements = 1 << 12; // keep one input's work small
  try {
    sinter::onnx::importModelBytes(bytes, /*baseDirectory=*/"", options, "<fuzz>");
  } catch (const sinter::UserError &) {
  }
  return 0;
}
