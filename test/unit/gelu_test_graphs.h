// The erf GELU as torch exports it, x * (1 + erf(x / sqrt(2))) * 0.5 over f32[2,8], in text IR:
// five nodes that recognize-gelu turns into one Gelu. Shared by the pass's own tests and the
// pipeline-name tests, which read off the node count whether the pass ran. sqrt(2) is its float32
// rounding, 1.4142135.
#pragma once

#include <string>

namespace sinter::testing {

/// The graph's text; `outputLocation` (for example ` @"gelu"`) is appended to the output node.
/// `sqrt2` and `half` replace the two constants' values, for near misses.
inline std::string erfGeluText(const std::string &outputLocation = "",
                               const std::string &sqrt2 = "1.4142135",
                               const std::string &half = "0.5") {
  return R"(graph @main(%x: f32[2,8]) -> (%y) {
  %sqrt2 = constant f32[] [)" + sqrt2 + R"(]
  %one = constant f32[] [1.0]
  %half = constant f32[] [)" + half + R"(]
  %d = Div(%x, %sqrt2) : f32[2,8]
  %e = Erf(%d) : f32[2,8]
  %a = Add(%e, %one) : f32[2,8]
  %m = Mul(%x, %a) : f32[2,8]
  %y = Mul(%m, %half) : f32[2,8])" +
         outputLocation + R"(
  return
})";
}

} // namespace sinter::testing
