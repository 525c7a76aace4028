#include "lowering_rules.h"

namespace sinter::codegen {

void registerNormalizationLowering(LoweringTable &table) {}

} // namespace sinter::codegen
