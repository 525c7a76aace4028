#include "lowering_rules.h"

namespace sinter::codegen {

void registerContractionLowering(LoweringTable &table) {}

} // namespace sinter::codegen
