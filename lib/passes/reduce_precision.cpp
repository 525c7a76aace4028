// Design note. Three steps over the graph:
//
//  1. Each node gets a mode from the precision table: Reduced (its float data in the storage
//     type), Float32, Follow (decided in step 3 from its inputs) or Skip (Agnostic ops). A node
//     whose float32 data constants would not survive the storage type computes in f32.
//  2. Float32Inputs ops pin the producers of their float inputs to Float32, through any chain of
//     Follow ops (views of the value) and of Add, Sub, Mul and Div, so the values they read were
//     never rounded (a softmax's scaled and masked logits, a LayerNorm's residual sum).
//  3. In node order: the node's data inputs are made to match its mode, by Casts that are shared
//     per value (one Cast down, one Cast up) or by converted copies of constants; a Reduced node's
//     outputs are re-inferred, which turns them to the storage type. A Follow node whose inputs
//     are float32 stores reduced anyway when all its uses want the storage type (the Cast moves
//     up, next to the producer: a LayerNorm's output transposed for a MatMul is rounded by the
//     LayerNorm's kernel, and the MatMul copies 16-bit runs). Graph outputs that became
//     reduced are cast back up under their own names, so the signature is unchanged.
//
// Maps keyed by pointers are only looked up, never iterated, so the output is deterministic.
#include "reduce_precision.h"

#include "precision_rules.h"
#include "sinter/ir/graph.h"
#include "sinter/ir/infer.h"
#include "sinter/support/error.h"

#include <cmath>
#include <map>
#include <set>
#include <vector>

namespace sinter {
namespace {

using passes::PrecisionClass;
using passes::PrecisionRule;
using passes::precisionRule;
using passes::subtractsMean;

/// RoundedInputs: a contraction whose result a Float32Inputs op reads: its factors are rounded
/// to the storage type as a Reduced node's are (and widened again, so the IR's types agree), and
/// its f32 sums are kept unrounded.
enum class Mode : uint8_t { Skip, Reduced, Float32, Follow, RoundedInputs };

bool isContraction(OpKind kind) {
  return kind == OpKind::MatMul || kind == OpKind::Gemm || kind == OpKind::Conv || kind == OpKind::ConvTranspose;
}

class Reducer {
public:
  Reducer(Graph &graph, DType storage, bool pinNormalizationInputs)
      : graph_(graph), storage_(storage), pinNormalizationInputs_(pinNormalizationInputs) {}

  bool run() {
    std::vector<Node *> order;
    for (const auto &node : graph_.nodes())
      order.push_back(node.get());
    for (Node *node : order)
      mode_[node] = initialMode(*node);
    for (Node *node : order)
      if (precisionRule(node->kind()).precision == PrecisionClass::Float32Inputs &&
          (pinNormalizationInputs_ || !subtractsMean(node->kind())))
        pinProducers(*node);
    for (Node *node : order)
      rewrite(*node);
    castOutputsBack();
    return changed_;
  }

private:
  uint16_t toStorage(float value) const {
    return storage_ == DType::Float16 ? floatToHalf(value) : floatToBfloat16(value);
  }
  float fromStorage(uint16_t bits) const {
    return storage_ == DType::Float16 ? halfToFloat(bits) : bfloat16ToFloat(bits);
  }

  /// Whether a float32 constant keeps its meaning in the storage type: no finite element becomes
  /// infinite, and a tensor with nonzero elements does not become all zeros (an epsilon).
  bool fits(const Tensor &tensor) const {
    bool anyNonzero = false, anySurvives = false;
    for (float value : tensor.values<float>()) {
      float rounded = fromStorage(toStorage(value));
      if (std::isfinite(value) && !std::isfinite(rounded))
        return false;
      anyNonzero |= value != 0;
      anySurvives |= rounded != 0;
    }
    return !anyNonzero || anySurvives;
  }

  bool isFloat32Constant(const Value *value) const {
    return value && value->isConstant() && value->dtype() == DType::Float32;
  }

  Mode initialMode(const Node &node) const {
    const PrecisionRule &rule = precisionRule(node.kind());
    switch (rule.precision) {
    case PrecisionClass::Agnostic:
      return Mode::Skip;
    case PrecisionClass::Float32:
    case PrecisionClass::Float32Inputs:
      return Mode::Float32;
    case PrecisionClass::Reduced:
    case PrecisionClass::Follow:
      for (int i = 0; i < node.numInputs(); ++i)
        if (rule.carriesData(i) && isFloat32Constant(node.input(i)) && !fits(node.input(i)->constant()))
          return Mode::Float32;
      return rule.precision == PrecisionClass::Reduced ? Mode::Reduced : Mode::Follow;
    }
    return Mode::Float32;
  }

  /// Sums, differences, products and quotients pass the pin on to their operands' producers: a
  /// softmax's logits scaled and masked after Q.K^T, or a LayerNorm's residual sum, are then sums
  /// and products of unrounded values (the producers are usually contractions, whose f32
  /// results cost nothing more in their own kernels than f16 ones).
  static bool passesPinThrough(OpKind kind) {
    return kind == OpKind::Add || kind == OpKind::Sub || kind == OpKind::Mul || kind == OpKind::Div;
  }

  /// The producers of the node's float32 inputs compute in f32, and so, through views and
  /// selections (Follow ops) and arithmetic (passesPinThrough), do the producers of those ops'
  /// data.
  void pinProducers(const Node &consumer) {
    std::vector<const Value *> pending;
    for (const Value *input : consumer.inputs())
      if (input && input->dtype() == DType::Float32)
        pending.push_back(input);
    while (!pending.empty()) {
      const Value *value = pending.back();
      pending.pop_back();
      Node *producer = value->producer();
      if (!producer || !pinned_.insert(producer).second)
        continue;
      Mode &mode = mode_[producer];
      if (mode == Mode::Reduced && isContraction(producer->kind())) {
        mode = Mode::RoundedInputs;
        continue;
      }
      if (mode == Mode::Reduced || mode == Mode::Follow)
        mode = Mode::Float32;
      const PrecisionRule &rule = precisionRule(producer->kind());
      if (rule.precision != PrecisionClass::Follow && !passesPinThrough(producer->kind()))
        continue;
      for (int i = 0; i < producer->numInputs(); ++i) {
        const Value *input = producer->input(i);
        if (input && rule.carriesData(i) && input->dtype() == DType::Float32)
          pending.push_back(input);
      }
    }
  }

  /// A Follow node stores reduced unless one of its non-constant data inputs is float32 now.
  Mode followMode(const Node &node, const PrecisionRule &rule) const {
    for (int i = 0; i < node.numInputs(); ++i) {
      const Value *input = node.input(i);
      if (input && rule.carriesData(i) && !input->isConstant() && input->dtype() == DType::Float32)
        return Mode::Float32;
    }
    return Mode::Reduced;
  }

  /// Whether every use of the node's outputs wants them in the storage type: a data input of a
  /// Reduced node, or of a Follow node whose own outputs are all wanted so (and none is a graph
  /// output). Rounding before such a node is then the same as rounding after it (moving,
  /// selecting and comparing values commutes with rounding them), and the node moves half the
  /// bytes; the rounding lands next to the producer, whose kernel stores the storage type.
  bool onlyReducedUses(const Node &node) {
    auto [it, isNew] = onlyReducedUses_.try_emplace(&node, false);
    if (!isNew)
      return it->second;
    bool any = false;
    for (const Value *output : node.outputs()) {
      if (!output)
        continue;
      if (graph_.isOutput(output))
        return false;
      for (const Use &use : output->uses()) {
        const Node &user = *use.user;
        Mode mode = mode_.at(&user);
        if (!precisionRule(user.kind()).carriesData(use.index) ||
            !(mode == Mode::Reduced || mode == Mode::RoundedInputs ||
              (mode == Mode::Follow && onlyReducedUses(user))))
          return false;
        any = true;
      }
    }
    it->second = any;
    return any;
  }

  Value *addCast(Value *value, DType to, Node *before) {
    Node *cast = graph_.addNode(OpKind::Cast, {value}, 1, "",
                                {value->name() + "." + std::string(dtypeName(to))}, before);
    cast->setAttr("to", int64_t(dtypeToOnnx(to)));
    cast->output()->setType({to, value->shape()});
    changed_ = true;
    return cast->output();
  }

  /// `value` (float32) in the storage type: a converted constant, or a Cast before `user`.
  Value *reduced(Value *value, Node *user) {
    auto [it, isNew] = reducedOf_.try_emplace(value, nullptr);
    if (!isNew)
      return it->second;
    if (value->isConstant()) {
      const Tensor &source = value->constant();
      Tensor tensor(storage_, source.dims());
      std::span<const float> values = source.values<float>();
      uint16_t *bits = tensor.data<uint16_t>();
      for (size_t i = 0; i < values.size(); ++i)
        bits[i] = toStorage(values[i]);
      it->second = graph_.addConstant(value->name() + "." + std::string(dtypeName(storage_)),
                                      std::move(tensor));
      changed_ = true;
    } else {
      it->second = addCast(value, storage_, user);
    }
    return it->second;
  }

  /// A value this pass turned to the storage type, back in float32 (a Cast before `user`).
  Value *widened(Value *value, Node *user) {
    auto [it, isNew] = widenedOf_.try_emplace(value, nullptr);
    if (isNew)
      it->second = addCast(value, DType::Float32, user);
    return it->second;
  }

  void rewrite(Node &node) {
    Mode mode = mode_.at(&node);
    if (mode == Mode::Skip)
      return;
    const PrecisionRule &rule = precisionRule(node.kind());
    if (mode == Mode::Follow) {
      mode = followMode(node, rule);
      if (mode == Mode::Float32 && onlyReducedUses(node))
        mode = Mode::Reduced;
    }
    for (int i = 0; i < node.numInputs(); ++i) {
      Value *input = node.input(i);
      if (!input)
        continue;
      // The factors (inputs 0 and 1) are rounded; a bias (Gemm's C, Conv's B) is added to the
      // f32 sums as it is.
      if (mode == Mode::RoundedInputs && i < 2 && isFloat(input->dtype())) {
        Value *rounded = input->dtype() == DType::Float32 && !converted_.count(input) ? reduced(input, &node) : input;
        if (rounded->dtype() == storage_) {
          node.setInput(i, widened(rounded, &node));
          changed_ = true;
        }
        continue;
      }
      bool reducedSlot = mode == Mode::Reduced && rule.carriesData(i);
      if (reducedSlot && input->dtype() == DType::Float32) {
        node.setInput(i, reduced(input, &node));
        changed_ = true;
      } else if (!reducedSlot && converted_.count(input)) {
        node.setInput(i, widened(input, &node));
        changed_ = true;
      }
    }
    if (mode != Mode::Reduced)
      return;
    std::vector<TensorType> types = inferOutputTypes(node);
    for (int o = 0; o < node.numOutputs(); ++o) {
      Value *output = node.output(o);
      if (types[o] == output->type())
        continue;
      SINTER_ASSERT(output->dtype() == DType::Float32 && types[o].dtype == storage_ &&
                        types[o].shape == output->shape(),
                    "reduce-precision: ", node.describe(), " output ", o, " would change from ",
                    output->type().str(), " to ", types[o].str(),
                    "; the precision table's data inputs for ", node.opName(), " are wrong");
      output->setType(types[o]);
      converted_.insert(output);
      changed_ = true;
    }
  }

  /// Graph outputs keep their names and float32: a reduced one is renamed and cast back up under
  /// its own name (reusing the Cast up a float32 consumer already has).
  void castOutputsBack() {
    std::map<Value *, Value *> restored;
    for (size_t i = 0; i < graph_.outputs().size(); ++i) {
      Value *output = graph_.outputs()[i];
      if (!converted_.count(output))
        continue;
      auto [it, isNew] = restored.try_emplace(output, nullptr);
      if (isNew) {
        std::string name = output->name();
        graph_.renameValue(output, name + "." + std::string(dtypeName(storage_)));
        auto wide = widenedOf_.find(output);
        it->second = wide != widenedOf_.end() ? wide->second : addCast(output, DType::Float32, nullptr);
        graph_.renameValue(it->second, name);
      }
      graph_.setOutput(int(i), it->second);
      changed_ = true;
    }
  }

  Graph &graph_;
  DType storage_;
  std::map<const Node *, Mode> mode_;
  std::set<const Node *> pinned_;
  std::map<const Node *, bool> onlyReducedUses_;
  std::set<const Value *> converted_;          ///< values this pass turned to the storage type
  std::map<Value *, Value *> reducedOf_, widenedOf_; ///< shared casts and converted constants
  bool pinNormalizationInputs_;
  bool changed_ = false;
};

} // namespace

bool ReducePrecision::run(Graph &graph) {
  if (storage_ == DType::Float32)
    return false;
  SINTER_ASSERT(storage_ == DType::Float16 || storage_ == DType::BFloat16,
                "reduce-precision stores float32 as f16 or bf16, not ", dtypeName(storage_));
  return Reducer(graph, storage_, pinNormalizationInputs_).run();
}

} // namespace sinter
