#include "sinter/codegen/lowering/contraction.h"

#include "lowering_rules.h"
#include "sinter/support/error.h"

namespace sinter::codegen {

bool isContraction(const Node &node) {
  return node.kind() == OpKind::MatMul || node.kind() == OpKind::Gemm || node.kind() == OpKind::Conv;
}

std::optional<Contraction> lowerContraction(const KernelGroup &group) {
  if (!soleCoreNode(group, isContraction))
    return std::nullopt;
  KernelBuilder builder(group.name);
  GroupBuffers buffers = declareGroupBuffers(group, builder);
  ContractionSpec spec;
  lowerGroupNodes(group, builder, buffers, [&](const RuleContext &context) {
    spec = describeContraction(context);
  });
  SINTER_ASSERT(spec.type != DType::Float16 && spec.type != DType::BFloat16, "contraction ", group.name,
                " accumulates in ", dtypeName(spec.type), "; 16-bit floats are storage only");
  builder.kernel().flops = spec.flops();
  return Contraction{builder.take(), std::move(spec)};
}

bool worthTiling(const ContractionSpec &spec) {
  return spec.m >= 16 && spec.n >= 16 && spec.k >= 16;
}

} // namespace sinter::codegen
