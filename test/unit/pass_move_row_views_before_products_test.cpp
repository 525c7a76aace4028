// move-row-views-before-products (lib/passes/move_row_views_before_products.h): views that move
// whole rows of a product's output move to its input; views that split or move the last axis,
// products by batched matrices, and views with other readers stay.
#include "pass_test_util.h"

using namespace sinter;
using sinter::testing::expectUnchanged;
using sinter::testing::rewrite;

TEST(MoveRowViewsBeforeProducts, SequenceFirstProjectionIsMultipliedInTheOrderItsResidualAddReads) {
  // torch's sequence-first attention: the output projection (nn.Linear, transB) of [L * B, K]
  // rows, reshaped to [L, B, N] and transposed to [B, L, N] for the residual add. After: the
  // input's rows are reshaped and transposed, multiplied by W^T, and the bias added, so the
  // residual add reads the product directly.
  EXPECT_EQ(rewrite("move-row-views-before-products", R"(graph @main(%a: f32[6,4], %w: f32[5,4], %x: f32[2,3,5]) -> (%y) {
  %b = constant f32[5] [0.1, 0.2, 0.3, 0.4, 0.5]
  %s = constant i64[3] [3, 2, 5]
  %g = Gemm(%a, %w, %b) {transB = 1} : f32[6,5]
  %r = Reshape(%g, %s) : f32[3,2,5]
  %t = Transpose(%r) {perm = [1, 0, 2]} : f32[2,3,5]
  %y = Add(%t, %x) : f32[2,3,5]
  return
})"),
            R"(graph @main(%a: f32[6,4], %w: f32[5,4], %x: f32[2,3,5]) -> (%y) {
  %b = constant f32[5] [0.1, 0.2, 0.3, 0.4, 0.5]
  %s = constant i64[3] [3, 2, 5]
  %a.rows.shape = constant i64[3] [3, 2, 4]
  %a.rows = Reshape(%a, %a.rows.shape) : f32[3,2,4]
  %a.rows.0 = Transpose(%a.rows) {perm = [1, 0, 2]} : f32[2,3,4]
  %w.t = Transpose(%w) {perm = [1, 0]} : f32[4,5]
  %g.rows = MatMul(%a.rows.0, %w.t) : f32[2,3,5]
  %g.rows.biased = Add(%g.rows, %b) : f32[2,3,5]
  %y = Add(%g.rows.biased, %x) : f32[2,3,5]
  return
}
)");
}

TEST(MoveRowViewsBeforeProducts, AMatMulsRowsMoveThroughSeveralViews) {
  // A 3-D MatMul by a matrix, its output's two leading axes swapped and the rows flattened.
  EXPECT_EQ(rewrite("move-row-views-before-products", R"(graph @main(%a: f32[2,3,4], %w: f32[4,2]) -> (%y) {
  %s = constant i64[2] [6, 2]
  %p = MatMul(%a, %w) : f32[2,3,2]
  %t = Transpose(%p) {perm = [1, 0, 2]} : f32[3,2,2]
  %y = Reshape(%t, %s) : f32[6,2]
  return
})"),
            R"(graph @main(%a: f32[2,3,4], %w: f32[4,2]) -> (%y) {
  %s = constant i64[2] [6, 2]
  %a.rows.shape = constant i64[2] [6, 4]
  %a.rows = Transpose(%a) {perm = [1, 0, 2]} : f32[3,2,4]
  %a.rows.0 = Reshape(%a.rows, %a.rows.shape) : f32[6,4]
  %y = MatMul(%a.rows.0, %w) : f32[6,2]
  return
}
)");
}

TEST(MoveRowViewsBeforeProducts, LeavesViewsOfTheLastAxisBatchedProductsAndSharedValues) {
  // A Transpose that moves the last axis; a Reshape that splits it (attention's head split);
  // a batched product (its matrix is 3-D: rows of different batches meet different matrices);
  // a product read by the view and by another node; Reshapes alone (they move no row).
  expectUnchanged("move-row-views-before-products", R"(graph @main(%a: f32[2,3,4], %w: f32[4,4], %v: f32[2,4,4]) -> (%y1, %y2, %y3, %y4, %p4, %y5) {
  %s = constant i64[4] [2, 3, 2, 2]
  %s5 = constant i64[2] [6, 4]
  %p1 = MatMul(%a, %w) : f32[2,3,4]
  %y1 = Transpose(%p1) {perm = [0, 2, 1]} : f32[2,4,3]
  %p2 = MatMul(%a, %w) : f32[2,3,4]
  %r2 = Reshape(%p2, %s) : f32[2,3,2,2]
  %y2 = Transpose(%r2) {perm = [1, 0, 2, 3]} : f32[3,2,2,2]
  %p3 = MatMul(%a, %v) : f32[2,3,4]
  %y3 = Transpose(%p3) {perm = [1, 0, 2]} : f32[3,2,4]
  %p4 = MatMul(%a, %w) : f32[2,3,4]
  %y4 = Transpose(%p4) {perm = [1, 0, 2]} : f32[3,2,4]
  %p5 = MatMul(%a, %w) : f32[2,3,4]
  %y5 = Reshape(%p5, %s5) : f32[6,4]
  return
})");
}
