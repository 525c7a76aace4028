#include "sinter/codegen/schedule/buffer_assignment.h"

#include <algorithm>

namespace sinter::codegen {

namespace {

uint64_t byteSizeOf(const Value *value) {
  return uint64_t(*elementCount(value->shape())) * dtypeSize(value->dtype());
}

/// Ops whose output is their first input's bytes under another shape.
bool reinterpretsBytes(OpKind kind) {
  return kind == OpKind::Reshape || kind == OpKind::Flatten || kind == OpKind::Squeeze ||
         kind == OpKind::Unsqueeze || kind == OpKind::Identity;
}

} // namespace

const Value *BufferAssignment::storageOf(const Value *value) const {
  auto it = storage.find(value);
  return it == storage.end() ? value : it->second;
}

const Value *viewSource(const KernelGroup &group) {
  if (group.outputs.size() != 1)
    return nullptr;
  for (const Node *node : group.nodes)
    if (!reinterpretsBytes(node->kind()))
      return nullptr;
  const Value *source = nullptr;
  for (const Value *input : group.inputs) {
    if (input->isConstant())
      continue; // a Reshape's shape
    if (source)
      return nullptr;
    source = input;
  }
  const Value *output = group.outputs[0];
  if (!source || source->dtype() != output->dtype() || byteSizeOf(source) != byteSizeOf(output))
    return nullptr;
  return source;
}

BufferAssignment assignBuffers(const Graph &graph, const std::vector<KernelGroup> &groups) {
  BufferAssignment result;
  result.viewGroup.assign(groups.size(), false);
  for (size_t i = 0; i < groups.size(); ++i) {
    if (const Value *source = viewSource(groups[i])) {
      result.storage[groups[i].outputs[0]] = result.storageOf(source);
      result.viewGroup[i] = true;
    }
  }

  auto touch = [&](const Value *aliasOrOwner, int64_t step) {
    const Value *value = result.storageOf(aliasOrOwner);
    auto [it, inserted] = result.arenaIndex.try_emplace(value, result.arenaValues.size());
    if (inserted) {
      result.arenaValues.push_back(value);
      result.lifetimes.push_back({byteSizeOf(value), step, step});
    }
    BufferLifetime &lifetime = result.lifetimes[it->second];
    lifetime.firstStep = std::min(lifetime.firstStep, step);
    lifetime.lastStep = std::max(lifetime.lastStep, step);
  };
  for (Value *input : graph.inputs())
    touch(input, -1);
  for (size_t i = 0; i < groups.size(); ++i) {
    for (const Value *input : groups[i].inputs)
      if (!input->isConstant())
        touch(input, int64_t(i));
    for (const Value *output : groups[i].outputs)
      touch(output, int64_t(i));
  }
  for (Value *output : graph.outputs())
    touch(output, int64_t(groups.size())); // constant outputs get an arena slot too
  return result;
}

} // namespace sinter::codegen
