#include "lowering_rules.h"

namespace sinter::codegen {

void registerDataMovementLowering(LoweringTable &table) {}

} // namespace sinter::codegen
