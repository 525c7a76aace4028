#include "registry.h"

namespace sinter::reference {

void registerDataMovementRules(RuleTable &table) {}

} // namespace sinter::reference
