// Lowering of the creation ops that a kernel computes (the others fold at import): Dropout (an
// identity at inference, its mask all true), EyeLike and OneHot, as injective rules.
#include "lowering_rules.h"

#include "sinter/ir/data_dependence.h"
#include "sinter/support/error.h"

namespace sinter::codegen {
namespace {

/// Dropout at inference only: training_mode (input 2) must be absent or a constant false, or the
/// ratio (input 1) a constant 0; random masks are not generated.
ExprRef dropoutRule(const RuleContext &ctx, int output, const std::vector<ExprRef> &index) {
  const Value *training = ctx.node().numInputs() > 2 ? ctx.node().input(2) : nullptr;
  const Value *ratio = ctx.node().numInputs() > 1 ? ctx.node().input(1) : nullptr;
  bool inference = !training || (training->isConstant() && training->constant().elementCount() == 1 &&
                                 training->constant().getDouble(0) == 0);
  bool noDrop = ratio && ratio->isConstant() && ratio->constant().elementCount() == 1 &&
                ratio->constant().getDouble(0) == 0;
  if (!inference && !noDrop)
    userError(ctx.node().describe(), ": training-mode Dropout (training_mode not a constant false) "
                                     "cannot be compiled",
              bindInputHint(graphInputsFeeding({training, ratio})));
  if (output == 1)
    return boolConstant(true); // inference: the mask keeps everything
  return reshapeRule(ctx, 0, index);
}

/// EyeLike: ones where column = row + k, zeros elsewhere, in the output's type.
ExprRef eyeLikeRule(const RuleContext &ctx, int, const std::vector<ExprRef> &index) {
  if (index.size() != 2)
    userError(ctx.node().describe(), ": the input must be 2-D");
  DType type = ctx.outputType(0);
  ExprRef diagonal = binary(BinaryOp::Eq, index[1], add(index[0], ctx.node().attrInt("k", 0)));
  return select(diagonal, typedConstant(type, 1), typedConstant(type, 0));
}

ExprRef oneHotRule(const RuleContext &ctx, int, const std::vector<ExprRef> &index) {
  int64_t rank = int64_t(index.size());
  int64_t axis = normalizedAxis(ctx.node(), ctx.node().attrInt("axis", -1), rank);
  int64_t depth = ctx.outputDims(0)[axis];
  std::vector<ExprRef> indicesIndex = index;
  indicesIndex.erase(indicesIndex.begin() + axis);
  ExprRef raw = cast(ctx.input(0)(indicesIndex), DType::Int64);
  ExprRef wrapped = select(binary(BinaryOp::Lt, raw, intConstant(0)), add(raw, depth), raw);
  ExprRef hot = binary(BinaryOp::Eq, wrapped, index[axis]);
  ExprRef off = ctx.input(2)({intConstant(0)});
  ExprRef on = ctx.input(2)({intConstant(1)});
  return select(hot, on, off);
}

} // namespace

void registerCreationLowering(LoweringTable &table) {
  table.addInjective(OpKind::Dropout, dropoutRule);
  table.addInjective(OpKind::EyeLike, eyeLikeRule);
  table.addInjective(OpKind::OneHot, oneHotRule);
}

} // namespace sinter::codegen
