#include "sinter/codegen/lowering/lowering.h"

#include "sinter/codegen/kernel/low_precision_cast.h"
#include "lowering_rules.h"
#include "sinter/ir/data_dependence.h"
#include "sinter/support/error.h"

#include <algorithm>
#include <map>
#include <set>

namespace sinter::codegen {

DType computeType(DType storage) {
  // Low-precision types stay their bytes: ops that move data copy them bit for bit, and Cast,
  // QuantizeLinear and DequantizeLinear convert explicitly (low_precision_cast.h).
  return storage == DType::Float16 || storage == DType::BFloat16 ? DType::Float32 : storage;
}

const Accessor &RuleContext::input(int i) const {
  SINTER_ASSERT(hasInput(i), node_.describe(), " has no input ", i);
  return inputs_[i];
}

std::vector<int64_t> RuleContext::inputDims(int i) const {
  return staticDims(node_.input(i)->shape());
}
std::vector<int64_t> RuleContext::outputDims(int i) const {
  return staticDims(node_.output(i)->shape());
}
DType RuleContext::inputType(int i) const { return computeType(node_.input(i)->dtype()); }
DType RuleContext::outputType(int i) const { return computeType(node_.output(i)->dtype()); }

StmtRef RuleContext::store(int output, ExprRef flatIndex, ExprRef value) const {
  if (storeHook_)
    return storeHook_(output, std::move(flatIndex), std::move(value));
  DType storage = node_.output(output)->dtype();
  return codegen::store(outputBuffers_.at(output), std::move(flatIndex), cast(std::move(value), storage));
}

void LoweringTable::addInjective(OpKind kind, InjectiveRule rule) {
  registrar_.admit(kind);
  SINTER_ASSERT(!injective_[int(kind)] && !kernel_[int(kind)], "two lowering rules for ", opName(kind));
  injective_[int(kind)] = rule;
}
void LoweringTable::addKernel(OpKind kind, KernelRule rule) {
  registrar_.admit(kind);
  SINTER_ASSERT(!injective_[int(kind)] && !kernel_[int(kind)], "two lowering rules for ", opName(kind));
  kernel_[int(kind)] = rule;
}

const LoweringTable &loweringTable() {
  static const LoweringTable table = [] {
    LoweringTable table;
    table.registerFamily(OpFamily::Elementwise, registerElementwiseLowering);
    table.registerFamily(OpFamily::Contraction, registerContractionLowering);
    table.registerFamily(OpFamily::Contraction, registerLinearAlgebraLowering);
    table.registerFamily(OpFamily::Convolution, registerConvolutionLowering);
    table.registerFamily(OpFamily::Pooling, registerPoolingLowering);
    table.registerFamily(OpFamily::Normalization, registerNormalizationLowering);
    table.registerFamily(OpFamily::Reduction, registerReductionLowering);
    table.registerFamily(OpFamily::DataMovement, registerDataMovementLowering);
    table.registerFamily(OpFamily::Indexing, registerIndexingLowering);
    table.registerFamily(OpFamily::Indexing, registerScatterLowering);
    table.registerFamily(OpFamily::Resampling, registerResamplingLowering);
    table.registerFamily(OpFamily::Creation, registerCreationLowering);
    table.registerFamily(OpFamily::Attention, registerAttentionLowering);
    table.registerFamily(OpFamily::Recurrent, registerRecurrentLowering);
    table.registerFamily(OpFamily::Recurrent, registerStatefulRecurrentLowering);
    table.registerFamily(OpFamily::Loss, registerLossLowering);
    table.registerFamily(OpFamily::Quantization, registerQuantizationLowering);
    table.registerFamily(OpFamily::Quantization, registerQuantizedMatMulLowering);
    table.registerFamily(OpFamily::Signal, registerSignalLowering);
    table.registerFamily(OpFamily::Detection, registerDetectionLowering);
    table.registerFamily(OpFamily::Counting, registerCountingLowering);
    return table;
  }();
  return table;
}

namespace {

bool sameExpr(const ExprRef &a, const ExprRef &b) {
  if (a == b)
    return true;
  if (a->kind != b->kind || a->type != b->type)
    return false;
  if (a->kind == ExprKind::Var)
    return a->id == b->id;
  if (a->kind == ExprKind::Constant)
    return a->intValue == b->intValue && a->floatValue == b->floatValue;
  return false;
}

/// x / c as (x, c); an expression that is not a division by a constant is x / 1.
std::pair<ExprRef, int64_t> asQuotient(const ExprRef &e) {
  if (e->kind == ExprKind::Binary && e->binary == BinaryOp::Div && e->operands[1]->kind == ExprKind::Constant)
    return {e->operands[0], e->operands[1]->intValue};
  return {e, 1};
}

/// Merges the adjacent entries (x / (c*b), (x / c) % b) of a multi-index over dims (.., D, b, ..)
/// into x / c over (.., D*b, ..): the same flat index, since (x/(c*b))*b + (x/c)%b = x/c for
/// c, b > 0 (with C's truncating division too). Ravelling an unravelled index then gives the
/// flat index back, without the divisions.
void mergeUnravelled(std::vector<ExprRef> &index, std::vector<int64_t> &dims) {
  for (size_t i = 0; i + 1 < index.size();) {
    const ExprRef &low = index[i + 1];
    bool merged = false;
    if (low->kind == ExprKind::Binary && low->binary == BinaryOp::Rem &&
        low->operands[1]->kind == ExprKind::Constant && low->operands[1]->intValue == dims[i + 1] &&
        dims[i + 1] > 0) {
      auto [x, c] = asQuotient(low->operands[0]);
      auto [y, a] = asQuotient(index[i]);
      if (c > 0 && a == c * dims[i + 1] && sameExpr(x, y)) {
        index[i] = low->operands[0];
        dims[i] *= dims[i + 1];
        index.erase(index.begin() + i + 1);
        dims.erase(dims.begin() + i + 1);
        merged = true;
      }
    }
    if (!merged)
      ++i;
  }
}

} // namespace

ExprRef ravelIndex(const std::vector<ExprRef> &index, const std::vector<int64_t> &dims) {
  std::vector<ExprRef> at = index;
  std::vector<int64_t> extents = dims;
  mergeUnravelled(at, extents);
  ExprRef flat = intConstant(0);
  for (size_t i = 0; i < extents.size(); ++i)
    flat = add(mul(flat, extents[i]), at[i]);
  return flat;
}

std::vector<ExprRef> unravelIndex(ExprRef flat, const std::vector<int64_t> &dims) {
  std::vector<ExprRef> index(dims.size());
  // The flat index is in range, so a dim of one is index 0, and the outermost dim of more than
  // one (every dim before it is one) needs no modulo.
  size_t outermost = 0;
  while (outermost + 1 < dims.size() && dims[outermost] == 1)
    ++outermost;
  int64_t stride = 1;
  for (int i = int(dims.size()) - 1; i >= 0; --i) {
    ExprRef quotient = stride == 1 ? flat : div(flat, stride);
    index[i] = dims[i] == 1 ? intConstant(0) : size_t(i) <= outermost ? quotient : rem(quotient, dims[i]);
    stride *= dims[i];
  }
  return index;
}

std::vector<ExprRef> broadcastIndex(const std::vector<ExprRef> &outIndex,
                                    const std::vector<int64_t> &inDims) {
  std::vector<ExprRef> index(inDims.size());
  size_t offset = outIndex.size() - inDims.size();
  for (size_t i = 0; i < inDims.size(); ++i)
    index[i] = inDims[i] == 1 ? intConstant(0) : outIndex[offset + i];
  return index;
}

ExprRef firstElement(const RuleContext &ctx, int input) {
  std::vector<ExprRef> zeros(ctx.inputDims(input).size(), intConstant(0));
  return ctx.input(input)(zeros);
}

int64_t normalizedAxis(const Node &node, int64_t axis, int64_t rank) {
  int64_t normalized = axis < 0 ? axis + rank : axis;
  if (normalized < 0 || normalized >= std::max<int64_t>(rank, 1))
    userError(node.describe(), ": axis ", axis, " is out of range for rank ", rank);
  return normalized;
}

int64_t productOf(const std::vector<int64_t> &dims, size_t begin, size_t end) {
  end = std::min(end, dims.size());
  int64_t result = 1;
  for (size_t i = begin; i < end; ++i)
    result *= dims[i];
  return result;
}

ExprRef typedConstant(DType type, double value) {
  if (isFloat(type) || isLowPrecision(type)) // a low-precision constant holds its encoding
    return constant(type, value);
  if (isFloat(type))
    return constant(type, value);
  if (type == DType::Bool)
    return boolConstant(value != 0);
  return intConstant(int64_t(value), type);
}

ExprRef floatLoadBeneathCasts(const ExprRef &value) {
  auto floatStorage = [](DType type) {
    return type == DType::Float32 || type == DType::Float16 || type == DType::BFloat16;
  };
  ExprRef load = value;
  for (; load->kind == ExprKind::Cast; load = load->operands[0])
    if (!floatStorage(load->type))
      return nullptr;
  return load->kind == ExprKind::Load && floatStorage(load->type) ? load : nullptr;
}

ExprRef clampIndex(ExprRef index, int64_t size) {
  index = binary(BinaryOp::Max, index, intConstant(0));
  return binary(BinaryOp::Min, index, intConstant(std::max<int64_t>(size - 1, 0)));
}

ExprRef dataIndex(ExprRef raw, int64_t size) {
  ExprRef index = cast(raw, DType::Int64);
  index = select(binary(BinaryOp::Lt, index, intConstant(0)), add(index, size), index);
  return clampIndex(index, size);
}

std::vector<int64_t> constantInts(const RuleContext &ctx, int i, const char *what) {
  const Value *value = ctx.node().input(i);
  if (!value)
    return {};
  if (!value->isConstant())
    userError(ctx.node().describe(), ": ", what, " must be a constant to compile",
              bindInputHint(graphInputsFeeding(*value)));
  return value->constant().toInts();
}

bool isInjective(const Node &node) { return loweringTable().injective(node.kind()) != nullptr; }

bool canLower(const Node &node) {
  const LoweringTable &table = loweringTable();
  return table.injective(node.kind()) || table.kernel(node.kind());
}

std::string kernelName(const std::vector<const Node *> &nodes, int index) {
  std::string name = "fused";
  for (const Node *node : nodes) {
    name += "_";
    for (char c : node->opName())
      name += char(std::tolower(static_cast<unsigned char>(c)));
  }
  return name + "_" + std::to_string(index);
}

const Node *soleCoreNode(const KernelGroup &group, const std::function<bool(const Node &)> &isCore) {
  const Node *core = nullptr;
  for (const Node *node : group.nodes) {
    if (isCore(*node)) {
      if (core)
        return nullptr;
      core = node;
    } else if (!loweringTable().injective(node->kind())) {
      return nullptr;
    }
  }
  return core;
}

GroupBuffers declareGroupBuffers(const KernelGroup &group, KernelBuilder &builder) {
  GroupBuffers buffers;
  for (const Value *input : group.inputs) {
    SINTER_ASSERT(isStatic(input->shape()), "group input '", input->name(), "' is not static");
    std::vector<int64_t> dims = staticDims(input->shape());
    int buffer = builder.addBuffer(input->name(), input->dtype(), *elementCount(input->shape()), false);
    DType storage = input->dtype();
    buffers.accessors[input] = [buffer, dims, storage](const std::vector<ExprRef> &index) {
      return cast(load(buffer, storage, ravelIndex(index, dims)), computeType(storage));
    };
  }
  for (const Value *output : group.outputs)
    buffers.outputBuffers[output] = builder.addBuffer(output->name(), output->dtype(),
                                                      *elementCount(output->shape()), true);
  return buffers;
}

bool lowerGroupNodes(const KernelGroup &group, KernelBuilder &builder, GroupBuffers &buffers,
                     const std::function<void(const RuleContext &)> &emitKernel) {
  const LoweringTable &table = loweringTable();
  std::map<const Value *, Accessor> &accessors = buffers.accessors;
  std::set<const Value *> produced;
  const Node *kernelNode = nullptr;
  for (const Node *node : group.nodes) {
    checkLowPrecisionLowering(*node);
    if (!table.injective(node->kind())) {
      if (!table.kernel(node->kind()))
        userError(node->describe(), ": sinter cannot generate code for ", node->opName(), " yet");
      SINTER_ASSERT(!kernelNode, "group ", group.name, " has two kernel nodes: ", kernelNode->describe(),
                    " and ", node->describe());
      kernelNode = node;
    }
    for (Value *output : node->outputs())
      if (output)
        produced.insert(output);
  }
  auto consumedInGroup = [&](const Value *value) {
    for (const Use &use : value->uses())
      if (std::find(group.nodes.begin(), group.nodes.end(), use.user) != group.nodes.end())
        return true;
    return false;
  };

  // A node's input accessors and its outputs' buffers (-1: not stored).
  auto inputsOf = [&](const Node &node) {
    std::vector<Accessor> inputs;
    for (Value *input : node.inputs())
      inputs.push_back(input ? accessors.at(input) : Accessor());
    return inputs;
  };
  auto outputsOf = [&](const Node &node) {
    std::vector<int> outputs;
    for (Value *output : node.outputs())
      outputs.push_back(output && buffers.outputBuffers.count(output) ? buffers.outputBuffers.at(output) : -1);
    return outputs;
  };

  // The element of each kernel output that the kernel is storing now: its epilogue reads it
  // at the index being stored (epilogue nodes are elementwise over the kernel output's shape).
  auto storing = std::make_shared<std::map<const Value *, ExprRef>>();
  for (const Node *node : group.nodes) {
    if (node == kernelNode) {
      for (Value *output : node->outputs())
        if (output && consumedInGroup(output))
          accessors[output] = [storing, output](const std::vector<ExprRef> &) {
            auto it = storing->find(output);
            SINTER_ASSERT(it != storing->end(), "'", output->name(), "' read outside its kernel's store");
            return it->second;
          };
      continue;
    }
    InjectiveRule rule = table.injective(node->kind());
    auto context = std::make_shared<RuleContext>(*node, builder, inputsOf(*node), outputsOf(*node));
    for (int i = 0; i < node->numOutputs(); ++i)
      accessors[node->output(i)] = [context, rule, i](const std::vector<ExprRef> &index) {
        return rule(*context, i, index);
      };
  }
  if (!kernelNode)
    return false;

  // For each kernel output, the group outputs computed from it after the kernel.
  const Node &node = *kernelNode;
  std::vector<std::vector<const Value *>> downstream(node.numOutputs());
  std::vector<bool> consumed(node.numOutputs(), false);
  size_t position = std::find(group.nodes.begin(), group.nodes.end(), kernelNode) - group.nodes.begin();
  for (int o = 0; o < node.numOutputs(); ++o) {
    if (!node.output(o))
      continue;
    consumed[o] = consumedInGroup(node.output(o));
    std::set<const Value *> reach = {node.output(o)};
    for (size_t n = position + 1; n < group.nodes.size(); ++n) {
      const Node *later = group.nodes[n];
      bool reads = std::any_of(later->inputs().begin(), later->inputs().end(),
                               [&](Value *input) { return input && reach.count(input); });
      if (!reads)
        continue;
      for (Value *output : later->outputs()) {
        reach.insert(output);
        if (buffers.outputBuffers.count(output)) {
          // Elementwise links and reshapes (fusion.cpp): the element stored at a flat index of
          // the kernel's output gives the element at that flat index of each output after it.
          SINTER_ASSERT(elementCount(output->shape()) == elementCount(node.output(o)->shape()),
                        "epilogue output '", output->name(), "' has another size than '",
                        node.output(o)->name(), "'");
          downstream[o].push_back(output);
        }
      }
    }
  }
  std::vector<int> outputs = outputsOf(node);
  bool hasEpilogue = std::any_of(consumed.begin(), consumed.end(), [](bool c) { return c; });
  StoreHook hook;
  if (hasEpilogue) {
    hook = [&node, &builder, &buffers, &accessors, storing, downstream, outputs](
               int o, ExprRef flat, ExprRef value) -> StmtRef {
      const Value *result = node.output(o);
      std::vector<StmtRef> statements;
      // The value once, in a local, however many epilogue outputs read it.
      int local = builder.addVariable("stored", value->type);
      statements.push_back(assign(local, value));
      ExprRef stored = var(local, value->type);
      if (outputs[o] >= 0)
        statements.push_back(codegen::store(outputs[o], flat, cast(stored, result->dtype())));
      (*storing)[result] = stored;
      for (const Value *output : downstream[o])
        statements.push_back(
            codegen::store(buffers.outputBuffers.at(output), flat,
                           cast(accessors.at(output)(unravelIndex(flat, staticDims(output->shape()))), output->dtype())));
      storing->erase(result);
      return block(std::move(statements));
    };
  }
  RuleContext context(node, builder, inputsOf(node), outputs, hook, consumed);
  emitKernel(context);
  return true;
}

Kernel lowerGroup(const KernelGroup &group) {
  const LoweringTable &table = loweringTable();
  KernelBuilder builder(group.name);
  GroupBuffers buffers = declareGroupBuffers(group, builder);
  bool wroteKernel = lowerGroupNodes(group, builder, buffers, [&](const RuleContext &context) {
    table.kernel(context.node().kind())(context);
  });
  if (!wroteKernel) {
    // Every group output produced by injective rules: one parallel pass over the largest output,
    // each store guarded by its own size.
    int64_t extent = 1;
    for (const Value *output : group.outputs)
      extent = std::max(extent, *elementCount(output->shape()));
    builder.setParallelExtent(extent);
    for (const Value *output : group.outputs) {
      int64_t count = *elementCount(output->shape());
      std::vector<int64_t> dims = staticDims(output->shape());
      ExprRef value = buffers.accessors.at(output)(unravelIndex(builder.gid(), dims));
      StmtRef write = store(buffers.outputBuffers.at(output), builder.gid(), cast(value, output->dtype()));
      if (count == extent)
        builder.emit(write);
      else
        builder.emit(ifThen(binary(BinaryOp::Lt, builder.gid(), intConstant(count)), {write}));
    }
  }
  std::string halfArithmetic = findHalfArithmetic(builder.kernel());
  SINTER_ASSERT(halfArithmetic.empty(), "kernel ", group.name,
                " computes in a 16-bit float type (they are storage only): ", halfArithmetic);
  return builder.take();
}

} // namespace sinter::codegen
