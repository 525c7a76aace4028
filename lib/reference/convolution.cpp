#include "registry.h"

namespace sinter::reference {

void registerConvolutionRules(RuleTable &table) {}

} // namespace sinter::reference
