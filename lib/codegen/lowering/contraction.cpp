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

void setContractionRanges(IndexRanges &ranges, const ContractionSpec &spec) {
  ranges.setVariable(spec.b, {0, spec.batch - 1});
  ranges.setVariable(spec.i, {0, spec.m - 1});
  ranges.setVariable(spec.j, {0, spec.n - 1});
  ranges.setVariable(spec.r, {0, spec.k - 1});
}

Contraction withSimplifiedIndices(const Contraction &contraction) {
  IndexRanges ranges(contraction.kernel);
  setContractionRanges(ranges, contraction.spec);
  Contraction simplified = contraction;
  simplified.spec.lhs = ranges.simplify(contraction.spec.lhs);
  simplified.spec.rhs = ranges.simplify(contraction.spec.rhs);
  for (StmtRef &statement : simplified.spec.epilogue)
    statement = ranges.simplify(statement);
  return simplified;
}

bool worthTiling(const ContractionSpec &spec) {
  return spec.m >= 16 && spec.n >= 16 && spec.k >= 16;
}

} // namespace sinter::codegen
