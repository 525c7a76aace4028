#include "sinter/ir/op_attributes.h"

#include "sinter/ir/graph.h"
#include "sinter/support/error.h"

#include <string>

namespace sinter {

float normalizationEpsilon(const Node &node) { return node.attrFloat("epsilon", 1e-5f); }

ScatterReduction scatterReduction(const Node &node) {
  std::string name = node.attrString("reduction", "none");
  if (name == "none")
    return ScatterReduction::None;
  if (name == "add")
    return ScatterReduction::Add;
  if (name == "mul")
    return ScatterReduction::Mul;
  if (name == "max")
    return ScatterReduction::Max;
  if (name == "min")
    return ScatterReduction::Min;
  userError(node.describe(), ": unknown reduction '", name, "'");
}

} // namespace sinter
