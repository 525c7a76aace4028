#include "registry.h"

#include "sinter/support/error.h"

namespace sinter::reference {

void RuleTable::add(OpKind kind, EvalFn fn) {
  registrar_.admit(kind);
  SINTER_ASSERT(!rules_[static_cast<int>(kind)], "two reference rules for ", opName(kind));
  rules_[static_cast<int>(kind)] = fn;
}

const RuleTable &rules() {
  static const RuleTable table = [] {
    RuleTable table;
    table.registerFamily(OpFamily::Elementwise, registerElementwiseRules);
    table.registerFamily(OpFamily::Contraction, registerContractionRules);
    table.registerFamily(OpFamily::Convolution, registerConvolutionRules);
    table.registerFamily(OpFamily::Convolution, registerDeformConvRules);
    table.registerFamily(OpFamily::Convolution, registerCol2ImRules);
    table.registerFamily(OpFamily::Pooling, registerPoolingRules);
    table.registerFamily(OpFamily::Pooling, registerMaxUnpoolRules);
    table.registerFamily(OpFamily::Normalization, registerNormalizationRules);
    table.registerFamily(OpFamily::Reduction, registerReductionRules);
    table.registerFamily(OpFamily::DataMovement, registerDataMovementRules);
    table.registerFamily(OpFamily::Indexing, registerIndexingRules);
    table.registerFamily(OpFamily::Resampling, registerResamplingRules);
    table.registerFamily(OpFamily::Creation, registerCreationRules);
    table.registerFamily(OpFamily::Attention, registerAttentionRules);
    table.registerFamily(OpFamily::Recurrent, registerRecurrentRules);
    table.registerFamily(OpFamily::Recurrent, registerStatefulRecurrentRules);
    table.registerFamily(OpFamily::Loss, registerLossRules);
    table.registerFamily(OpFamily::Quantization, registerQuantizationRules);
    table.registerFamily(OpFamily::Quantization, registerQuantizedMatMulRules);
    table.registerFamily(OpFamily::Quantization, registerDynamicQuantizationRules);
    table.registerFamily(OpFamily::Signal, registerSignalRules);
    table.registerFamily(OpFamily::Signal, registerFourierRules);
    table.registerFamily(OpFamily::Signal, registerMelRules);
    table.registerFamily(OpFamily::Detection, registerDetectionRules);
    table.registerFamily(OpFamily::Detection, registerRoiAlignRules);
    table.registerFamily(OpFamily::Counting, registerUniqueRules);
    table.registerFamily(OpFamily::Counting, registerTfIdfRules);
    return table;
  }();
  return table;
}

} // namespace sinter::reference
