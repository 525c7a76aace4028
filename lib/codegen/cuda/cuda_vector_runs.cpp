#include "cuda_vector_runs.h"

#include "cuda_source.h"

namespace sinter::codegen::cuda {

namespace {

/// The 32-bit words of a 16-byte (or 8-, or 4-byte) vector `name`: x, y, z, w.
std::string component(const std::string &name, int words, int k) {
  if (words == 1)
    return name;
  return name + "." + "xyzw"[k];
}

/// `count` elements of `type` from the 32-bit word `word`, into `target(i)` for i in 0..count-1.
std::string unpackWord(DType type, const std::string &word, const std::function<std::string(int)> &target,
                       const std::string &pad) {
  std::string text, name = cudaStorageType(type);
  if (dtypeSize(type) == 4)
    return pad + target(0) + " = " + (type == DType::Float32 ? "__uint_as_float(" + word + ")" : "(" + name + ")" + word) +
           ";\n";
  text += pad + target(0) + " = (" + name + ")(" + word + " & 0xffffu);\n";
  text += pad + target(1) + " = (" + name + ")(" + word + " >> 16);\n";
  return text;
}

/// A 32-bit word of elements `source(i)` of `type`.
std::string packWord(DType type, const std::function<std::string(int)> &source) {
  if (dtypeSize(type) == 4)
    return type == DType::Float32 ? "__float_as_uint(" + source(0) + ")" : "(unsigned)" + source(0);
  return "((unsigned)" + source(0) + " | ((unsigned)" + source(1) + " << 16))";
}

} // namespace

/// The loads that `e` evaluates whenever it is evaluated: not a Select's arms, not the right
/// side of a logical and/or.
void unconditionalLoads(const ExprRef &e, std::vector<const Expr *> &loads) {
  if (e->kind == ExprKind::Load)
    loads.push_back(e.get());
  if (e->kind == ExprKind::Select) {
    unconditionalLoads(e->operands[0], loads);
    return;
  }
  if (e->kind == ExprKind::Binary && (e->binary == BinaryOp::LogicalAnd || e->binary == BinaryOp::LogicalOr)) {
    unconditionalLoads(e->operands[0], loads);
    return;
  }
  for (const ExprRef &operand : e->operands)
    unconditionalLoads(operand, loads);
}

/// The loads every iteration of a loop body evaluates (not those under an If or a nested loop).
void unconditionalLoads(const std::vector<StmtRef> &body, std::vector<const Expr *> &loads) {
  for (const StmtRef &s : body) {
    switch (s->kind) {
    case StmtKind::Block: unconditionalLoads(s->body, loads); break;
    case StmtKind::Assign: unconditionalLoads(s->a, loads); break;
    case StmtKind::Store:
      unconditionalLoads(s->a, loads);
      unconditionalLoads(s->b, loads);
      break;
    case StmtKind::If: unconditionalLoads(s->a, loads); break;
    case StmtKind::For: break;
    }
  }
}

/// Whether two expressions are the same with variable `x` of the first standing for `y` of the
/// second (two loops' reads of one element).
bool sameUpTo(const Expr &a, int x, const Expr &b, int y) {
  if (a.kind != b.kind || a.type != b.type || a.operands.size() != b.operands.size())
    return false;
  switch (a.kind) {
  case ExprKind::Var: return a.id == x ? b.id == y : (b.id == a.id && b.id != y);
  case ExprKind::Constant:
    if (a.intValue != b.intValue || !(a.floatValue == b.floatValue || (a.floatValue != a.floatValue && b.floatValue != b.floatValue)))
      return false;
    break;
  case ExprKind::Load:
    if (a.id != b.id)
      return false;
    break;
  case ExprKind::Unary:
    if (a.unary != b.unary)
      return false;
    break;
  case ExprKind::Binary:
    if (a.binary != b.binary)
      return false;
    break;
  default: break;
  }
  for (size_t i = 0; i < a.operands.size(); ++i)
    if (!sameUpTo(*a.operands[i], x, *b.operands[i], y))
      return false;
  return true;
}

/// Stores anywhere in a statement list, and those at its top level (through Blocks).
void countStores(const std::vector<StmtRef> &list, bool topLevel, std::vector<const Stmt *> &all,
                 std::vector<const Stmt *> &top) {
  for (const StmtRef &s : list) {
    if (s->kind == StmtKind::Store) {
      all.push_back(s.get());
      if (topLevel)
        top.push_back(s.get());
    }
    countStores(s->body, topLevel && s->kind == StmtKind::Block, all, top);
    countStores(s->orElse, false, all, top);
  }
}

/// Bytes of the element types a row may hold or gather: 16- and 32-bit values.
bool heldType(DType type) {
  const int size = dtypeSize(type);
  return size == 2 || size == 4;
}

/// The C type of a vector of `words` 32-bit words.
const char *vectorType(int words) { return words == 4 ? "uint4" : words == 2 ? "uint2" : "unsigned"; }

/// The 16-, 8- and 4-byte pieces of a run of `bytes` bytes: (offset, words).
std::vector<std::pair<int, int>> pieces(int bytes) {
  std::vector<std::pair<int, int>> list;
  for (int offset = 0; offset < bytes;) {
    const int size = bytes - offset >= 16 ? 16 : bytes - offset >= 8 ? 8 : 4;
    list.push_back({offset, size / 4});
    offset += size;
  }
  return list;
}

/// A run of `v` elements of `type` from address `at` (16-byte aligned runs, or 8 or 4) into
/// `target(i)`, i < v: vector loads unpacked word by word; element by element when the run is
/// under 4 bytes.
std::string runLoadText(DType type, int v, const std::string &at, const std::function<std::string(int)> &target,
                        const std::string &pad) {
  const int size = dtypeSize(type), bytes = v * size;
  std::string text;
  if (bytes < 4) {
    for (int i = 0; i < v; ++i)
      text += pad + target(i) + " = (" + at + ")[" + std::to_string(i) + "];\n";
    return text;
  }
  const int perWord = 4 / size;
  for (auto [offset, words] : pieces(bytes)) {
    text += pad + "{\n" + pad + "  const " + vectorType(words) + " sn_w = *reinterpret_cast<const " +
            vectorType(words) + " *>(" + at + " + " + std::to_string(offset / size) + ");\n";
    for (int k = 0; k < words; ++k) {
      const int first = offset / size + k * perWord;
      text += unpackWord(type, component("sn_w", words, k), [&](int i) { return target(first + i); }, pad + "  ");
    }
    text += pad + "}\n";
  }
  return text;
}

std::string runStoreText(DType type, int v, const std::string &at, const std::function<std::string(int)> &source,
                         const std::string &pad) {
  const int size = dtypeSize(type), perWord = 4 / size;
  std::string text;
  for (auto [offset, words] : pieces(v * size)) {
    std::string values;
    for (int k = 0; k < words; ++k) {
      const int first = offset / size + k * perWord;
      values += std::string(k ? ", " : "") + packWord(type, [&](int i) { return source(first + i); });
    }
    const std::string place = at + " + " + std::to_string(offset / size);
    if (words == 1)
      text += pad + "*reinterpret_cast<unsigned *>(" + place + ") = " + values + ";\n";
    else
      text += pad + "*reinterpret_cast<" + vectorType(words) + " *>(" + place + ") = " + vectorType(words) + "{" +
              values + "};\n";
  }
  return text;
}

} // namespace sinter::codegen::cuda
