// merge-sibling-matmuls: MatMuls that read one value and multiply it by constant matrices of one
// height become one MatMul by the matrices side by side, and each old product a Slice of it
// (horizontal fusion: BERT's query, key and value projections of one hidden state).
//
//   %q = MatMul(%x, %wq)     %w = [%wq | %wk]           (a constant, concatenated along columns)
//   %k = MatMul(%x, %wk)  => %qk = MatMul(%x, %w)
//                            %q = Slice(%qk, 0, nq)     %k = Slice(%qk, nq, nq + nk)   (last axis)
//
// When every sibling's only user is an Add of a 1-D constant bias (its column biases), the
// biases are concatenated too and the Slices follow one Add, so the merged kernel keeps the bias
// as its epilogue. The input is read once and the launches drop from n to one; the Slices are
// views a consumer's kernel reads through (they fuse into its prologue). Siblings must share the
// constant's dtype and height; a sibling whose product is a graph output is left alone.
#pragma once

#include "sinter/passes/pass.h"

namespace sinter {

class MergeSiblingMatMuls : public Pass {
public:
  std::string_view name() const override { return "merge-sibling-matmuls"; }
  bool run(Graph &graph) override;
};

} // namespace sinter
