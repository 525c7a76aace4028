#include "registry.h"

namespace sinter::reference {

void registerElementwiseRules(RuleTable &table) {}

} // namespace sinter::reference
