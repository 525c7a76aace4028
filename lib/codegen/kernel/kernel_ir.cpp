#include "sinter/codegen/kernel/kernel_ir.h"

#include "sinter/codegen/kernel/low_precision_cast.h"
#include "sinter/ir/low_precision.h"
#include "sinter/support/error.h"

#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

namespace sinter::codegen {

const char *unaryOpName(UnaryOp op) {
  static const char *const kNames[] = {
      "neg",  "not",  "bitnot", "abs",   "sign",  "exp",   "log",   "sqrt",      "erf",   "tanh",
      "sigmoid", "normal_cdf", "sin", "cos",  "tan",   "asin",  "acos",  "atan",  "sinh",      "cosh",  "asinh",
      "acosh", "atanh", "floor", "ceil", "round_even", "trunc", "isnan", "isinf"};
  return kNames[static_cast<int>(op)];
}

const char *binaryOpName(BinaryOp op) {
  static const char *const kNames[] = {"add", "sub", "mul", "div", "rem", "min", "max",
                                       "pow", "and", "or",  "xor", "shl", "shr", "lt",
                                       "le",  "gt",  "ge",  "eq",  "ne",  "land", "lor"};
  return kNames[static_cast<int>(op)];
}

bool isComparison(BinaryOp op) {
  switch (op) {
  case BinaryOp::Lt: case BinaryOp::Le: case BinaryOp::Gt: case BinaryOp::Ge:
  case BinaryOp::Eq: case BinaryOp::Ne: case BinaryOp::LogicalAnd: case BinaryOp::LogicalOr:
    return true;
  default:
    return false;
  }
}

static std::shared_ptr<Expr> make(ExprKind kind, DType type) {
  auto expr = std::make_shared<Expr>();
  expr->kind = kind;
  expr->type = type;
  return expr;
}

static bool isIntConstant(const ExprRef &e) {
  return e->kind == ExprKind::Constant && !isFloat(e->type) && e->type != DType::Bool;
}

ExprRef constant(DType type, double value) {
  auto expr = make(ExprKind::Constant, type);
  if (isFloat(type))
    expr->floatValue = value;
  else if (isLowPrecisionFloat(type))
    expr->intValue = encodeLowPrecisionFloat(type, value);
  else if (isLowPrecisionInteger(type))
    expr->intValue = int8_t(truncateToLowPrecisionInteger(type, value));
  else
    expr->intValue = static_cast<int64_t>(value);
  return expr;
}

ExprRef intConstant(int64_t value, DType type) {
  auto expr = make(ExprKind::Constant, type);
  expr->intValue = value;
  return expr;
}

ExprRef boolConstant(bool value) { return intConstant(value ? 1 : 0, DType::Bool); }

ExprRef var(int id, DType type) {
  auto expr = make(ExprKind::Var, type);
  expr->id = id;
  return expr;
}

ExprRef load(int buffer, DType type, ExprRef index) {
  SINTER_ASSERT(index->type == DType::Int64, "load index must be i64");
  auto expr = make(ExprKind::Load, type);
  expr->id = buffer;
  expr->operands = {std::move(index)};
  return expr;
}

ExprRef unary(UnaryOp op, ExprRef a) {
  DType type = (op == UnaryOp::IsNaN || op == UnaryOp::IsInf) ? DType::Bool : a->type;
  auto expr = make(ExprKind::Unary, type);
  expr->unary = op;
  expr->operands = {std::move(a)};
  return expr;
}

ExprRef binary(BinaryOp op, ExprRef a, ExprRef b) {
  SINTER_ASSERT(a->type == b->type, "binary ", binaryOpName(op), " of ", dtypeName(a->type), " and ",
                dtypeName(b->type));
  if (isIntConstant(a) && isIntConstant(b)) {
    int64_t x = a->intValue, y = b->intValue;
    switch (op) {
    case BinaryOp::Add: return intConstant(x + y, a->type);
    case BinaryOp::Sub: return intConstant(x - y, a->type);
    case BinaryOp::Mul: return intConstant(x * y, a->type);
    case BinaryOp::Div: if (y != 0) return intConstant(x / y, a->type); break;
    case BinaryOp::Rem: if (y != 0) return intConstant(x % y, a->type); break;
    default: break;
    }
  }
  // Identities that keep index arithmetic on static shapes short.
  if (a->type == DType::Int64) {
    if (op == BinaryOp::Add && isIntConstant(b) && b->intValue == 0) return a;
    if (op == BinaryOp::Add && isIntConstant(a) && a->intValue == 0) return b;
    if (op == BinaryOp::Sub && isIntConstant(b) && b->intValue == 0) return a;
    if (op == BinaryOp::Mul && isIntConstant(b) && b->intValue == 1) return a;
    if (op == BinaryOp::Mul && isIntConstant(a) && a->intValue == 1) return b;
    if (op == BinaryOp::Mul && ((isIntConstant(b) && b->intValue == 0) ||
                                (isIntConstant(a) && a->intValue == 0)))
      return intConstant(0);
    if (op == BinaryOp::Div && isIntConstant(b) && b->intValue == 1) return a;
    if (op == BinaryOp::Rem && isIntConstant(b) && b->intValue == 1) return intConstant(0);
  }
  auto expr = make(ExprKind::Binary, isComparison(op) ? DType::Bool : a->type);
  expr->binary = op;
  expr->operands = {std::move(a), std::move(b)};
  return expr;
}

ExprRef select(ExprRef condition, ExprRef ifTrue, ExprRef ifFalse) {
  SINTER_ASSERT(condition->type == DType::Bool, "select condition must be bool");
  SINTER_ASSERT(ifTrue->type == ifFalse->type, "select arms differ in type");
  auto expr = make(ExprKind::Select, ifTrue->type);
  expr->operands = {std::move(condition), std::move(ifTrue), std::move(ifFalse)};
  return expr;
}

ExprRef cast(ExprRef a, DType type) {
  if (a->type == type)
    return a;
  if (isLowPrecision(a->type) || isLowPrecision(type))
    return castLowPrecision(std::move(a), type, LowPrecisionRounding{});
  if (isIntConstant(a) && !isFloat(type) && type != DType::Bool)
    return intConstant(a->intValue, type);
  auto expr = make(ExprKind::Cast, type);
  expr->operands = {std::move(a)};
  return expr;
}

ExprRef bitcast(ExprRef a, DType type) {
  SINTER_ASSERT(dtypeSize(a->type) == dtypeSize(type) && a->type != DType::Bool && type != DType::Bool,
                "bitcast from ", dtypeName(a->type), " to ", dtypeName(type));
  if (a->type == type)
    return a;
  auto expr = make(ExprKind::BitCast, type);
  expr->operands = {std::move(a)};
  return expr;
}

ExprRef add(ExprRef a, ExprRef b) { return binary(BinaryOp::Add, std::move(a), std::move(b)); }
ExprRef sub(ExprRef a, ExprRef b) { return binary(BinaryOp::Sub, std::move(a), std::move(b)); }
ExprRef mul(ExprRef a, ExprRef b) { return binary(BinaryOp::Mul, std::move(a), std::move(b)); }
ExprRef div(ExprRef a, ExprRef b) { return binary(BinaryOp::Div, std::move(a), std::move(b)); }
ExprRef rem(ExprRef a, ExprRef b) { return binary(BinaryOp::Rem, std::move(a), std::move(b)); }
ExprRef add(ExprRef a, int64_t b) { return add(std::move(a), intConstant(b)); }
ExprRef mul(ExprRef a, int64_t b) { return mul(std::move(a), intConstant(b)); }
ExprRef div(ExprRef a, int64_t b) { return div(std::move(a), intConstant(b)); }
ExprRef rem(ExprRef a, int64_t b) { return rem(std::move(a), intConstant(b)); }

static std::shared_ptr<Stmt> makeStmt(StmtKind kind) {
  auto stmt = std::make_shared<Stmt>();
  stmt->kind = kind;
  return stmt;
}

StmtRef store(int buffer, ExprRef index, ExprRef value) {
  SINTER_ASSERT(index->type == DType::Int64, "store index must be i64");
  auto stmt = makeStmt(StmtKind::Store);
  stmt->id = buffer;
  stmt->a = std::move(index);
  stmt->b = std::move(value);
  return stmt;
}

StmtRef block(std::vector<StmtRef> body) {
  auto stmt = makeStmt(StmtKind::Block);
  stmt->body = std::move(body);
  return stmt;
}

StmtRef assign(int variable, ExprRef value) {
  auto stmt = makeStmt(StmtKind::Assign);
  stmt->id = variable;
  stmt->a = std::move(value);
  return stmt;
}

StmtRef forLoop(int variable, ExprRef extent, std::vector<StmtRef> body) {
  auto stmt = makeStmt(StmtKind::For);
  stmt->id = variable;
  stmt->a = std::move(extent);
  stmt->body = std::move(body);
  return stmt;
}

StmtRef parallelLoop(int variable, ExprRef extent, std::vector<StmtRef> body) {
  auto stmt = makeStmt(StmtKind::For);
  stmt->loop = LoopKind::Parallel;
  stmt->id = variable;
  stmt->a = std::move(extent);
  stmt->body = std::move(body);
  return stmt;
}

bool anyNode(const ExprRef &e, const std::function<bool(const Expr &)> &predicate) {
  std::unordered_set<const Expr *> seen;
  std::vector<const Expr *> pending = {e.get()};
  while (!pending.empty()) {
    const Expr *node = pending.back();
    pending.pop_back();
    if (!seen.insert(node).second)
      continue;
    if (predicate(*node))
      return true;
    for (auto operand = node->operands.rbegin(); operand != node->operands.rend(); ++operand)
      pending.push_back(operand->get());
  }
  return false;
}

namespace {

bool equalOnce(const Expr *a, const Expr *b, std::set<std::pair<const Expr *, const Expr *>> &equal) {
  if (a == b)
    return true;
  if (equal.count({a, b}))
    return true;
  if (a->kind != b->kind || a->type != b->type || a->id != b->id || a->intValue != b->intValue ||
      !(a->floatValue == b->floatValue || (a->floatValue != a->floatValue && b->floatValue != b->floatValue)) ||
      a->unary != b->unary || a->binary != b->binary || a->operands.size() != b->operands.size())
    return false;
  for (size_t x = 0; x < a->operands.size(); ++x)
    if (!equalOnce(a->operands[x].get(), b->operands[x].get(), equal))
      return false;
  equal.insert({a, b});
  return true;
}

} // namespace

bool structurallyEqual(const ExprRef &a, const ExprRef &b) {
  std::set<std::pair<const Expr *, const Expr *>> equal;
  return equalOnce(a.get(), b.get(), equal);
}

bool usesVariable(const ExprRef &e, int id) {
  if (e->kind == ExprKind::Var)
    return e->id == id;
  if (e->kind == ExprKind::Constant)
    return false;
  return anyNode(e, [id](const Expr &node) { return node.kind == ExprKind::Var && node.id == id; });
}

namespace {

/// substituted() with each distinct node rewritten once, so shared subtrees stay shared.
ExprRef substitutedOnce(const ExprRef &e, int id, const ExprRef &value,
                        std::unordered_map<const Expr *, ExprRef> &done) {
  if (e->kind == ExprKind::Var)
    return e->id == id ? value : e;
  if (e->operands.empty())
    return e;
  if (auto found = done.find(e.get()); found != done.end())
    return found->second;
  std::vector<ExprRef> operands;
  bool changed = false;
  for (const ExprRef &operand : e->operands) {
    operands.push_back(substitutedOnce(operand, id, value, done));
    changed |= operands.back() != operand;
  }
  ExprRef result = e;
  if (changed) {
    auto copy = std::make_shared<Expr>(*e);
    copy->operands = std::move(operands);
    result = copy;
  }
  done[e.get()] = result;
  return result;
}

} // namespace

ExprRef substituted(const ExprRef &e, int id, const ExprRef &value) {
  std::unordered_map<const Expr *, ExprRef> done;
  return substitutedOnce(e, id, value, done);
}

StmtRef substituted(const StmtRef &statement, int id, const ExprRef &value) {
  return withExpressions(statement, [&](const ExprRef &e) { return substituted(e, id, value); });
}

StmtRef withExpressions(const StmtRef &statement, const std::function<ExprRef(const ExprRef &)> &rewrite) {
  auto copy = std::make_shared<Stmt>(*statement);
  if (copy->a)
    copy->a = rewrite(copy->a);
  if (copy->b)
    copy->b = rewrite(copy->b);
  for (StmtRef &inner : copy->body)
    inner = withExpressions(inner, rewrite);
  for (StmtRef &inner : copy->orElse)
    inner = withExpressions(inner, rewrite);
  return copy;
}

bool multipleOf(const ExprRef &e, int64_t n) {
  if (e->kind == ExprKind::Constant)
    return e->intValue % n == 0;
  if (e->kind != ExprKind::Binary)
    return false;
  switch (e->binary) {
  case BinaryOp::Mul: return multipleOf(e->operands[0], n) || multipleOf(e->operands[1], n);
  case BinaryOp::Add:
  case BinaryOp::Sub: return multipleOf(e->operands[0], n) && multipleOf(e->operands[1], n);
  default: return false;
  }
}

BinaryOp reductionOp(const Stmt &assignment) { return assignment.a->binary; }

StmtRef reductionLoop(int variable, ExprRef extent, std::vector<StmtRef> body) {
  std::vector<int> accumulators;
  for (const StmtRef &s : body) {
    SINTER_ASSERT(s->kind == StmtKind::Assign && s->a->kind == ExprKind::Binary,
                  "a reduction loop's body must be `acc = op(acc, x)` assignments");
    BinaryOp op = s->a->binary;
    SINTER_ASSERT(op == BinaryOp::Add || op == BinaryOp::Mul || op == BinaryOp::Min ||
                      op == BinaryOp::Max || op == BinaryOp::LogicalAnd || op == BinaryOp::LogicalOr,
                  "reduction op ", binaryOpName(op), " is not associative and commutative");
    const ExprRef &self = s->a->operands[0];
    SINTER_ASSERT(self->kind == ExprKind::Var && self->id == s->id && s->id != variable,
                  "a reduction statement must combine into the variable it assigns");
    accumulators.push_back(s->id);
  }
  for (const StmtRef &s : body)
    for (int acc : accumulators)
      SINTER_ASSERT(!usesVariable(s->a->operands[1], acc), "a reduction term reads an accumulator");
  auto stmt = makeStmt(StmtKind::For);
  stmt->loop = LoopKind::Reduction;
  stmt->id = variable;
  stmt->a = std::move(extent);
  stmt->body = std::move(body);
  return stmt;
}

StmtRef ifThen(ExprRef condition, std::vector<StmtRef> then, std::vector<StmtRef> orElse) {
  SINTER_ASSERT(condition->type == DType::Bool, "if condition must be bool");
  auto stmt = makeStmt(StmtKind::If);
  stmt->a = std::move(condition);
  stmt->body = std::move(then);
  stmt->orElse = std::move(orElse);
  return stmt;
}

KernelBuilder::KernelBuilder(std::string name) {
  kernel_.name = std::move(name);
  kernel_.variables.push_back({"gid", DType::Int64});
}

int KernelBuilder::addBuffer(const std::string &name, DType dtype, int64_t elements, bool written) {
  kernel_.buffers.push_back({name, dtype, elements, written});
  return int(kernel_.buffers.size()) - 1;
}

int KernelBuilder::addScratch(const std::string &name, DType dtype, int64_t elements) {
  kernel_.buffers.push_back({name, dtype, elements, true, true});
  return int(kernel_.buffers.size()) - 1;
}

int KernelBuilder::addVariable(const std::string &hint, DType type) {
  kernel_.variables.push_back({hint + std::to_string(kernel_.variables.size()), type});
  return int(kernel_.variables.size()) - 1;
}

// ---- Printing ------------------------------------------------------------------------------

namespace {
class Printer {
public:
  explicit Printer(const Kernel &kernel) : kernel_(kernel) {}

  std::string expr(const ExprRef &e) {
    switch (e->kind) {
    case ExprKind::Constant: {
      std::ostringstream out;
      if (isFloat(e->type)) {
        out.precision(17);
        out << e->floatValue;
      } else {
        out << e->intValue;
      }
      return out.str() + ":" + std::string(dtypeName(e->type));
    }
    case ExprKind::Var: return kernel_.variables[e->id].name;
    case ExprKind::Load: return kernel_.buffers[e->id].name + "[" + expr(e->operands[0]) + "]";
    case ExprKind::Unary: return std::string(unaryOpName(e->unary)) + "(" + expr(e->operands[0]) + ")";
    case ExprKind::Binary:
      return std::string(binaryOpName(e->binary)) + "(" + expr(e->operands[0]) + ", " +
             expr(e->operands[1]) + ")";
    case ExprKind::Select:
      return "select(" + expr(e->operands[0]) + ", " + expr(e->operands[1]) + ", " +
             expr(e->operands[2]) + ")";
    case ExprKind::Cast:
      return "cast<" + std::string(dtypeName(e->type)) + ">(" + expr(e->operands[0]) + ")";
    case ExprKind::BitCast:
      return "bitcast<" + std::string(dtypeName(e->type)) + ">(" + expr(e->operands[0]) + ")";
    }
    return "?";
  }

  void stmts(const std::vector<StmtRef> &list, int depth) {
    for (const StmtRef &s : list)
      stmt(*s, depth);
  }

  void stmt(const Stmt &s, int depth) {
    std::string pad(depth * 2, ' ');
    switch (s.kind) {
    case StmtKind::Block: stmts(s.body, depth); break;
    case StmtKind::For:
      out_ << pad << (s.loop == LoopKind::Parallel    ? "parallel for "
                      : s.loop == LoopKind::Reduction ? "reduce for "
                                                      : "for ")
           << kernel_.variables[s.id].name << " in 0.." << expr(s.a) << " {\n";
      stmts(s.body, depth + 1);
      out_ << pad << "}\n";
      break;
    case StmtKind::Store:
      out_ << pad << kernel_.buffers[s.id].name << "[" << expr(s.a) << "] = " << expr(s.b) << "\n";
      break;
    case StmtKind::Assign:
      out_ << pad << kernel_.variables[s.id].name << " = " << expr(s.a) << "\n";
      break;
    case StmtKind::If:
      out_ << pad << "if " << expr(s.a) << " {\n";
      stmts(s.body, depth + 1);
      if (!s.orElse.empty()) {
        out_ << pad << "} else {\n";
        stmts(s.orElse, depth + 1);
      }
      out_ << pad << "}\n";
      break;
    }
  }

  std::string print() {
    out_ << "kernel " << kernel_.name << " parallel " << kernel_.parallelExtent << "\n";
    for (const BufferParam &buffer : kernel_.buffers)
      out_ << "  buffer " << buffer.name << ": " << dtypeName(buffer.dtype) << "[" << buffer.elements
           << "]" << (buffer.scratch ? " scratch" : buffer.written ? " written" : "") << "\n";
    stmts(kernel_.body, 1);
    return out_.str();
  }

private:
  const Kernel &kernel_;
  std::ostringstream out_;
};
} // namespace

std::string printKernel(const Kernel &kernel) { return Printer(kernel).print(); }

} // namespace sinter::codegen
