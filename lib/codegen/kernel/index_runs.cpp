#include "sinter/codegen/kernel/index_runs.h"

#include <algorithm>
#include <vector>

namespace sinter::codegen {

namespace {

/// The step of a sum, difference or product by a constant whose operands step by `left` and
/// `right`; nullopt for any other operation (a product of two varying terms among them).
std::optional<int64_t> combinedStride(const Expr &e, int64_t left, int64_t right) {
  const ExprRef &a = e.operands[0], &b = e.operands[1];
  switch (e.binary) {
  case BinaryOp::Add: return left + right;
  case BinaryOp::Sub: return left - right;
  case BinaryOp::Mul:
    if (a->kind == ExprKind::Constant)
      return a->intValue * right;
    if (b->kind == ExprKind::Constant)
      return left * b->intValue;
    return std::nullopt;
  default: return std::nullopt;
  }
}

} // namespace

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

std::optional<int64_t> linearStride(const ExprRef &e, int variable) {
  if (!usesVariable(e, variable))
    return 0;
  if (e->kind == ExprKind::Var)
    return 1; // it is the variable
  if (e->kind == ExprKind::Cast && isInteger(e->type) && isInteger(e->operands[0]->type))
    return linearStride(e->operands[0], variable);
  if (e->kind != ExprKind::Binary)
    return std::nullopt;
  std::optional<int64_t> left = linearStride(e->operands[0], variable), right = linearStride(e->operands[1], variable);
  if (!left || !right)
    return std::nullopt;
  return combinedStride(*e, *left, *right);
}

std::optional<int64_t> runStride(const ExprRef &e, int variable, int run) {
  if (!usesVariable(e, variable))
    return 0;
  if (e->kind == ExprKind::Var)
    return 1; // it is the variable
  if (e->kind == ExprKind::Cast && isInteger(e->type) && isInteger(e->operands[0]->type))
    return runStride(e->operands[0], variable, run);
  if (e->kind == ExprKind::Binary && (e->binary == BinaryOp::Div || e->binary == BinaryOp::Rem)) {
    switch (runForm(e, variable, run)) {
    case RunForm::Fixed: return 0;
    case RunForm::Unit: return 1;
    case RunForm::Unknown: return std::nullopt;
    }
  }
  std::vector<std::optional<int64_t>> strides;
  for (const ExprRef &operand : e->operands)
    strides.push_back(runStride(operand, variable, run));
  if (std::all_of(strides.begin(), strides.end(), [](const std::optional<int64_t> &s) { return s == 0; }))
    return 0;
  if (e->kind != ExprKind::Binary || !strides[0] || !strides[1])
    return std::nullopt;
  return combinedStride(*e, *strides[0], *strides[1]);
}

std::optional<StridedGather> stridedGather(const ExprRef &value, DType stored, int variable, int run) {
  StridedGather gather;
  const Expr *read = value.get();
  if (read->kind == ExprKind::Select) {
    const ExprRef &zero = read->operands[2];
    if (zero->kind != ExprKind::Constant || zero->floatValue != 0 || zero->intValue != 0 ||
        runStride(read->operands[0], variable, run) != 0)
      return std::nullopt;
    gather.test = read->operands[0];
    read = read->operands[1].get();
  }
  const Expr *load = read->kind == ExprKind::Cast ? read->operands[0].get() : read;
  if (load->kind != ExprKind::Load || (load != read && read->type != DType::Float32))
    return std::nullopt;
  // The element as stored in the slice (16-bit patterns, or f32), or an f32 rounded when stored.
  if (load->type != stored && load->type != DType::Float32)
    return std::nullopt;
  std::optional<int64_t> stride = runStride(load->operands[0], variable, run);
  if (!stride)
    return std::nullopt;
  gather.load = load;
  gather.stride = *stride;
  return gather;
}

} // namespace sinter::codegen
