#include "registry.h"

namespace sinter::reference {

void registerCreationRules(RuleTable &table) {}

} // namespace sinter::reference
