// The text form of the IR. It prints and parses back losslessly (parser.h); pass tests are
// written in it. Grammar, by example:
//
//   graph @main(%x: f32[batch,3,8,8]) -> (%y) {
//     %w = constant f32[4,3,3,3] dense<"0x0000803F...">        // raw little-endian bytes
//     %k = constant i64[2] [1, -1]                              // small constants as values
//     %y = Conv(%x, %w, _) {pads = [1, 1, 1, 1], strides = [1, 1]} : f32[batch,4,8,8] @"conv1"
//     return
//   }
//
// Names that are not [A-Za-z0-9_.]+ are quoted: %"/layer1/Conv_output_0". `_` is an absent
// optional input. `@"name"` after the types is the node's name. Floats print in the shortest form
// that reads back to the same bits (with nan/inf spelled out); tensors of more than 16 elements
// or of 16-bit floats print as hex bytes.
#pragma once

#include <string>

namespace sinter {

class Graph;

struct PrintOptions {
  /// Replace constants above this many bytes by "dense<elided N bytes>" (not parseable; for dumps
  /// such as --dump-ir-after). Zero prints everything.
  size_t elideConstantsAbove = 0;
};

std::string printGraph(const Graph &graph, const PrintOptions &options = {});

} // namespace sinter
