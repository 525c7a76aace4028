#include "lowering_rules.h"

namespace sinter::codegen {

void registerReductionLowering(LoweringTable &table) {}

} // namespace sinter::codegen
