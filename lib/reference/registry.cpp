#include "registry.h"

#include "sinter/support/error.h"

namespace sinter::reference {

void RuleTable::add(OpKind kind, EvalFn fn) {
  SINTER_ASSERT(!rules_[static_cast<int>(kind)], "two reference rules for ", opName(kind));
  rules_[static_cast<int>(kind)] = fn;
}

const RuleTable &rules() {
  static const RuleTable table = [] {
    RuleTable table;
    registerElementwiseRules(table);
    registerReductionRules(table);
    registerNormalizationRules(table);
    registerContractionRules(table);
    registerConvolutionRules(table);
    registerDataMovementRules(table);
    registerGatherScatterRules(table);
    registerResizeRules(table);
    registerCreationRules(table);
    registerQuantizationRules(table);
    registerAttentionRules(table);
    registerLossRules(table);
    registerStatefulRules(table);
    registerSignalRules(table);
    registerSelectionRules(table);
    registerRecurrentRules(table);
    registerIntegerMatMulRules(table);
    registerFourierRules(table);
    registerCol2ImRules(table);
    registerDeformConvRules(table);
    registerUniqueRules(table);
    registerTfIdfRules(table);
    registerRoiAlignRules(table);
    registerMaxUnpoolRules(table);
    registerDynamicQuantizationRules(table);
    registerMelRules(table);
    return table;
  }();
  return table;
}

} // namespace sinter::reference
