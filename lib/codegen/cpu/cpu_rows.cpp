// Design note. The split, for a row length L that divides the parallel extent N:
//
//   flat:   for gid < N:            body(gid)
//   rows:   for row < N / L:
//             for column < L:       body'(row, column)
//
// body' is body with every gid-dependent expression rewritten top-down: an integer or bool
// expression of gid alone that is, at every point of every row, its value at the row's start
// (invariant) or that plus the column (unit) becomes e(row * L) or e(row * L) + column; LLVM
// hoists e(row * L) out of the column loop. Any other expression is rebuilt from its operands,
// and gid itself becomes row * L + column, so body' computes what body did at every point
// whether or not a rewrite applied. The classification is first proved from the expression's
// structure (RowForms, row_forms.h: nothing per point, whatever N); what that cannot prove is
// evaluated at all N points (IndexProgram) while a budget of evaluations lasts, and past it is
// taken as neither.
//
// Row lengths tried: the constants gid is divided by (a plane, a row of a plane), then N, the
// longest first; a length is taken when no division or remainder is left that depends on the
// column. Rows are then shortened (to a divisor) until there are enough of them to share out.
#include "cpu_rows.h"

#include "sinter/codegen/kernel/expr_evaluator.h"
#include "sinter/codegen/kernel/index_program.h"
#include "sinter/codegen/kernel/row_forms.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <set>
#include <unordered_map>

namespace sinter::codegen::llvmgen {
namespace {

constexpr int64_t kMaxRowLength = int64_t(1) << 16;
constexpr int64_t kCheckBudget = int64_t(1) << 27;     ///< node evaluations per kernel
constexpr int64_t kMinimumRows = 16;                    ///< rows enough to share among threads
constexpr int64_t kShortestSplitRow = 16;

void forEachExpression(const std::vector<StmtRef> &statements, const std::function<void(const ExprRef &)> &visit) {
  for (const StmtRef &statement : statements) {
    if (statement->a)
      visit(statement->a);
    if (statement->b)
      visit(statement->b);
    forEachExpression(statement->body, visit);
    forEachExpression(statement->orElse, visit);
  }
}

bool hasLoops(const std::vector<StmtRef> &statements) {
  for (const StmtRef &statement : statements)
    if (statement->kind == StmtKind::For || hasLoops(statement->body) || hasLoops(statement->orElse))
      return true;
  return false;
}

bool isDivision(const Expr &node) {
  return node.kind == ExprKind::Binary && (node.binary == BinaryOp::Div || node.binary == BinaryOp::Rem);
}

/// Whether `e` is integer or bool index arithmetic over gid alone, with nonzero constant divisors.
bool checkable(const ExprRef &e) {
  if (e->type != DType::Int64 && e->type != DType::Int32 && e->type != DType::Bool)
    return false;
  return !anyNode(e, [](const Expr &node) {
    if (node.kind == ExprKind::Load || (node.kind == ExprKind::Var && node.id != 0))
      return true;
    if (isDivision(node)) {
      const ExprRef &divisor = node.operands[1];
      return divisor->kind != ExprKind::Constant || divisor->intValue == 0;
    }
    return node.kind != ExprKind::Constant && node.kind != ExprKind::Var && node.kind != ExprKind::Binary &&
           node.kind != ExprKind::Unary && node.kind != ExprKind::Select && node.kind != ExprKind::Cast;
  });
}

int64_t nodeCount(const ExprRef &e) {
  int64_t count = 0;
  anyNode(e, [&](const Expr &) {
    ++count;
    return false;
  });
  return count;
}

/// A copy of `e` whose operands are `rewrite` of e's: what both rewriters below do with an
/// expression they leave as it is but for its operands.
ExprRef withRewrittenOperands(const ExprRef &e, const std::function<ExprRef(const ExprRef &)> &rewrite) {
  auto copy = std::make_shared<Expr>(*e);
  for (ExprRef &operand : copy->operands)
    operand = rewrite(operand);
  return copy;
}

class RowRewriter {
public:
  RowRewriter(int64_t extent, int64_t length, int column, int64_t &budget)
      : extent_(extent), length_(length), column_(column), budget_(budget),
        rowStart_(mul(var(0, DType::Int64), length)), forms_(extent, length) {}

  ExprRef rewrite(const ExprRef &e) {
    if (!usesVariable(e, 0))
      return e;
    if (auto found = done_.find(e.get()); found != done_.end())
      return found->second;
    ExprRef result;
    if (e->kind == ExprKind::Var) {
      result = add(rowStart_, var(column_, DType::Int64));
    } else {
      AlongRow along = checkable(e) ? classify(e) : AlongRow::Neither;
      if (along == AlongRow::Unit && e->type == DType::Bool)
        along = AlongRow::Neither; // rows of two 0, 1: not worth a bool sum
      // A start the same in every row is a constant (rem(gid, L) is the column itself).
      std::optional<int64_t> fixed = along != AlongRow::Neither ? forms_.fixedStart(e) : std::nullopt;
      ExprRef start = fixed ? intConstant(*fixed, e->type) : nullptr;
      if (along == AlongRow::Invariant) {
        result = start ? start : substituted(e, 0, rowStart_);
      } else if (along == AlongRow::Unit) {
        ExprRef column = e->type == DType::Int64 ? var(column_, DType::Int64) : cast(var(column_, DType::Int64), e->type);
        result = start && *fixed == 0 ? column : add(start ? start : substituted(e, 0, rowStart_), column);
      } else {
        result = withRewrittenOperands(e, [&](const ExprRef &operand) { return rewrite(operand); });
      }
    }
    done_[e.get()] = result;
    return result;
  }

  StmtRef rewrite(const StmtRef &statement) {
    return withExpressions(statement, [&](const ExprRef &e) { return rewrite(e); });
  }

private:
  /// What `e` is along a row: proved from its structure (RowForms), else evaluated at every gid
  /// in chunks. The budget is charged chunk by chunk, for what is evaluated: an expression that
  /// is neither usually shows it in its first chunk, so the rewriter's descent into the operands
  /// of a large index (where most expressions are rejected) costs little; only what holds costs
  /// all N points.
  AlongRow classify(const ExprRef &e) {
    if (AlongRow proved = forms_.classify(e); proved != AlongRow::Neither)
      return proved;
    std::optional<IndexProgram> program = IndexProgram::compile(e);
    if (!program)
      return AlongRow::Neither;
    const int64_t nodes = nodeCount(e);
    // Chunks of at most 4096 points, whatever the row length; `start` is the value at the
    // start of the row the current point is in.
    const int64_t chunk = length_ <= 4096 ? length_ * (4096 / length_) : 4096;
    bool invariant = true, unit = true;
    int64_t start = 0;
    for (int64_t first = 0; first < extent_ && (invariant || unit); first += chunk) {
      const int64_t count = std::min(chunk, extent_ - first);
      budget_ -= nodes * count;
      if (budget_ < 0)
        return AlongRow::Neither;
      std::span<const int64_t> values = program->evaluate(0, first, count);
      for (int64_t x = 0; x < count && (invariant || unit); ++x) {
        const int64_t column = (first + x) % length_;
        if (column == 0)
          start = values[size_t(x)];
        invariant = invariant && values[size_t(x)] == start;
        unit = unit && values[size_t(x)] == start + column;
      }
    }
    return invariant ? AlongRow::Invariant : unit ? AlongRow::Unit : AlongRow::Neither;
  }

  int64_t extent_, length_;
  int column_;
  int64_t &budget_;
  ExprRef rowStart_;
  RowForms forms_;
  std::unordered_map<const Expr *, ExprRef> done_;
};

/// `kernel` in rows of `length`, if no integer division depending on the column is left.
std::optional<Kernel> splitAt(const Kernel &kernel, int64_t length, int64_t &budget) {
  Kernel split = kernel;
  const int column = int(split.variables.size());
  split.variables.push_back({"column", DType::Int64});
  RowRewriter rewriter(kernel.parallelExtent, length, column, budget);
  std::vector<StmtRef> body;
  for (const StmtRef &statement : kernel.body)
    body.push_back(rewriter.rewrite(statement));
  bool divisionsLeft = false;
  forEachExpression(body, [&](const ExprRef &e) {
    divisionsLeft = divisionsLeft || anyNode(e, [&](const Expr &node) {
                      return isDivision(node) && (node.type == DType::Int64 || node.type == DType::Int32) &&
                             (usesVariable(node.operands[0], column) || usesVariable(node.operands[1], column));
                    });
  });
  if (divisionsLeft)
    return std::nullopt;
  split.body = {forLoop(column, intConstant(length), std::move(body))};
  split.parallelExtent = kernel.parallelExtent / length;
  return split;
}

/// Whether `e` reads nothing but the column and constants.
bool ofColumnAlone(const ExprRef &e, int column) {
  return !anyNode(e, [&](const Expr &node) {
    return node.kind == ExprKind::Load || (node.kind == ExprKind::Var && node.id != column);
  });
}

/// Whether `e` costs more per column than a load: anything beyond integer sums and products.
bool costly(const ExprRef &e) {
  return anyNode(e, [](const Expr &node) {
    if (node.kind == ExprKind::Var || node.kind == ExprKind::Constant)
      return false;
    const bool integer = node.type == DType::Int64 || node.type == DType::Int32;
    return !(node.kind == ExprKind::Binary && integer &&
             (node.binary == BinaryOp::Add || node.binary == BinaryOp::Sub || node.binary == BinaryOp::Mul));
  });
}

/// Column tables: in a kernel split into rows, a costly subexpression of the column alone (a
/// resize's source column and its weight, from float arithmetic, a floor and a clamp) has the
/// same value in every row; it becomes a load from a table of its `length` values, computed
/// here. Tables are buffers appended to the kernel, passed after its other arguments.
class ColumnTables {
public:
  ColumnTables(Kernel &kernel, int column, int64_t length)
      : kernel_(kernel), column_(column), length_(length), evaluator_(kernel) {}

  std::vector<std::vector<uint8_t>> take() { return std::move(tables_); }

  StmtRef rewrite(const StmtRef &statement) {
    return withExpressions(statement, [&](const ExprRef &e) { return rewrite(e); });
  }

private:
  ExprRef rewrite(const ExprRef &e) {
    if (!usesVariable(e, column_))
      return e;
    if (auto found = done_.find(e.get()); found != done_.end())
      return found->second;
    ExprRef result;
    if (tabulable(e)) {
      result = tabulate(e);
    } else {
      result = withRewrittenOperands(e, [&](const ExprRef &operand) { return rewrite(operand); });
    }
    done_[e.get()] = result;
    return result;
  }

  bool tabulable(const ExprRef &e) const {
    const bool typed = e->type == DType::Float32 || e->type == DType::Int64 || e->type == DType::Int32;
    return typed && tables_.size() < kMaxTables && ofColumnAlone(e, column_) && costly(e) &&
           evaluator_.canEvaluate(e);
  }

  ExprRef tabulate(const ExprRef &e) {
    const size_t width = dtypeSize(e->type);
    std::vector<uint8_t> bytes(size_t(length_) * width);
    for (int64_t c = 0; c < length_; ++c) {
      evaluator_.setVariable(column_, c);
      ScalarValue value = evaluator_.evaluate(e);
      uint8_t *at = bytes.data() + size_t(c) * width;
      if (e->type == DType::Float32) {
        const float f = float(value.floatValue);
        std::memcpy(at, &f, width);
      } else if (e->type == DType::Int32) {
        const int32_t i = int32_t(value.intValue);
        std::memcpy(at, &i, width);
      } else {
        std::memcpy(at, &value.intValue, width);
      }
    }
    const int buffer = int(kernel_.buffers.size());
    kernel_.buffers.push_back({kernel_.name + ".column" + std::to_string(tables_.size()), e->type, length_, false});
    tables_.push_back(std::move(bytes));
    return load(buffer, e->type, var(column_, DType::Int64));
  }

  static constexpr size_t kMaxTables = 16;
  Kernel &kernel_;
  int column_;
  int64_t length_;
  ExprEvaluator evaluator_;
  std::vector<std::vector<uint8_t>> tables_;
  std::unordered_map<const Expr *, ExprRef> done_;
};

} // namespace

namespace {

/// The chosen split with its column tables.
RowKernel withColumnTables(const Kernel &flat, Kernel split) {
  const int column = int(flat.variables.size());
  const int64_t length = flat.parallelExtent / split.parallelExtent;
  ColumnTables tables(split, column, length);
  std::vector<StmtRef> body;
  for (const StmtRef &statement : split.body)
    body.push_back(tables.rewrite(statement));
  split.body = std::move(body);
  return RowKernel{std::move(split), tables.take()};
}

} // namespace

std::optional<RowKernel> splitIntoRows(const Kernel &kernel) {
  const int64_t extent = kernel.parallelExtent;
  if (extent < 2 || hasLoops(kernel.body))
    return std::nullopt;
  // The row lengths to try: what gid is divided by, and the whole extent.
  std::set<int64_t, std::greater<>> candidates;
  forEachExpression(kernel.body, [&](const ExprRef &e) {
    anyNode(e, [&](const Expr &node) {
      if (isDivision(node) && usesVariable(node.operands[0], 0) && node.operands[1]->kind == ExprKind::Constant) {
        int64_t divisor = node.operands[1]->intValue;
        if (divisor > 1 && extent % divisor == 0)
          candidates.insert(divisor);
      }
      return false;
    });
  });
  if (candidates.empty())
    return std::nullopt;
  candidates.insert(extent);
  int64_t budget = kCheckBudget;
  for (int64_t length : candidates) {
    if (length > kMaxRowLength)
      continue;
    std::optional<Kernel> split = splitAt(kernel, length, budget);
    if (!split)
      continue;
    // Shorter rows when there are too few to share out: what holds along a row holds along any
    // piece of it that starts at a multiple of the piece's length.
    if (split->parallelExtent < kMinimumRows)
      for (int64_t shorter = length / 2; shorter >= kShortestSplitRow; --shorter)
        if (length % shorter == 0 && extent / shorter >= kMinimumRows) {
          if (std::optional<Kernel> more = splitAt(kernel, shorter, budget))
            return withColumnTables(kernel, std::move(*more));
          break;
        }
    return withColumnTables(kernel, std::move(*split));
  }
  return std::nullopt;
}

} // namespace sinter::codegen::llvmgen
