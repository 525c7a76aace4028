#include "move_row_views_before_products.h"

#include "rewrite.h"
#include "sinter/ir/graph.h"
#include "sinter/ir/infer.h"
#include "sinter/ir/tensor.h"

#include <optional>
#include <vector>

namespace sinter {
namespace {

using passes::soleUser;

/// Whether a view keeps the last axis whole: a Reshape whose input and output end in the same
/// dim, or a Transpose that leaves the last axis last.
bool keepsRowsWhole(const Node &view) {
  const Value *input = view.input(0), *output = view.output(0);
  if (!input || !output || !isStatic(input->shape()) || !isStatic(output->shape()) || input->rank() == 0 ||
      output->rank() == 0)
    return false;
  std::vector<int64_t> in = staticDims(input->shape()), out = staticDims(output->shape());
  if (view.kind() == OpKind::Reshape)
    return in.back() == out.back();
  if (view.kind() == OpKind::Transpose) {
    std::vector<int64_t> perm = view.attrInts("perm");
    return !perm.empty() && perm.back() == int64_t(in.size()) - 1;
  }
  return false;
}

/// A product Y = A . W (+ bias row) whose rows the views may move: a MatMul by a matrix, or a
/// Gemm without transA, alpha or beta, whose bias (if any) is one row.
bool movesWithRows(const Node &product) {
  if (product.kind() == OpKind::MatMul)
    return product.input(1)->rank() == 2 && product.input(0)->rank() >= 2;
  if (product.kind() != OpKind::Gemm || product.attrInt("transA", 0) != 0 ||
      product.attrFloat("alpha", 1.0f) != 1.0f || product.attrFloat("beta", 1.0f) != 1.0f)
    return false;
  const Value *bias = product.input(2);
  return !bias || (isStatic(bias->shape()) && *elementCount(bias->shape()) == staticDims(product.output(0)->shape())[1]);
}

Value *shapeConstant(Graph &graph, const std::string &base, const std::vector<int64_t> &dims) {
  return graph.addConstant(graph.uniqueName(base + ".shape"), Tensor::fromInts(dims));
}

} // namespace

bool MoveRowViewsBeforeProducts::run(Graph &graph) {
  bool changed = false;
  std::vector<Node *> products;
  for (const auto &node : graph.nodes())
    if ((node->kind() == OpKind::MatMul || node->kind() == OpKind::Gemm) && node->numOutputs() == 1 &&
        node->output(0) && isStatic(node->output(0)->shape()) && movesWithRows(*node))
      products.push_back(node.get());
  for (Node *product : products) {
    // The views after the product, each the only reader of the value before it.
    std::vector<Node *> views;
    Value *value = product->output(0);
    while (Node *next = soleUser(graph, value)) {
      if (next->numOutputs() != 1 || !keepsRowsWhole(*next))
        break;
      views.push_back(next);
      value = next->output(0);
    }
    bool transposes = false;
    for (const Node *view : views)
      transposes |= view->kind() == OpKind::Transpose;
    if (!transposes)
      continue; // Reshapes alone keep the rows where they are
    // The same views over the input's rows: its last dim K instead of N.
    Node *before = product;
    Value *rows = product->input(0);
    const int64_t k = staticDims(rows->shape()).back();
    const std::string base = rows->name() + ".rows";
    for (const Node *view : views) {
      Node *moved = nullptr;
      if (view->kind() == OpKind::Reshape) {
        std::vector<int64_t> dims = staticDims(view->output(0)->shape());
        dims.back() = k;
        moved = graph.addNode(OpKind::Reshape, {rows, shapeConstant(graph, base, dims)}, 1, "",
                              {graph.uniqueName(base)}, before);
      } else {
        moved = graph.addNode(OpKind::Transpose, {rows}, 1, "", {graph.uniqueName(base)}, before);
        moved->setAttr("perm", view->attrInts("perm"));
      }
      inferNode(*moved);
      rows = moved->output(0);
    }
    Value *matrix = product->input(1);
    if (product->kind() == OpKind::Gemm && product->attrInt("transB", 0) != 0) {
      Node *transposed = graph.addNode(OpKind::Transpose, {matrix}, 1, "", {graph.uniqueName(matrix->name() + ".t")},
                                       before);
      transposed->setAttr("perm", std::vector<int64_t>{1, 0});
      inferNode(*transposed);
      matrix = transposed->output(0);
    }
    Node *multiplied = graph.addNode(OpKind::MatMul, {rows, matrix}, 1, product->name(),
                                     {graph.uniqueName(product->output(0)->name() + ".rows")}, before);
    inferNode(*multiplied);
    Value *result = multiplied->output(0);
    if (product->kind() == OpKind::Gemm && product->input(2)) {
      Value *bias = product->input(2);
      if (bias->rank() != 1) {
        Node *row = graph.addNode(OpKind::Reshape, {bias, shapeConstant(graph, bias->name(), {*elementCount(bias->shape())})},
                                  1, "", {graph.uniqueName(bias->name() + ".row")}, before);
        inferNode(*row);
        bias = row->output(0);
      }
      Node *biased = graph.addNode(OpKind::Add, {result, bias}, 1, "", {graph.uniqueName(result->name() + ".biased")},
                                   before);
      inferNode(*biased);
      result = biased->output(0);
    }
    // A graph output that cannot take the result's name keeps the views; the nodes added for it
    // are removed as dead below.
    changed |= passes::replaceValue(graph, value, result);
  }
  passes::eraseDeadNodes(graph);
  return changed;
}

} // namespace sinter
