// Buffer assignment (codegen/buffer_assignment.h): which groups are views that alias their
// source, which value owns each alias's bytes, and the lifetimes handed to the arena planner.
// The expected steps are worked out by hand from the header's rules: step i is group i, graph
// inputs start at -1, graph outputs end at the number of groups, aliases extend their owner.
#include "sinter/codegen/schedule/buffer_assignment.h"
#include "sinter/codegen/schedule/fusion.h"
#include "sinter/ir/parser.h"

#include <gtest/gtest.h>

using namespace sinter;
using namespace sinter::codegen;

namespace {

const Value *valueNamed(const Graph &graph, const std::string &name) {
  for (Value *input : graph.inputs())
    if (input->name() == name)
      return input;
  for (const auto &node : graph.nodes())
    for (Value *output : node->outputs())
      if (output->name() == name)
        return output;
  for (Value *constant : graph.constants())
    if (constant->name() == name)
      return constant;
  ADD_FAILURE() << "no value " << name;
  return nullptr;
}

/// The lifetime of the owner of `name`'s bytes, as "first..last (bytes)".
std::string lifetimeOf(const Graph &graph, const BufferAssignment &buffers, const std::string &name) {
  const Value *owner = buffers.storageOf(valueNamed(graph, name));
  auto it = buffers.arenaIndex.find(owner);
  if (it == buffers.arenaIndex.end())
    return "none";
  const BufferLifetime &lifetime = buffers.lifetimes[it->second];
  return std::to_string(lifetime.firstStep) + ".." + std::to_string(lifetime.lastStep) + " (" +
         std::to_string(lifetime.bytes) + ")";
}

} // namespace

TEST(BufferAssignment, AViewChainAliasesTheFirstOwnerWhoseLifetimeCoversEveryAlias) {
  // Unfused: Exp (0), Reshape (1), Flatten (2), Neg (3). The two views alias %e, so %e lives
  // from its write at step 0 to Neg's read of %f at step 3, and neither view is a kernel.
  std::unique_ptr<Graph> graph = parseGraph(R"(graph @main(%x: f32[2,3,4]) -> (%y) {
  %e = Exp(%x) : f32[2,3,4]
  %shape = constant i64[2] [6, 4]
  %r = Reshape(%e, %shape) : f32[6,4]
  %f = Flatten(%r) {axis = 0} : f32[1,24]
  %y = Neg(%f) : f32[1,24]
  return
})");
  std::vector<KernelGroup> groups = formKernelGroups(*graph, false);
  ASSERT_EQ(groups.size(), 4u);
  BufferAssignment buffers = assignBuffers(*graph, groups);
  EXPECT_EQ(buffers.viewGroup, (std::vector<bool>{false, true, true, false}));
  EXPECT_EQ(buffers.storageOf(valueNamed(*graph, "r")), valueNamed(*graph, "e"));
  EXPECT_EQ(buffers.storageOf(valueNamed(*graph, "f")), valueNamed(*graph, "e"));
  EXPECT_EQ(buffers.storageOf(valueNamed(*graph, "y")), valueNamed(*graph, "y"));
  EXPECT_EQ(lifetimeOf(*graph, buffers, "f"), "0..3 (96)");
  // The input is copied in before step 0; the output is copied out after the last step (4).
  EXPECT_EQ(lifetimeOf(*graph, buffers, "x"), "-1..0 (96)");
  EXPECT_EQ(lifetimeOf(*graph, buffers, "y"), "3..4 (96)");
  // Owners only, in the order of first touch: the input, then each group's reads and writes.
  ASSERT_EQ(buffers.arenaValues.size(), 3u);
  EXPECT_EQ(buffers.arenaValues[0]->name(), "x");
  EXPECT_EQ(buffers.arenaValues[1]->name(), "e");
  EXPECT_EQ(buffers.arenaValues[2]->name(), "y");
  EXPECT_EQ(buffers.lifetimes.size(), buffers.arenaValues.size());
  // The shape constant lives in the weights blob: no lifetime.
  EXPECT_EQ(lifetimeOf(*graph, buffers, "shape"), "none");
}

TEST(BufferAssignment, AViewOfAGraphInputThatIsAnOutputKeepsTheInputAliveToTheEnd) {
  std::unique_ptr<Graph> graph = parseGraph(R"(graph @main(%x: f32[4,2]) -> (%u, %z) {
  %axes = constant i64[1] [0]
  %u = Unsqueeze(%x, %axes) : f32[1,4,2]
  %z = Relu(%x) : f32[4,2]
  return
})");
  std::vector<KernelGroup> groups = formKernelGroups(*graph, false);
  ASSERT_EQ(groups.size(), 2u);
  BufferAssignment buffers = assignBuffers(*graph, groups);
  EXPECT_EQ(buffers.storageOf(valueNamed(*graph, "u")), valueNamed(*graph, "x"));
  EXPECT_EQ(lifetimeOf(*graph, buffers, "x"), "-1..2 (32)");
}

TEST(BufferAssignment, GroupsThatComputeAreNotViews) {
  // A Transpose moves bytes; a Reshape fused into a Relu is part of a kernel that computes; an
  // Identity of a constant reads the weights blob, which an arena value cannot alias.
  std::unique_ptr<Graph> graph = parseGraph(R"(graph @main(%x: f32[2,3]) -> (%t, %y, %k) {
  %t = Transpose(%x) {perm = [1, 0]} : f32[3,2]
  %shape = constant i64[1] [6]
  %r = Reshape(%x, %shape) : f32[6]
  %y = Relu(%r) : f32[6]
  %c = constant f32[2] [1, 2]
  %k = Identity(%c) : f32[2]
  return
})");
  std::vector<KernelGroup> fused = formKernelGroups(*graph, true);
  BufferAssignment buffers = assignBuffers(*graph, fused);
  for (size_t i = 0; i < fused.size(); ++i)
    EXPECT_FALSE(buffers.viewGroup[i]) << fused[i].name;
  EXPECT_TRUE(buffers.storage.empty());
  for (const KernelGroup &group : fused)
    EXPECT_EQ(viewSource(group), nullptr) << group.name;
}

TEST(BufferAssignment, AConstantGraphOutputGetsAnArenaSlotAtTheEnd) {
  std::unique_ptr<Graph> graph = parseGraph(R"(graph @main(%x: f32[3]) -> (%y, %c) {
  %y = Neg(%x) : f32[3]
  %c = constant f32[2] [1, 2]
  return
})");
  std::vector<KernelGroup> groups = formKernelGroups(*graph, false);
  ASSERT_EQ(groups.size(), 1u);
  BufferAssignment buffers = assignBuffers(*graph, groups);
  EXPECT_EQ(lifetimeOf(*graph, buffers, "c"), "1..1 (8)");
}
