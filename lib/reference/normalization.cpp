#include "registry.h"

namespace sinter::reference {

void registerNormalizationRules(RuleTable &table) {}

} // namespace sinter::reference
