// Reference rules for the window functions (opset 17): HannWindow, HammingWindow and
// BlackmanWindow. `size` (a scalar input) samples n = 0 .. size - 1 with N = size when periodic
// (the default) or size - 1 when symmetric:
//   Hann      sin^2(pi n / N)
//   Hamming   alpha - (1 - alpha) cos(2 pi n / N), alpha = 25 / 46
//   Blackman  0.42 - 0.5 cos(2 pi n / N) + 0.08 cos(4 pi n / N)
// in output_datatype (default float). Computed in double, rounded once.
#include "registry.h"
#include "tensor_helpers.h"

#include "sinter/support/error.h"

#include <cmath>
#include <numbers>

namespace sinter::reference {
namespace {

Outputs evalWindow(const Node &node, const Inputs &inputs) {
  const Tensor &sizeInput = requiredInput(node, inputs, 0);
  if (sizeInput.elementCount() != 1)
    userError(node.describe(), ": size must be a scalar");
  int64_t size = sizeInput.getInt(0);
  if (size < 0)
    userError(node.describe(), ": size ", size, " is negative");
  std::optional<DType> dtype = dtypeFromOnnx(int(node.attrInt("output_datatype", 1)));
  if (!dtype)
    userError(node.describe(), ": output_datatype ", node.attrInt("output_datatype", 1),
              " is not a type sinter has");
  double span = node.attrInt("periodic", 1) != 0 ? double(size) : double(size - 1);
  const double pi = std::numbers::pi;
  std::vector<double> values(static_cast<size_t>(size));
  for (int64_t n = 0; n < size; ++n) {
    double phase = double(n) / span;
    double value = 0;
    switch (node.kind()) {
    case OpKind::HannWindow: value = std::pow(std::sin(pi * phase), 2); break;
    case OpKind::HammingWindow: value = 25.0 / 46.0 - (21.0 / 46.0) * std::cos(2 * pi * phase); break;
    default: value = 0.42 - 0.5 * std::cos(2 * pi * phase) + 0.08 * std::cos(4 * pi * phase); break;
    }
    values[size_t(n)] = value;
  }
  return {fromDoubles(*dtype, {size}, values)};
}

} // namespace

void registerSignalRules(RuleTable &table) {
  for (OpKind kind : {OpKind::HannWindow, OpKind::HammingWindow, OpKind::BlackmanWindow})
    table.add(kind, evalWindow);
}

} // namespace sinter::reference
