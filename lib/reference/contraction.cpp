#include "registry.h"

namespace sinter::reference {

void registerContractionRules(RuleTable &table) {}

} // namespace sinter::reference
