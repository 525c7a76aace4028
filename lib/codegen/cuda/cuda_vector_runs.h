// Runs of consecutive elements moved as vectors: which loads a loop body always evaluates, when two
// of them read the same element, and the CUDA C of a run's 16-byte (or 8- or 4-byte) loads and
// stores, for the warp-per-row kernels' rows held in registers (cuda_warp_kernel.cpp).
#pragma once

#include "sinter/codegen/kernel/kernel_ir.h"

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace sinter::codegen::cuda {

/// The loads that `e` evaluates whenever it is evaluated: not a Select's arms, not the right
/// side of a logical and/or.
void unconditionalLoads(const ExprRef &e, std::vector<const Expr *> &loads);
/// The loads every run of a statement list evaluates (not those under an If or a nested loop).
void unconditionalLoads(const std::vector<StmtRef> &body, std::vector<const Expr *> &loads);

/// Whether two expressions are the same with variable `x` of the first standing for `y` of the
/// second (two loops' reads of one element; x == y: two reads of one element in one place).
bool sameUpTo(const Expr &a, int x, const Expr &b, int y);

/// Stores anywhere in a statement list, and those at its top level (through Blocks).
void countStores(const std::vector<StmtRef> &list, bool topLevel, std::vector<const Stmt *> &all,
                 std::vector<const Stmt *> &top);

/// Element types a run may hold, load or store as vectors: 16- and 32-bit values.
bool heldType(DType type);

/// The C type of a vector of `words` 32-bit words (uint4, uint2, unsigned).
const char *vectorType(int words);
/// The 16-, 8- and 4-byte pieces of a run of `bytes` bytes: (byte offset, words).
std::vector<std::pair<int, int>> pieces(int bytes);

/// A run of `v` elements of `type` from address `at` (aligned to the run's bytes, up to 16) into
/// `target(i)`, i < v: vector loads unpacked word by word; element by element when the run is
/// under 4 bytes.
std::string runLoadText(DType type, int v, const std::string &at, const std::function<std::string(int)> &target,
                        const std::string &pad);
/// A run of `v` elements of `type`, `source(i)`, stored at address `at` (aligned to the run's
/// bytes, up to 16; at least 4 bytes) as vectors.
std::string runStoreText(DType type, int v, const std::string &at, const std::function<std::string(int)> &source,
                         const std::string &pad);

} // namespace sinter::codegen::cuda
