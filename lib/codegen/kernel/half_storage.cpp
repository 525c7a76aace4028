// findHalfArithmetic (kernel_ir.h): the check that 16-bit floats are storage only, so every
// kernel computes in f32 and rounds once, when it stores.
#include "sinter/codegen/kernel/kernel_ir.h"

#include <string>
#include <unordered_set>

namespace sinter::codegen {
namespace {

bool isHalf(DType type) { return type == DType::Float16 || type == DType::BFloat16; }

const char *kindName(ExprKind kind) {
  switch (kind) {
  case ExprKind::Constant: return "constant";
  case ExprKind::Var: return "variable";
  case ExprKind::Load: return "load";
  case ExprKind::Unary: return "unary op";
  case ExprKind::Binary: return "binary op";
  case ExprKind::Select: return "select";
  case ExprKind::Cast: return "cast";
  case ExprKind::BitCast: return "bitcast";
  }
  return "expression";
}

/// Conversions and bit reinterpretations: they may read and make 16-bit floats.
bool movesBits(ExprKind kind) { return kind == ExprKind::Cast || kind == ExprKind::BitCast; }

/// A 16-bit float expression must be a load, a cast or a bitcast, and only a cast or a bitcast
/// may read one. Each distinct node is checked once (expressions are DAGs); the first problem in
/// a depth-first walk is the one reported.
std::string checkExpr(const ExprRef &expr, std::unordered_set<const Expr *> &seen) {
  std::string problem;
  auto problemAt = [&](const Expr &node) {
    if (!seen.insert(&node).second)
      return false;
    if (isHalf(node.type) && node.kind != ExprKind::Load && !movesBits(node.kind)) {
      problem = std::string("a ") + kindName(node.kind) + " of type " + std::string(dtypeName(node.type));
      return true;
    }
    for (const ExprRef &operand : node.operands)
      if (!movesBits(node.kind) && isHalf(operand->type)) {
        problem = std::string("a ") + kindName(node.kind) + " reads a " + std::string(dtypeName(operand->type)) +
                  " " + kindName(operand->kind) + " without a cast to f32";
        return true;
      }
    return false;
  };
  anyNode(expr, problemAt);
  return problem;
}

std::string checkStmt(const Stmt &stmt, std::unordered_set<const Expr *> &seen) {
  // A store's value may be 16-bit (the rounding cast); an assignment's may not.
  if (stmt.a) {
    if (stmt.kind == StmtKind::Assign && isHalf(stmt.a->type))
      return "an assignment of a " + std::string(dtypeName(stmt.a->type)) + " value";
    if (std::string problem = checkExpr(stmt.a, seen); !problem.empty())
      return problem;
  }
  if (stmt.b)
    if (std::string problem = checkExpr(stmt.b, seen); !problem.empty())
      return problem;
  for (const std::vector<StmtRef> *list : {&stmt.body, &stmt.orElse})
    for (const StmtRef &child : *list)
      if (std::string problem = checkStmt(*child, seen); !problem.empty())
        return problem;
  return "";
}

} // namespace

std::string findHalfArithmetic(const Kernel &kernel) {
  for (const Variable &variable : kernel.variables)
    if (isHalf(variable.type))
      return "variable '" + variable.name + "' is " + std::string(dtypeName(variable.type));
  std::unordered_set<const Expr *> seen;
  for (const StmtRef &stmt : kernel.body)
    if (std::string problem = checkStmt(*stmt, seen); !problem.empty())
      return problem;
  return "";
}

} // namespace sinter::codegen
