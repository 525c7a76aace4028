// Shape buckets in the artifact format (docs/artifact-format.md, "Shape buckets") and the runtime's
// padded copies (runtime/padding.h): a bucketed manifest round-trips behind its header feature bit,
// unknown feature bits and inconsistent plans are refused with what is wrong, and the copy runs
// place a smaller tensor exactly where a plainly-written element loop puts it.
#include "../../runtime/padding.h"
#include "sinter/package/format.h"
#include "sinter/support/error.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace sinter;
using namespace sinter::package;

namespace {

TensorSignature signature(const std::string &name, std::vector<int64_t> dims, uint64_t offset) {
  TensorSignature tensor;
  tensor.name = name;
  tensor.dims = std::move(dims);
  tensor.dimSymbols = {"batch", ""};
  tensor.arenaOffset = offset;
  return tensor;
}

/// Two plans of y = relu(x) for x f32[batch, 4], batch in {1, 2}.
Manifest bucketedManifest() {
  Manifest manifest;
  manifest.target = Target::Cpu;
  manifest.producer = "test";
  Kernel first, second;
  first.name = "relu_0";
  second.name = "relu_0_p1";
  manifest.kernels = {first, second};
  manifest.inputs = {signature("x", {1, 4}, 0)};
  manifest.outputs = {signature("y", {1, 4}, 256)};
  manifest.arenaBytes = 512;
  Launch launch;
  launch.args = {{Region::Arena, 0}, {Region::Arena, 256}};
  launch.argBytes = {16, 16}; // f32[1, 4] each
  manifest.steps = {launch};
  Plan plan;
  plan.inputs = {signature("x", {2, 4}, 0)};
  plan.outputs = {signature("y", {2, 4}, 256)};
  plan.arenaBytes = 512;
  launch.kernel = 1;
  launch.argBytes = {32, 32};
  plan.steps = {launch};
  manifest.additionalPlans = {plan};
  manifest.symbols = {{"batch", {1, 2}, true, ""}};
  return manifest;
}

std::string problemOf(const Manifest &manifest) { return findManifestProblem(manifest, 0); }

} // namespace

TEST(ShapeBucketFormat, ABucketedManifestRoundTripsBehindItsFeatureBit) {
  Manifest manifest = bucketedManifest();
  ASSERT_EQ(problemOf(manifest), "");
  std::vector<uint8_t> bytes = serializeManifest(manifest);
  uint64_t features;
  std::memcpy(&features, bytes.data() + 72, 8);
  EXPECT_EQ(features, kFeatureShapeBuckets);
  Manifest parsed = parseManifest(bytes);
  ASSERT_EQ(parsed.symbols.size(), 1u);
  EXPECT_EQ(parsed.symbols[0].name, "batch");
  EXPECT_EQ(parsed.symbols[0].buckets, (std::vector<int64_t>{1, 2}));
  EXPECT_TRUE(parsed.symbols[0].paddable);
  ASSERT_EQ(parsed.additionalPlans.size(), 1u);
  EXPECT_EQ(parsed.additionalPlans[0].inputs[0].dims, (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(std::get<Launch>(parsed.additionalPlans[0].steps[0]).kernel, 1u);
  EXPECT_EQ(std::get<Launch>(parsed.additionalPlans[0].steps[0]).argBytes,
            (std::vector<uint64_t>{32, 32}));
  EXPECT_EQ(serializeManifest(parsed), bytes);

  // A manifest of one shape keeps the field zero, as before buckets.
  Manifest single = bucketedManifest();
  single.symbols.clear();
  single.additionalPlans.clear();
  single.kernels.pop_back();
  std::vector<uint8_t> plain = serializeManifest(single);
  std::memcpy(&features, plain.data() + 72, 8);
  EXPECT_EQ(features, 0u);
}

TEST(ShapeBucketFormat, UnknownFeatureBitsAreRefusedAsNeedingANewerRuntime) {
  std::vector<uint8_t> bytes = serializeManifest(bucketedManifest());
  uint64_t features = kFeatureShapeBuckets | 4;
  std::memcpy(bytes.data() + 72, &features, 8);
  try {
    parseManifest(bytes);
    FAIL() << "parsed";
  } catch (const UserError &error) {
    EXPECT_NE(std::string(error.what()).find("needs features (header feature bits 4)"),
              std::string::npos)
        << error.what();
  }
}

TEST(ShapeBucketFormat, PlansThatDisagreeWithTheirBucketsAreRefused) {
  Manifest manifest = bucketedManifest();
  manifest.additionalPlans[0].inputs[0].dims = {3, 4};
  EXPECT_NE(problemOf(manifest).find("has dim 3 at axis 0 where its bucket of 'batch' is 2"),
            std::string::npos)
      << problemOf(manifest);

  manifest = bucketedManifest();
  manifest.symbols[0].buckets = {1, 2, 4};
  EXPECT_NE(problemOf(manifest).find("make 3 plans but the artifact has 2"), std::string::npos)
      << problemOf(manifest);

  manifest = bucketedManifest();
  manifest.symbols[0].buckets = {2, 1};
  EXPECT_NE(problemOf(manifest).find("not positive and ascending"), std::string::npos);

  manifest = bucketedManifest();
  manifest.additionalPlans[0].outputs[0].name = "z";
  EXPECT_NE(problemOf(manifest).find("plan 1's output 0 is not plan 0's"), std::string::npos);

  manifest = bucketedManifest(); // a plan's steps are checked against its own arena
  std::get<Launch>(manifest.additionalPlans[0].steps[0]).args[1].offset = 4096;
  EXPECT_NE(problemOf(manifest).find("plan 1 step 0 (relu_0_p1) argument 1"), std::string::npos)
      << problemOf(manifest);
}

TEST(PaddedCopyRuns, PlaceTheSmallerTensorWhereAnElementLoopDoes) {
  struct Case {
    std::vector<int64_t> small, big;
  };
  for (const Case &c : std::vector<Case>{{{3, 4}, {8, 4}},
                                         {{2, 3, 5}, {2, 8, 5}},
                                         {{3, 2, 5}, {4, 8, 5}},
                                         {{2, 3}, {2, 3}},
                                         {{0, 3}, {4, 3}}}) {
    int64_t smallCount = 1, bigCount = 1;
    for (size_t i = 0; i < c.small.size(); ++i) {
      smallCount *= c.small[i];
      bigCount *= c.big[i];
    }
    std::vector<int32_t> source(static_cast<size_t>(smallCount));
    for (int64_t i = 0; i < smallCount; ++i)
      source[size_t(i)] = int32_t(i + 1);
    std::vector<int32_t> placed(size_t(bigCount), 0), expected(size_t(bigCount), 0);
    for (const rt::CopyRun &run : rt::paddedCopyRuns(c.small, c.big, sizeof(int32_t)))
      std::memcpy(reinterpret_cast<char *>(placed.data()) + run.planOffset,
                  reinterpret_cast<const char *>(source.data()) + run.callerOffset, run.bytes);
    // The element loop: each index of the small tensor, at the same multi-index in the big one.
    for (int64_t i = 0; i < smallCount; ++i) {
      int64_t rest = i, at = 0, stride = 1;
      std::vector<int64_t> index(c.small.size());
      for (size_t axis = c.small.size(); axis-- > 0;) {
        index[axis] = rest % c.small[axis];
        rest /= c.small[axis];
      }
      for (size_t axis = c.small.size(); axis-- > 0;) {
        at += index[axis] * stride;
        stride *= c.big[axis];
      }
      expected[size_t(at)] = source[size_t(i)];
    }
    EXPECT_EQ(placed, expected);
  }
}
