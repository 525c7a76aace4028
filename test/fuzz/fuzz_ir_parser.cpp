// libFuzzer target: text IR -> parseGraph, and a graph that parses prints and parses back to the
// same text (the printer's promise). UserError is the expected answer to bad text.
#include "sinter/ir/graph.h"
#include "sinter/ir/parser.h"
#include "sinter/ir/printer.h"
#include "sinter/support/error.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view text(reinterpret_cast<const char *>(data), size);
  std::unique_ptr<sinter::Graph> graph;
  try {
    graph = sinter::parseGraph(text);
  } catch (const sinter::UserError &) {
    return 0;
  }
  std::string printed = sinter::printGraph(*graph);
  std::unique_ptr<sinter::Graph> again = sinter::parseGraph(printed); // must not throw
  if (sinter::printGraph(*again) != printed)
    std::abort(); // print -> parse -> print is not a fixed point
  return 0;
}
