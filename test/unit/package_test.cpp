// The serialized manifest (format.h): round trips of every field, the documented byte layout,
// and corrupt input of every kind (each prefix, each flipped byte, hostile counts) giving a clean
// UserError, never a crash.
#include "sinter/package/format.h"
#include "sinter/runtime.h"
#include "sinter/support/error.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

using namespace sinter;
using namespace sinter::package;

namespace {

/// A manifest with every field set to something other than its default.
Manifest fullManifest(Target target) {
  Manifest manifest;
  manifest.target = target;
  manifest.producer = "sinter 0.1.0 (test)";
  if (target == Target::Cpu)
    manifest.cpuLevels = {"x86-64-v3"};
  manifest.cudaArchs = {"sm_80", "sm_90"};
  TensorSignature x;
  x.name = "x";
  x.dtype = DType::Float16;
  x.dims = {2, 3, 5};
  x.dimSymbols = {"batch", "", "seq"};
  x.arenaOffset = 0;
  TensorSignature ids;
  ids.name = "token_ids";
  ids.dtype = DType::Int64;
  ids.dims = {};
  ids.arenaOffset = 256;
  TensorSignature y;
  y.name = "y";
  y.dtype = DType::BFloat16;
  y.dims = {2, 0, 7};
  y.dimSymbols = {"batch", "n", ""};
  y.arenaOffset = 512;
  manifest.inputs = {x, ids};
  manifest.outputs = {y};
  manifest.arenaBytes = 4096;
  manifest.activationBytes = 9999;
  manifest.weights.resize(700);
  for (size_t i = 0; i < manifest.weights.size(); ++i)
    manifest.weights[i] = static_cast<uint8_t>(i * 31 + 7);
  manifest.weightTable = {{"conv.weight", 0, 300}, {"conv.bias", 512, 188}};
  CudaModule first;
  first.binaries = {{"sm_90", false, {1, 2, 3, 4}}, {"compute_90", true, {'.', 'v', 'e', 'r'}}};
  CudaModule second;
  second.binaries = {{"sm_80", false, {9, 8, 7}}};
  manifest.cudaModules = {first, second};
  Kernel conv;
  conv.name = "fused_conv_add_relu_0";
  conv.generator = "cuda-c";
  conv.ops = {"Conv", "Add", "Relu"};
  conv.cudaModule = 1;
  conv.flops = 1.5e9;
  conv.bytesMoved = 3.25e6;
  Kernel softmax;
  softmax.name = "softmax_1";
  softmax.generator = "llvm-nvptx";
  softmax.ops = {"Softmax"};
  softmax.cudaModule = 0;
  manifest.kernels = {conv, softmax};
  // Kernels are first launched in declaration order; grids, blocks and shared memory are CUDA's.
  Launch launch;
  launch.kernel = 0;
  if (target == Target::Cuda) {
    launch.grid[0] = 4, launch.grid[1] = 5, launch.grid[2] = 6;
    launch.block[0] = 128, launch.block[1] = 2, launch.block[2] = 1;
    launch.sharedBytes = 49152;
  }
  launch.parallelExtent = 77;
  launch.args = {{Region::Arena, 0}, {Region::Weights, 512}, {Region::Arena, 4096}};
  launch.argBytes = {256, 188, 0};
  Copy copy;
  copy.source = {Region::Weights, 256};
  copy.destination = {Region::Arena, 1024};
  copy.bytes = 100;
  Launch softmaxLaunch;
  softmaxLaunch.kernel = 1;
  manifest.steps = {launch, copy, softmaxLaunch};
  manifest.sourceNodeCount = 42;
  return manifest;
}

void expectSameSignature(const TensorSignature &a, const TensorSignature &b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.dtype, b.dtype);
  EXPECT_EQ(a.dims, b.dims);
  EXPECT_EQ(a.dimSymbols, b.dimSymbols);
  EXPECT_EQ(a.arenaOffset, b.arenaOffset);
}

void expectSameRef(const BufferRef &a, const BufferRef &b) {
  EXPECT_EQ(a.region, b.region);
  EXPECT_EQ(a.offset, b.offset);
}

void expectSameManifest(const Manifest &a, const Manifest &b) {
  EXPECT_EQ(a.target, b.target);
  EXPECT_EQ(a.producer, b.producer);
  EXPECT_EQ(a.cpuLevels, b.cpuLevels);
  EXPECT_EQ(a.cudaArchs, b.cudaArchs);
  ASSERT_EQ(a.inputs.size(), b.inputs.size());
  for (size_t i = 0; i < a.inputs.size(); ++i)
    expectSameSignature(a.inputs[i], b.inputs[i]);
  ASSERT_EQ(a.outputs.size(), b.outputs.size());
  for (size_t i = 0; i < a.outputs.size(); ++i)
    expectSameSignature(a.outputs[i], b.outputs[i]);
  EXPECT_EQ(a.arenaBytes, b.arenaBytes);
  EXPECT_EQ(a.activationBytes, b.activationBytes);
  EXPECT_EQ(a.weights, b.weights);
  ASSERT_EQ(a.weightTable.size(), b.weightTable.size());
  for (size_t i = 0; i < a.weightTable.size(); ++i) {
    EXPECT_EQ(a.weightTable[i].name, b.weightTable[i].name);
    EXPECT_EQ(a.weightTable[i].offset, b.weightTable[i].offset);
    EXPECT_EQ(a.weightTable[i].bytes, b.weightTable[i].bytes);
  }
  ASSERT_EQ(a.cudaModules.size(), b.cudaModules.size());
  for (size_t i = 0; i < a.cudaModules.size(); ++i) {
    ASSERT_EQ(a.cudaModules[i].binaries.size(), b.cudaModules[i].binaries.size());
    for (size_t j = 0; j < a.cudaModules[i].binaries.size(); ++j) {
      EXPECT_EQ(a.cudaModules[i].binaries[j].arch, b.cudaModules[i].binaries[j].arch);
      EXPECT_EQ(a.cudaModules[i].binaries[j].isPtx, b.cudaModules[i].binaries[j].isPtx);
      EXPECT_EQ(a.cudaModules[i].binaries[j].bytes, b.cudaModules[i].binaries[j].bytes);
    }
  }
  ASSERT_EQ(a.kernels.size(), b.kernels.size());
  for (size_t i = 0; i < a.kernels.size(); ++i) {
    EXPECT_EQ(a.kernels[i].name, b.kernels[i].name);
    EXPECT_EQ(a.kernels[i].generator, b.kernels[i].generator);
    EXPECT_EQ(a.kernels[i].ops, b.kernels[i].ops);
    EXPECT_EQ(a.kernels[i].cudaModule, b.kernels[i].cudaModule);
    EXPECT_EQ(a.kernels[i].flops, b.kernels[i].flops);
    EXPECT_EQ(a.kernels[i].bytesMoved, b.kernels[i].bytesMoved);
  }
  ASSERT_EQ(a.steps.size(), b.steps.size());
  for (size_t i = 0; i < a.steps.size(); ++i) {
    ASSERT_EQ(a.steps[i].index(), b.steps[i].index());
    if (const auto *launch = std::get_if<Launch>(&a.steps[i])) {
      const Launch &other = std::get<Launch>(b.steps[i]);
      EXPECT_EQ(launch->kernel, other.kernel);
      for (int axis = 0; axis < 3; ++axis) {
        EXPECT_EQ(launch->grid[axis], other.grid[axis]);
        EXPECT_EQ(launch->block[axis], other.block[axis]);
      }
      EXPECT_EQ(launch->sharedBytes, other.sharedBytes);
      EXPECT_EQ(launch->parallelExtent, other.parallelExtent);
      ASSERT_EQ(launch->args.size(), other.args.size());
      for (size_t j = 0; j < launch->args.size(); ++j)
        expectSameRef(launch->args[j], other.args[j]);
    } else {
      const Copy &copy = std::get<Copy>(a.steps[i]);
      const Copy &other = std::get<Copy>(b.steps[i]);
      expectSameRef(copy.source, other.source);
      expectSameRef(copy.destination, other.destination);
      EXPECT_EQ(copy.bytes, other.bytes);
    }
  }
  EXPECT_EQ(a.sourceNodeCount, b.sourceNodeCount);
  EXPECT_EQ(a.storagePrecision, b.storagePrecision);
}

uint64_t load64(const std::vector<uint8_t> &bytes, size_t offset) {
  uint64_t value;
  std::memcpy(&value, bytes.data() + offset, 8);
  return value;
}

void store64(std::vector<uint8_t> &bytes, size_t offset, uint64_t value) {
  std::memcpy(bytes.data() + offset, &value, 8);
}

// Header field offsets, as docs/artifact-format.md documents them.
constexpr size_t kTotalAt = 16, kMetadataBytesAt = 32, kMetadataHashAt = 40, kWeightsOffsetAt = 48,
                 kWeightsBytesAt = 56, kWeightsHashAt = 64;

/// Recomputes the metadata checksum after an edit, so the edit reaches the decoder.
void resealMetadata(std::vector<uint8_t> &bytes) {
  uint64_t size = load64(bytes, kMetadataBytesAt);
  store64(bytes, kMetadataHashAt, hashBytes({bytes.data() + kArtifactHeaderBytes, size}));
}

/// Parses; returns "" on success, the message on UserError; any other exception fails the test.
std::string parseProblem(const std::vector<uint8_t> &bytes) {
  try {
    Manifest manifest = parseManifest(bytes);
    // Whatever parses must be valid as a whole.
    EXPECT_EQ(findManifestProblem(manifest, manifest.weights.size()), "");
    return "";
  } catch (const UserError &error) {
    std::string message = error.what();
    EXPECT_FALSE(message.empty());
    return message;
  }
}

} // namespace

TEST(ArtifactFormat, RoundTripsEveryFieldOfBothTargets) {
  for (Target target : {Target::Cpu, Target::Cuda}) {
    Manifest manifest = fullManifest(target);
    std::vector<uint8_t> bytes = serializeManifest(manifest);
    Manifest parsed = parseManifest(bytes);
    expectSameManifest(manifest, parsed);
    EXPECT_EQ(serializeManifest(parsed), bytes) << "serialization is not a function of content";
  }
}

TEST(ArtifactFormat, RoundTripsSeveralCpuLevelsAndRefusesBadLists) {
  Manifest manifest = fullManifest(Target::Cpu);
  manifest.cpuLevels = {"x86-64-v2", "x86-64-v3", "x86-64-v4"};
  std::vector<uint8_t> bytes = serializeManifest(manifest);
  expectSameManifest(manifest, parseManifest(bytes));
  EXPECT_EQ(cpuKernelSymbol("k1", "x86-64-v3", 3), "k1.x86-64-v3");
  EXPECT_EQ(cpuKernelSymbol("k1", "x86-64-v3", 1), "k1");
  auto problem = [&](std::vector<std::string> levels) {
    Manifest edited = fullManifest(Target::Cpu);
    edited.cpuLevels = std::move(levels);
    return findManifestProblem(edited, edited.weights.size());
  };
  EXPECT_EQ(problem({"x86-64-v2", "x86-64-v4"}), "");
  EXPECT_NE(problem({"x86-64-v4", "x86-64-v2"}).find("not ascending"), std::string::npos);
  EXPECT_NE(problem({"x86-64-v3", "x86-64-v3"}).find("not ascending and distinct"), std::string::npos);
  EXPECT_NE(problem({""}).find("not a level's name"), std::string::npos);
  EXPECT_NE(problem({"x86-64-v2,x86-64-v3"}).find("not a level's name"), std::string::npos);
  Manifest cuda = fullManifest(Target::Cuda);
  cuda.cpuLevels = {"x86-64-v2"};
  EXPECT_NE(findManifestProblem(cuda, cuda.weights.size()).find("CUDA artifact names a CPU level"), std::string::npos);
}

TEST(ArtifactFormat, RoundTripsAnEmptyManifest) {
  Manifest manifest;
  std::vector<uint8_t> bytes = serializeManifest(manifest);
  EXPECT_EQ(bytes.size() % kWeightAlignment, 0u);
  expectSameManifest(manifest, parseManifest(bytes));
}

TEST(ArtifactFormat, HeaderFollowsTheDocumentedLayout) {
  Manifest manifest = fullManifest(Target::Cuda);
  std::vector<uint8_t> bytes = serializeManifest(manifest);
  ASSERT_GE(bytes.size(), kArtifactHeaderBytes);
  EXPECT_EQ(std::memcmp(bytes.data(), "SINTERAF", 8), 0);
  uint32_t abi, target;
  std::memcpy(&abi, bytes.data() + 8, 4);
  std::memcpy(&target, bytes.data() + 12, 4);
  EXPECT_EQ(abi, uint32_t(SINTER_ABI_VERSION));
  EXPECT_EQ(target, 2u);
  EXPECT_EQ(load64(bytes, kTotalAt), bytes.size());
  EXPECT_EQ(load64(bytes, 24), kArtifactHeaderBytes);
  uint64_t weightsOffset = load64(bytes, kWeightsOffsetAt);
  EXPECT_EQ(weightsOffset % kWeightAlignment, 0u);
  EXPECT_GE(weightsOffset, kArtifactHeaderBytes + load64(bytes, kMetadataBytesAt));
  EXPECT_EQ(load64(bytes, kWeightsBytesAt), manifest.weights.size());
  EXPECT_EQ(weightsOffset + manifest.weights.size(), bytes.size());
  EXPECT_TRUE(std::equal(manifest.weights.begin(), manifest.weights.end(),
                         bytes.begin() + static_cast<std::ptrdiff_t>(weightsOffset)));
  EXPECT_EQ(load64(bytes, kWeightsHashAt), hashBytes(manifest.weights));
  EXPECT_EQ(load64(bytes, 72), 0u); // reserved
  // The producer is the first metadata field: a u32 length, then the bytes.
  uint32_t producerLength;
  std::memcpy(&producerLength, bytes.data() + kArtifactHeaderBytes, 4);
  EXPECT_EQ(std::string(reinterpret_cast<const char *>(bytes.data()) + kArtifactHeaderBytes + 4,
                        producerLength),
            manifest.producer);
}

TEST(ArtifactFormat, HeadIsTheArtifactWithoutItsWeights) {
  Manifest manifest = fullManifest(Target::Cpu);
  std::vector<uint8_t> head = serializeManifestHead(manifest);
  std::vector<uint8_t> whole = serializeManifest(manifest);
  ASSERT_EQ(head.size() + manifest.weights.size(), whole.size());
  EXPECT_TRUE(std::equal(head.begin(), head.end(), whole.begin()));
}

TEST(ArtifactFormat, ViewKeepsTheWeightsInPlace) {
  std::vector<uint8_t> bytes = serializeManifest(fullManifest(Target::Cpu));
  ArtifactView view = parseArtifactView(bytes);
  EXPECT_TRUE(view.manifest.weights.empty());
  EXPECT_EQ(view.weights.data(), bytes.data() + view.header.weightsOffset);
  EXPECT_EQ(view.weights.size(), 700u);
}

TEST(ArtifactFormat, EveryTruncationIsACleanError) {
  std::vector<uint8_t> bytes = serializeManifest(fullManifest(Target::Cuda));
  for (size_t length = 0; length < bytes.size(); ++length) {
    std::vector<uint8_t> prefix(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(length));
    EXPECT_NE(parseProblem(prefix), "") << "a " << length << "-byte prefix parsed";
  }
}

TEST(ArtifactFormat, EveryTruncationOfTheMetadataIsACleanError) {
  // Shrink the metadata section in the header (and reseal it) so that each shorter metadata
  // reaches the decoder itself, not only the header's size checks.
  std::vector<uint8_t> bytes = serializeManifest(fullManifest(Target::Cuda));
  uint64_t metadataBytes = load64(bytes, kMetadataBytesAt);
  for (uint64_t length = 0; length < metadataBytes; ++length) {
    std::vector<uint8_t> edited = bytes;
    store64(edited, kMetadataBytesAt, length);
    resealMetadata(edited);
    std::string problem = parseProblem(edited);
    EXPECT_NE(problem, "") << "metadata cut to " << length << " bytes parsed";
  }
}

TEST(ArtifactFormat, FlippedBytesAreCaughtByTheChecksums) {
  std::vector<uint8_t> bytes = serializeManifest(fullManifest(Target::Cpu));
  for (size_t at = 0; at < bytes.size(); ++at) {
    std::vector<uint8_t> edited = bytes;
    edited[at] ^= 0x5A;
    bool inPadding = at >= kArtifactHeaderBytes + load64(bytes, kMetadataBytesAt) &&
                     at < load64(bytes, kWeightsOffsetAt);
    if (inPadding)
      continue; // the padding before the weights carries nothing
    EXPECT_NE(parseProblem(edited), "") << "flipping byte " << at << " went unnoticed";
  }
}

TEST(ArtifactFormat, FlippedMetadataBytesNeverCrashTheDecoder) {
  // With the checksum recomputed, each edit reaches the decoder and the validation: the result
  // is a clean error or a manifest that is valid as a whole (parseProblem checks both).
  std::vector<uint8_t> bytes = serializeManifest(fullManifest(Target::Cuda));
  uint64_t metadataBytes = load64(bytes, kMetadataBytesAt);
  int rejected = 0;
  for (uint8_t pattern : {0x01, 0x80, 0xFF}) {
    for (uint64_t at = kArtifactHeaderBytes; at < kArtifactHeaderBytes + metadataBytes; ++at) {
      std::vector<uint8_t> edited = bytes;
      edited[at] ^= pattern;
      resealMetadata(edited);
      if (!parseProblem(edited).empty())
        ++rejected;
    }
  }
  EXPECT_GT(rejected, 0);
}

TEST(ArtifactFormat, HostileCountsAndLengthsAreRejectedBeforeAllocating) {
  Manifest manifest;
  manifest.producer = "p";
  std::vector<uint8_t> bytes = serializeManifest(manifest);
  // The producer's length (the first metadata field) claims 4 GiB.
  std::vector<uint8_t> edited = bytes;
  uint32_t huge = 0xFFFFFFFFu;
  std::memcpy(edited.data() + kArtifactHeaderBytes, &huge, 4);
  resealMetadata(edited);
  EXPECT_NE(parseProblem(edited).find("producer count 4294967295 does not fit"), std::string::npos);

  // A CUDA binary whose length claims 2^63 bytes.
  Manifest cuda;
  cuda.target = Target::Cuda;
  cuda.cudaModules = {CudaModule{{{"sm_90", false, {0xAB, 0xCD}}}}};
  bytes = serializeManifest(cuda);
  const std::string arch = "sm_90";
  auto found = std::search(bytes.begin(), bytes.end(), arch.begin(), arch.end());
  ASSERT_NE(found, bytes.end());
  size_t lengthAt = static_cast<size_t>(found - bytes.begin()) + 5 + 1; // after arch and isPtx
  ASSERT_EQ(load64(bytes, lengthAt), 2u);
  store64(bytes, lengthAt, uint64_t(1) << 63);
  resealMetadata(bytes);
  EXPECT_NE(parseProblem(bytes).find("binary bytes"), std::string::npos);
}

TEST(ArtifactFormat, OtherAbiVersionsAndForeignBytesAreNamed) {
  std::vector<uint8_t> bytes = serializeManifest(fullManifest(Target::Cpu));
  std::vector<uint8_t> edited = bytes;
  uint32_t version = 7;
  std::memcpy(edited.data() + 8, &version, 4);
  std::string problem = parseProblem(edited);
  EXPECT_NE(problem.find("ABI version 7"), std::string::npos) << problem;

  std::vector<uint8_t> elf = {0x7F, 'E', 'L', 'F', 2, 1, 1, 0, 0, 0, 0, 0};
  EXPECT_NE(parseProblem(elf).find("not a sinter artifact"), std::string::npos);
}

TEST(ArtifactFormat, WeightsChecksumIsVerified) {
  std::vector<uint8_t> bytes = serializeManifest(fullManifest(Target::Cpu));
  bytes.back() ^= 1;
  EXPECT_NE(parseProblem(bytes).find("weights checksum"), std::string::npos);
  EXPECT_NO_THROW(parseArtifactView(bytes, /*verifyWeights=*/false));
}

TEST(ArtifactFormat, ValidationNamesWhatIsWrong) {
  auto problem = [](auto edit) {
    Manifest manifest = fullManifest(Target::Cuda);
    edit(manifest);
    return findManifestProblem(manifest, manifest.weights.size());
  };
  auto mentions = [](const std::string &text, const std::string &part) {
    return text.find(part) != std::string::npos;
  };
  EXPECT_EQ(problem([](Manifest &) {}), "");
  EXPECT_TRUE(mentions(problem([](Manifest &m) { std::get<Copy>(m.steps[1]).bytes = 1 << 20; }),
                       "outside the weights"));
  EXPECT_TRUE(mentions(problem([](Manifest &m) {
                         std::get<Copy>(m.steps[1]).destination.region = Region::Weights;
                       }),
                       "read-only weights"));
  EXPECT_TRUE(mentions(problem([](Manifest &m) {
                         std::get<Copy>(m.steps[1]).source = {Region::Arena, 1000};
                       }),
                       "overlapping"));
  EXPECT_EQ(problem([](Manifest &m) { std::get<Copy>(m.steps[1]).source = {Region::Arena, 1024}; }),
            "");
  EXPECT_TRUE(mentions(problem([](Manifest &m) { std::get<Launch>(m.steps[0]).kernel = 9; }),
                       "launches kernel 9"));
  EXPECT_TRUE(mentions(problem([](Manifest &m) { std::get<Launch>(m.steps[0]).block[1] = 0; }),
                       "empty grid or block"));
  EXPECT_TRUE(mentions(problem([](Manifest &m) {
                         std::get<Launch>(m.steps[0]).args[0].offset = 4097;
                       }),
                       "past the end of the arena"));
  EXPECT_TRUE(mentions(problem([](Manifest &m) { m.kernels[0].name = "bad name"; }),
                       "not a C identifier"));
  EXPECT_TRUE(mentions(problem([](Manifest &m) { m.kernels[0].name = "sinter_artifact"; }),
                       "not a C identifier"));
  EXPECT_TRUE(mentions(problem([](Manifest &m) { m.kernels[1].name = m.kernels[0].name; }),
                       "two kernels"));
  EXPECT_TRUE(mentions(problem([](Manifest &m) { m.kernels[0].cudaModule = 2; }), "module 2"));
  EXPECT_TRUE(mentions(problem([](Manifest &m) { m.cudaModules[0].binaries[0].arch = "sm90"; }),
                       "malformed architecture"));
  EXPECT_TRUE(mentions(problem([](Manifest &m) { m.cudaModules[1].binaries.clear(); }),
                       "no binary"));
  EXPECT_TRUE(mentions(problem([](Manifest &m) { m.inputs[0].arenaOffset = 4090; }),
                       "input 0 ('x')"));
  EXPECT_TRUE(mentions(problem([](Manifest &m) { m.outputs[0].dims = {-1};
                         m.outputs[0].dimSymbols.clear(); }), "negative dim"));
  EXPECT_TRUE(mentions(problem([](Manifest &m) { m.inputs[1].dims.assign(9, 1); }), "rank 9"));
  EXPECT_TRUE(mentions(problem([](Manifest &m) { m.inputs[0].dimSymbols = {"n"}; }),
                       "dim symbols"));
  EXPECT_TRUE(mentions(problem([](Manifest &m) { m.weightTable[1].offset = 500; }), "aligned"));
  EXPECT_TRUE(mentions(problem([](Manifest &m) { m.weightTable[0].bytes = 701; }),
                       "outside the weights blob"));
}

TEST(ArtifactFormat, SerializingAnInvalidManifestIsAnInternalError) {
  Manifest manifest = fullManifest(Target::Cpu);
  std::get<Copy>(manifest.steps[1]).bytes = 1 << 20;
  EXPECT_THROW(serializeManifest(manifest), InternalError);
}

TEST(ArtifactFormat, HashSeesLengthAndEveryByte) {
  std::vector<uint8_t> empty, zero = {0}, zeros(32, 0), data(100);
  EXPECT_NE(hashBytes(empty), hashBytes(zero));
  EXPECT_NE(hashBytes(zero), hashBytes(zeros));
  for (size_t i = 0; i < data.size(); ++i)
    data[i] = static_cast<uint8_t>(i);
  uint64_t reference = hashBytes(data);
  for (size_t i = 0; i < data.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      data[i] ^= uint8_t(1u << bit);
      EXPECT_NE(hashBytes(data), reference) << "byte " << i << " bit " << bit;
      data[i] ^= uint8_t(1u << bit);
    }
  }
}

TEST(ArtifactFormat, TensorByteSizeRejectsNegativeAndOverflowingDims) {
  EXPECT_EQ(tensorByteSize(DType::Float32, {2, 3}), 24u);
  EXPECT_EQ(tensorByteSize(DType::Int64, {}), 8u);
  EXPECT_EQ(tensorByteSize(DType::Float32, {0, 5}), 0u);
  EXPECT_EQ(tensorByteSize(DType::Float32, {-1}), UINT64_MAX);
  EXPECT_EQ(tensorByteSize(DType::Float32, {int64_t(1) << 62, 4}), UINT64_MAX);
}

// ---- bound inputs: an optional trailing field ---------------------------------------------------

namespace {

/// fullManifest with launches that take no arguments, so no argument sizes are recorded and the
/// optional fields below are the metadata's last.
Manifest withoutArguments() {
  Manifest manifest = fullManifest(Target::Cpu);
  for (Step &step : manifest.steps)
    if (auto *launch = std::get_if<Launch>(&step))
      launch->args.clear(), launch->argBytes.clear();
  return manifest;
}

Manifest withBoundInputs() {
  Manifest manifest = withoutArguments();
  BoundInput shape{"shape", DType::Int64, {3}, 0, {}};
  std::vector<int64_t> values = {4, -1, 3};
  shape.value.resize(24);
  std::memcpy(shape.value.data(), values.data(), 24);
  shape.valueHash = hashBytes(shape.value);
  BoundInput large{"w", DType::Float32, {1024}, 0x0123456789abcdefull, {}}; // hash only
  manifest.boundInputs = {shape, large};
  return manifest;
}

} // namespace

TEST(ArtifactFormat, BoundInputsRoundTripAfterTheFieldsBeforeThem) {
  Manifest manifest = withBoundInputs();
  std::vector<uint8_t> bytes = serializeManifest(manifest);
  Manifest parsed = parseManifest(bytes);
  expectSameManifest(manifest, parsed);
  ASSERT_EQ(parsed.boundInputs.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(parsed.boundInputs[i].name, manifest.boundInputs[i].name);
    EXPECT_EQ(parsed.boundInputs[i].dtype, manifest.boundInputs[i].dtype);
    EXPECT_EQ(parsed.boundInputs[i].dims, manifest.boundInputs[i].dims);
    EXPECT_EQ(parsed.boundInputs[i].valueHash, manifest.boundInputs[i].valueHash);
    EXPECT_EQ(parsed.boundInputs[i].value, manifest.boundInputs[i].value);
  }
  // Without bound inputs the metadata is what it was before the field existed: the same bytes
  // up to where the list starts, so older artifacts read the same.
  Manifest plain = manifest;
  plain.boundInputs.clear();
  std::vector<uint8_t> plainBytes = serializeManifest(plain);
  uint64_t plainMetadata = load64(plainBytes, kMetadataBytesAt);
  ASSERT_GT(load64(bytes, kMetadataBytesAt), plainMetadata);
  EXPECT_TRUE(std::equal(plainBytes.begin() + kArtifactHeaderBytes,
                         plainBytes.begin() + std::ptrdiff_t(kArtifactHeaderBytes + plainMetadata),
                         bytes.begin() + kArtifactHeaderBytes));
  EXPECT_TRUE(parseManifest(plainBytes).boundInputs.empty());
}

TEST(ArtifactFormat, EveryTruncationOfTheBoundInputsIsACleanError) {
  Manifest plain = withBoundInputs();
  plain.boundInputs.clear();
  uint64_t listStart = load64(serializeManifest(plain), kMetadataBytesAt);
  std::vector<uint8_t> bytes = serializeManifest(withBoundInputs());
  uint64_t metadataBytes = load64(bytes, kMetadataBytesAt);
  // Cut exactly where the list starts, the metadata is a valid artifact without bound inputs
  // (the field is optional); any cut inside the list is an error.
  for (uint64_t length = listStart + 1; length < metadataBytes; ++length) {
    std::vector<uint8_t> edited = bytes;
    store64(edited, kMetadataBytesAt, length);
    resealMetadata(edited);
    EXPECT_NE(parseProblem(edited), "") << "metadata cut to " << length << " bytes parsed";
  }
}

TEST(ArtifactFormat, AnEmptyBoundInputListIsRejected) {
  // The writer leaves an empty list out; one written anyway (a zero count, here the zero
  // padding after the metadata taken into it) is corrupt.
  std::vector<uint8_t> bytes = serializeManifest(withoutArguments());
  uint64_t metadataBytes = load64(bytes, kMetadataBytesAt);
  ASSERT_GE(load64(bytes, kWeightsOffsetAt) - kArtifactHeaderBytes - metadataBytes, 4u);
  store64(bytes, kMetadataBytesAt, metadataBytes + 4);
  resealMetadata(bytes);
  EXPECT_NE(parseProblem(bytes).find("empty bound-input list"), std::string::npos);
}

TEST(ArtifactFormat, BoundInputValidationNamesWhatIsWrong) {
  auto problem = [](auto edit) {
    Manifest manifest = withBoundInputs();
    edit(manifest);
    return findManifestProblem(manifest, manifest.weights.size());
  };
  EXPECT_EQ(problem([](Manifest &) {}), "");
  EXPECT_NE(problem([](Manifest &m) { m.boundInputs[0].value.pop_back(); }).find("records 23 value bytes"),
            std::string::npos);
  EXPECT_NE(problem([](Manifest &m) { m.boundInputs[1].dims.assign(9, 1); }).find("rank 9"),
            std::string::npos);
  EXPECT_NE(problem([](Manifest &m) { m.boundInputs[1].dims = {-2}; }).find("negative dim"),
            std::string::npos);
  EXPECT_NE(problem([](Manifest &m) { m.boundInputs[0].name.clear(); }).find("no name"),
            std::string::npos);
}

// ---- storage precision: an optional trailing field after the bound inputs ---------------------

TEST(ArtifactFormat, StoragePrecisionRoundTripsWithAndWithoutBoundInputs) {
  for (DType storage : {DType::Float16, DType::BFloat16}) {
    for (bool bound : {false, true}) {
      Manifest manifest = bound ? withBoundInputs() : withoutArguments();
      manifest.storagePrecision = storage;
      std::vector<uint8_t> bytes = serializeManifest(manifest);
      Manifest parsed = parseManifest(bytes);
      expectSameManifest(manifest, parsed);
      EXPECT_EQ(parsed.boundInputs.size(), manifest.boundInputs.size());
      EXPECT_EQ(serializeManifest(parsed), bytes);
    }
  }
  // Without bound inputs, the field costs an empty list's count and the ONNX number, appended
  // to the float32 artifact's metadata.
  Manifest plain = withoutArguments();
  Manifest half = plain;
  half.storagePrecision = DType::Float16;
  std::vector<uint8_t> plainBytes = serializeManifest(plain), halfBytes = serializeManifest(half);
  uint64_t plainMetadata = load64(plainBytes, kMetadataBytesAt);
  ASSERT_EQ(load64(halfBytes, kMetadataBytesAt), plainMetadata + 8);
  EXPECT_TRUE(std::equal(plainBytes.begin() + kArtifactHeaderBytes,
                         plainBytes.begin() + std::ptrdiff_t(kArtifactHeaderBytes + plainMetadata),
                         halfBytes.begin() + kArtifactHeaderBytes));
  uint32_t number;
  std::memcpy(&number, halfBytes.data() + kArtifactHeaderBytes + plainMetadata + 4, 4);
  EXPECT_EQ(number, 10u); // TensorProto FLOAT16
}

TEST(ArtifactFormat, AStoragePrecisionOtherThanF16OrBf16IsCorrupt) {
  Manifest half = withoutArguments();
  half.storagePrecision = DType::Float16;
  std::vector<uint8_t> bytes = serializeManifest(half);
  uint64_t at = kArtifactHeaderBytes + load64(bytes, kMetadataBytesAt) - 4;
  for (uint32_t number : {1u, 7u, 99u}) { // f32 (left out when it is f32), i64, unknown
    std::vector<uint8_t> edited = bytes;
    std::memcpy(edited.data() + at, &number, 4);
    resealMetadata(edited);
    EXPECT_NE(parseProblem(edited).find("storage precision"), std::string::npos) << number;
  }
}

TEST(ArtifactFormat, HashOfPiecesIsTheHashOfTheirBytesEndToEnd) {
  std::vector<uint8_t> data(200);
  for (size_t i = 0; i < data.size(); ++i)
    data[i] = static_cast<uint8_t>(i * 31 + 7);
  const std::span<const uint8_t> all(data);
  // Every cut into three pieces (empty ones included), at block edges and inside blocks.
  for (size_t first = 0; first <= data.size(); first += 7)
    for (size_t second = first; second <= data.size(); second += 13) {
      std::vector<std::span<const uint8_t>> pieces = {
          all.subspan(0, first), all.subspan(first, second - first), all.subspan(second)};
      EXPECT_EQ(hashPieces(pieces), hashBytes(all)) << "cuts at " << first << " and " << second;
    }
  EXPECT_EQ(hashPieces({}), hashBytes({}));
}

TEST(ArtifactFormat, BorrowedWeightsSerializeAsTheirOwnedCopy) {
  Manifest owned = fullManifest(Target::Cpu);
  ASSERT_GT(owned.weights.size(), 3u);
  // The same blob as borrowed pieces: two views of the owned bytes and a derived copy.
  Manifest borrowed = owned;
  std::vector<uint8_t> source = owned.weights;
  const std::span<const uint8_t> all(source);
  const size_t cut = source.size() / 3;
  borrowed.weights.clear();
  borrowed.derivedWeights.emplace_back(all.begin() + 2 * cut, all.end());
  borrowed.borrowedWeights = {all.subspan(0, cut), all.subspan(cut, cut),
                              std::span<const uint8_t>(borrowed.derivedWeights.back())};
  EXPECT_EQ(weightsSize(borrowed), owned.weights.size());
  EXPECT_EQ(serializeManifest(borrowed), serializeManifest(owned));
  ownWeights(borrowed);
  EXPECT_TRUE(borrowed.borrowedWeights.empty());
  EXPECT_EQ(borrowed.weights, owned.weights);
}
