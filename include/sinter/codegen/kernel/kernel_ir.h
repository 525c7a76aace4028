// Kernel IR: the loop-level form every kernel group is lowered to before a backend prints it as
// CUDA C or builds it as LLVM IR. Backends are generic over it; per-op knowledge lives in the
// lowering (lowering.h), written once for both.
//
// A Kernel is the body for one point of a 1-D parallel index space [0, parallelExtent): the
// variable `gid` (var 0) is that point. The CUDA backend maps gid to threads (a grid-stride loop);
// the CPU backend runs chunks of it on the runtime's thread pool. Inside, a kernel has typed
// scalar expressions over buffers (flat, row-major, element-indexed with i64 indices), local
// variables, sequential loops, ifs and stores.
//
// Semantics: Min and Max propagate NaN (as numpy does). BitCast reinterprets a float's bits as an
// integer of the same width or back. Integer arithmetic wraps; Div and Rem on integers truncate toward zero (C); Div and
// Rem by zero are undefined (lowering guards where ONNX defines a result). Float math is IEEE
// single/double as the expression's type says; f16/bf16 buffers are loaded and stored through
// Cast to/from f32 (lowering inserts the casts). Loads and stores are in bounds by construction.
//
// The low-precision types (float8, f4e2m1, i4, u4, i2, u2; low_precision.h) are one byte each:
// an expression of such a type holds the element's byte (a code, or a sign-extended 4-/2-bit
// integer) and only Constant (intValue is the byte), Var, Load, Store, Select and BitCast carry
// it. cast() to or from them expands into integer bit arithmetic at construction
// (lib/codegen/low_precision_cast.cpp), so a backend never sees a Cast that involves them.
// BitCast reinterprets the bits of a value as another type of the same size (f32 <-> i32/u32,
// f64 <-> i64/u64, a low-precision type <-> i8/u8).
#pragma once

#include "sinter/ir/dtype.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace sinter::codegen {

enum class UnaryOp : uint8_t {
  Neg, Not, BitNot, Abs, Sign,
  Exp, Log, Sqrt, Erf, Tanh, Sigmoid,
  NormalCdf, ///< the standard normal distribution's CDF, (1 + erf(x / sqrt 2)) / 2 (GELU's gate)
  Sin, Cos, Tan, Asin, Acos, Atan, Sinh, Cosh, Asinh, Acosh, Atanh,
  Floor, Ceil, RoundEven, Trunc,
  IsNaN, IsInf
};
enum class BinaryOp : uint8_t {
  Add, Sub, Mul, Div, Rem, Min, Max, Pow,
  BitAnd, BitOr, BitXor, Shl, Shr,
  Lt, Le, Gt, Ge, Eq, Ne,
  LogicalAnd, LogicalOr
};
const char *unaryOpName(UnaryOp op);
const char *binaryOpName(BinaryOp op);
bool isComparison(BinaryOp op);

enum class ExprKind : uint8_t { Constant, Var, Load, Unary, Binary, Select, Cast, BitCast };

struct Expr;
using ExprRef = std::shared_ptr<const Expr>;

struct Expr {
  ExprKind kind;
  DType type;
  double floatValue = 0; ///< Constant of float type
  int64_t intValue = 0;  ///< Constant of integer or bool type
  int id = 0;            ///< Var: variable id; Load: buffer index
  UnaryOp unary{};
  BinaryOp binary{};
  std::vector<ExprRef> operands; ///< Load: {index}; Unary: {a}; Binary: {a, b}; Select: {c, a, b}; Cast, BitCast: {a}
};

enum class StmtKind : uint8_t { Block, For, Store, Assign, If };

/// What a For loop promises about its iterations, so that a backend may run them at once (the
/// CUDA backend spreads a kernel's top-level Parallel and Reduction loops over the lanes of a
/// warp; the CPU backend runs every loop in order).
///   Serial:    iterations run in order and may depend on each other.
///   Parallel:  no iteration reads an element another writes, no two write the same element, and
///              the body assigns no variable declared outside it.
///   Reduction: the body is only `acc = op(acc, x)` assignments, one per accumulator, with op
///              one of Add, Mul, Min, Max, LogicalAnd, LogicalOr and x reading no accumulator;
///              the backend may combine the terms in any order (float sums may be reassociated).
enum class LoopKind : uint8_t { Serial, Parallel, Reduction };

struct Stmt;
using StmtRef = std::shared_ptr<const Stmt>;

struct Stmt {
  StmtKind kind;
  LoopKind loop = LoopKind::Serial; ///< For only
  int id = 0;                ///< For: loop variable; Store: buffer; Assign: variable
  ExprRef a;                 ///< For: extent (loop runs 0..extent-1); Store: index; Assign: value; If: condition
  ExprRef b;                 ///< Store: value
  std::vector<StmtRef> body; ///< Block, For, If (then)
  std::vector<StmtRef> orElse; ///< If (else)
};

struct Variable {
  std::string name;
  DType type;
};

struct BufferParam {
  std::string name;
  DType dtype;
  int64_t elements;
  bool written;
  /// Scratch memory the kernel alone uses (state it updates in place, a matrix it factorises):
  /// the compiler places it in the arena for the kernel's own step and passes it after the
  /// group's outputs. Its contents are undefined when the kernel starts.
  bool scratch = false;
};

struct Kernel {
  std::string name;
  /// Argument i of the launch is buffer i: the group's inputs, its outputs, then any scratch.
  std::vector<BufferParam> buffers;
  /// Variable 0 is `gid`, the parallel index (i64).
  std::vector<Variable> variables;
  std::vector<StmtRef> body;
  int64_t parallelExtent = 1;
  /// Hints for the backends' launch shape.
  int64_t flops = 0;
};

/// Human-readable listing (for --emit-source and tests).
std::string printKernel(const Kernel &kernel);

/// f16 and bf16 are storage types: a kernel may load them, cast (or bitcast) them and store them,
/// and does everything else (arithmetic, selects, comparisons, variables) in f32. Returns where `kernel`
/// breaks that rule ("" when it keeps it); lowering asserts it for every kernel it builds.
std::string findHalfArithmetic(const Kernel &kernel);

// ---- Building ------------------------------------------------------------------------------
// Expression constructors fold constants where both sides are constant integers, so index math
// on static shapes stays small.

ExprRef constant(DType type, double value);
ExprRef intConstant(int64_t value, DType type = DType::Int64);
ExprRef boolConstant(bool value);
ExprRef var(int id, DType type);
ExprRef load(int buffer, DType type, ExprRef index);
ExprRef unary(UnaryOp op, ExprRef a);
/// Comparisons and logical ops give bool; other ops keep a's type (b must have the same type).
ExprRef binary(BinaryOp op, ExprRef a, ExprRef b);
ExprRef select(ExprRef condition, ExprRef ifTrue, ExprRef ifFalse);
/// Converts a value to `type` (Cast's rules; into a low-precision float with its default
/// rounding: saturating, f8e8m0 rounding up).
ExprRef cast(ExprRef a, DType type);
/// Reinterprets a value's bits as `type`, which must have the same byte size (not bool).
ExprRef bitcast(ExprRef a, DType type);

/// Whether some node of `e` satisfies `predicate`. Expressions are DAGs (an accessor composed
/// through reshapes and transposes shares its subtrees many times over): each distinct node is
/// visited once, so the walk is linear in the DAG, not in the tree it unfolds to.
bool anyNode(const ExprRef &e, const std::function<bool(const Expr &)> &predicate);

/// Whether two expressions are the same computation node for node (kinds, types, values,
/// operands), however their nodes are shared; each pair of nodes is compared once.
bool structurallyEqual(const ExprRef &a, const ExprRef &b);

/// Whether `e` reads variable `id` anywhere.
bool usesVariable(const ExprRef &e, int id);

/// `e` with variable `id` replaced by `value` (shared where `e` does not read it).
ExprRef substituted(const ExprRef &e, int id, const ExprRef &value);
/// `statement` (and the statements inside it) with variable `id` replaced by `value` in every
/// expression.
StmtRef substituted(const StmtRef &statement, int id, const ExprRef &value);

/// `statement` (and the statements inside it) with each of its expressions replaced by
/// `rewrite(expression)`.
StmtRef withExpressions(const StmtRef &statement, const std::function<ExprRef(const ExprRef &)> &rewrite);

/// Whether an integer expression is a multiple of `n` for every value of its variables (as far
/// as constants, products with a multiple, and sums and differences of multiples show).
bool multipleOf(const ExprRef &e, int64_t n);

/// Convenience for index arithmetic on i64.
ExprRef add(ExprRef a, ExprRef b);
ExprRef sub(ExprRef a, ExprRef b);
ExprRef mul(ExprRef a, ExprRef b);
ExprRef div(ExprRef a, ExprRef b);
ExprRef rem(ExprRef a, ExprRef b);
ExprRef add(ExprRef a, int64_t b);
ExprRef mul(ExprRef a, int64_t b);
ExprRef div(ExprRef a, int64_t b);
ExprRef rem(ExprRef a, int64_t b);

StmtRef store(int buffer, ExprRef index, ExprRef value);
StmtRef assign(int variable, ExprRef value);
StmtRef forLoop(int variable, ExprRef extent, std::vector<StmtRef> body);
/// A loop whose iterations are independent (LoopKind::Parallel).
StmtRef parallelLoop(int variable, ExprRef extent, std::vector<StmtRef> body);
/// A loop that only folds terms into accumulators (LoopKind::Reduction); checks the body's form.
StmtRef reductionLoop(int variable, ExprRef extent, std::vector<StmtRef> body);
/// The combining op of a Reduction loop's statement `acc = op(acc, x)`.
BinaryOp reductionOp(const Stmt &assignment);
StmtRef ifThen(ExprRef condition, std::vector<StmtRef> then, std::vector<StmtRef> orElse = {});
/// Statements in order, as one.
StmtRef block(std::vector<StmtRef> body);

/// Helps lowering code build one kernel: declares buffers and variables, collects statements.
class KernelBuilder {
public:
  explicit KernelBuilder(std::string name);
  int addBuffer(const std::string &name, DType dtype, int64_t elements, bool written);
  /// A scratch buffer (BufferParam::scratch). Declare scratch after every input and output.
  int addScratch(const std::string &name, DType dtype, int64_t elements);
  /// A new local variable (unique name derived from `hint`).
  int addVariable(const std::string &hint, DType type);
  ExprRef gid() const { return var(0, DType::Int64); }
  void setParallelExtent(int64_t extent) { kernel_.parallelExtent = extent; }
  void emit(StmtRef stmt) { kernel_.body.push_back(std::move(stmt)); }
  Kernel &kernel() { return kernel_; }
  Kernel take() { return std::move(kernel_); }

private:
  Kernel kernel_;
};

} // namespace sinter::codegen
