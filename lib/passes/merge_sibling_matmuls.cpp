#include "merge_sibling_matmuls.h"

#include "rewrite.h"
#include "sinter/ir/graph.h"
#include "sinter/ir/infer.h"

#include <cstring>
#include <map>
#include <vector>

namespace sinter {
namespace {

using passes::soleUser;

/// A MatMul by a constant matrix, and the Add of a column bias after it when there is one.
struct Sibling {
  Node *matmul = nullptr;
  Node *biasAdd = nullptr;            ///< Add(product, bias) or Add(bias, product), or null
  Value *bias = nullptr;              ///< its 1-D constant
  Value *result() const { return biasAdd ? biasAdd->output(0) : matmul->output(0); }
};

bool isMatrixConstant(const Value *value) {
  return value && value->isConstant() && value->shape().size() == 2 && isFloat(value->dtype());
}

/// The column bias Add that is the product's only user, if any.
void findBias(const Graph &graph, Sibling &sibling, int64_t columns) {
  Node *add = soleUser(graph, sibling.matmul->output(0));
  if (!add || add->kind() != OpKind::Add)
    return;
  Value *bias = passes::otherInput(*add, sibling.matmul->output(0));
  if (!bias || !bias->isConstant() || bias->dtype() != sibling.matmul->output(0)->dtype() ||
      bias->shape().size() != 1 || bias->constant().dims()[0] != columns ||
      add->output(0)->type() != sibling.matmul->output(0)->type())
    return;
  sibling.biasAdd = add;
  sibling.bias = bias;
}

/// The tensors side by side along their last axis (all of one dtype and leading dims).
Tensor concatenateColumns(const std::vector<const Tensor *> &parts) {
  std::vector<int64_t> dims = parts[0]->dims();
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < dims.size(); ++d)
    rows *= dims[d];
  int64_t columns = 0;
  for (const Tensor *part : parts)
    columns += part->dims().back();
  dims.back() = columns;
  Tensor result(parts[0]->dtype(), dims);
  size_t element = dtypeSize(result.dtype());
  auto *out = reinterpret_cast<uint8_t *>(result.data());
  for (int64_t row = 0; row < rows; ++row)
    for (const Tensor *part : parts) {
      size_t bytes = size_t(part->dims().back()) * element;
      std::memcpy(out, reinterpret_cast<const uint8_t *>(part->data()) + size_t(row) * bytes, bytes);
      out += bytes;
    }
  return result;
}

Value *int64Constant(Graph &graph, const std::string &base, int64_t value) {
  return graph.addConstant(graph.uniqueName(base), Tensor::fromInts({value}));
}

/// Merges the siblings (at least two, all with a bias or all without) into one MatMul.
void merge(Graph &graph, Value *input, const std::vector<Sibling> &siblings) {
  Node *first = siblings[0].matmul;
  for (const Sibling &sibling : siblings)
    if (graph.indexOf(sibling.matmul) < graph.indexOf(first))
      first = sibling.matmul;
  std::vector<const Tensor *> weights, biases;
  for (const Sibling &sibling : siblings) {
    weights.push_back(&sibling.matmul->input(1)->constant());
    if (sibling.bias)
      biases.push_back(&sibling.bias->constant());
  }
  std::string base = siblings[0].matmul->output(0)->name() + ".merged";
  Value *weight = graph.addConstant(graph.uniqueName(base + ".weight"), concatenateColumns(weights));
  Node *product = graph.addNode(OpKind::MatMul, {input, weight}, 1, "", {graph.uniqueName(base)}, first);
  inferNode(*product);
  Value *merged = product->output(0);
  if (!biases.empty()) {
    Value *bias = graph.addConstant(graph.uniqueName(base + ".bias"), concatenateColumns(biases));
    Node *add = graph.addNode(OpKind::Add, {merged, bias}, 1, "", {graph.uniqueName(base + ".biased")}, first);
    inferNode(*add);
    merged = add->output(0);
  }
  Value *axis = int64Constant(graph, base + ".axis", -1);
  int64_t start = 0;
  for (const Sibling &sibling : siblings) {
    int64_t columns = sibling.matmul->input(1)->constant().dims()[1];
    Value *from = int64Constant(graph, base + ".start", start);
    Value *to = int64Constant(graph, base + ".end", start + columns);
    start += columns;
    Value *old = sibling.result();
    passes::replaceWithNode(graph, old, OpKind::Slice, {merged, from, to, axis}, first);
  }
  passes::eraseDeadNodes(graph);
}

} // namespace

bool MergeSiblingMatMuls::run(Graph &graph) {
  // Candidates grouped by the value they read: (dtype, height, has bias) must agree.
  std::vector<Value *> inputs;
  std::map<Value *, std::vector<Sibling>> byInput;
  for (const auto &node : graph.nodes()) {
    if (node->kind() != OpKind::MatMul || node->numInputs() != 2 || !isMatrixConstant(node->input(1)))
      continue;
    Value *input = node->input(0);
    if (!input || input->isConstant() || input->shape().size() < 2 || graph.isOutput(node->output(0)))
      continue;
    Sibling sibling;
    sibling.matmul = node.get();
    findBias(graph, sibling, node->input(1)->constant().dims()[1]);
    if (sibling.biasAdd && graph.isOutput(sibling.biasAdd->output(0)))
      continue; // its Slice would have to take a graph output's name; keep it simple
    if (!byInput.count(input))
      inputs.push_back(input);
    byInput[input].push_back(sibling);
  }
  for (Value *input : inputs) {
    std::vector<Sibling> &all = byInput[input];
    for (bool biased : {true, false}) {
      std::vector<Sibling> group;
      for (const Sibling &sibling : all)
        if ((sibling.biasAdd != nullptr) == biased &&
            sibling.matmul->input(1)->dtype() == all[0].matmul->input(1)->dtype() &&
            sibling.matmul->input(1)->constant().dims()[0] == all[0].matmul->input(1)->constant().dims()[0])
          group.push_back(sibling);
      if (group.size() >= 2) {
        merge(graph, input, group);
        return true; // the graph changed under `byInput`; the pipeline runs this to a fixed point
      }
    }
  }
  return false;
}

} // namespace sinter
