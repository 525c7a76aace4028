// Parses the text form (printer.h) back into a Graph.
#pragma once

#include <memory>
#include <string_view>

namespace sinter {

class Graph;

/// Parses one graph. Errors are UserErrors with "line:column: message". Node output types are
/// taken from the text, not inferred; run the verifier to check them.
std::unique_ptr<Graph> parseGraph(std::string_view text);

} // namespace sinter
