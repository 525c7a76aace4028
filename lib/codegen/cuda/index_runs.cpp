#include "index_runs.h"

namespace sinter::codegen::cuda {

RunForm runForm(const ExprRef &e, int variable, int run) {
  if (!usesVariable(e, variable))
    return RunForm::Fixed;
  if (e->kind == ExprKind::Var)
    return RunForm::Unit; // it is the variable
  if (e->kind == ExprKind::Cast && isInteger(e->type) && isInteger(e->operands[0]->type))
    return runForm(e->operands[0], variable, run);
  if (e->kind != ExprKind::Binary)
    return RunForm::Unknown;
  const ExprRef &a = e->operands[0], &b = e->operands[1];
  RunForm left = runForm(a, variable, run), right = runForm(b, variable, run);
  if (left == RunForm::Fixed && right == RunForm::Fixed)
    return RunForm::Fixed;
  auto constantMultiple = [&](const ExprRef &divisor) {
    return divisor->kind == ExprKind::Constant && divisor->intValue > 0 && divisor->intValue % run == 0;
  };
  switch (e->binary) {
  case BinaryOp::Add:
    if (left == RunForm::Unit && right == RunForm::Fixed && multipleOf(b, run))
      return RunForm::Unit;
    if (right == RunForm::Unit && left == RunForm::Fixed && multipleOf(a, run))
      return RunForm::Unit;
    return RunForm::Unknown;
  case BinaryOp::Div:
    return left == RunForm::Unit && constantMultiple(b) ? RunForm::Fixed : RunForm::Unknown;
  case BinaryOp::Rem:
    return left == RunForm::Unit && constantMultiple(b) ? RunForm::Unit : RunForm::Unknown;
  default: return RunForm::Unknown;
  }
}

} // namespace sinter::codegen::cuda
