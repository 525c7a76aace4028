// Serializing and parsing the manifest (docs/artifact-format.md). The encoder appends
// little-endian fields to a byte vector; the decoder reads them through a cursor that checks every
// read against the end of the metadata and every count against the bytes left, so a hostile
// count can never make it allocate more than the input could hold. After decoding, the manifest
// is validated as a whole (findManifestProblem) so the runtime can trust every offset.
//
// This file is compiled into libsinter_rt as well: no LLVM, no protobuf, no logging.
#include "sinter/package/format.h"

#include "sinter/runtime.h"
#include "sinter/support/error.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>

namespace sinter::package {

static_assert(std::endian::native == std::endian::little,
              "the artifact format is little-endian and read with plain loads");
static_assert(SINTER_ABI_VERSION == 1, "a new ABI version needs a new format revision here");

namespace {

constexpr uint8_t kStepLaunch = 0;
constexpr uint8_t kStepCopy = 1;
constexpr uint64_t kHashPrime = 0x9E3779B97F4A7C15ull;

uint64_t load64(const uint8_t *bytes) {
  uint64_t value;
  std::memcpy(&value, bytes, 8);
  return value;
}

uint64_t hashStep(uint64_t state, uint64_t word) {
  state = (state ^ word) * kHashPrime;
  return state ^ (state >> 31);
}

// ---------------------------------------------------------------------------------------------
// Encoding

class Encoder {
public:
  explicit Encoder(std::vector<uint8_t> &out) : out_(out) {}

  void u8(uint8_t value) { out_.push_back(value); }
  void u32(uint32_t value) { raw(&value, 4); }
  void u64(uint64_t value) { raw(&value, 8); }
  void i64(int64_t value) { raw(&value, 8); }
  void f64(double value) { u64(std::bit_cast<uint64_t>(value)); }
  void count(size_t value) {
    SINTER_ASSERT(value <= std::numeric_limits<uint32_t>::max(), "list too long for the format");
    u32(static_cast<uint32_t>(value));
  }
  void string(const std::string &value) {
    count(value.size());
    raw(value.data(), value.size());
  }
  void bytes(const std::vector<uint8_t> &value) {
    u64(value.size());
    raw(value.data(), value.size());
  }
  void raw(const void *data, size_t size) {
    const auto *begin = static_cast<const uint8_t *>(data);
    out_.insert(out_.end(), begin, begin + size);
  }

private:
  std::vector<uint8_t> &out_;
};

void encodeBufferRef(Encoder &encoder, const BufferRef &ref) {
  encoder.u32(static_cast<uint32_t>(ref.region));
  encoder.u64(ref.offset);
}

void encodeSignature(Encoder &encoder, const TensorSignature &tensor) {
  encoder.string(tensor.name);
  encoder.u32(static_cast<uint32_t>(dtypeToOnnx(tensor.dtype)));
  encoder.count(tensor.dims.size());
  for (int64_t dim : tensor.dims)
    encoder.i64(dim);
  encoder.count(tensor.dimSymbols.size());
  for (const std::string &symbol : tensor.dimSymbols)
    encoder.string(symbol);
  encoder.u64(tensor.arenaOffset);
}

void encodeKernel(Encoder &encoder, const Kernel &kernel) {
  encoder.string(kernel.name);
  encoder.string(kernel.generator);
  encoder.count(kernel.ops.size());
  for (const std::string &op : kernel.ops)
    encoder.string(op);
  encoder.u32(kernel.cudaModule);
  encoder.f64(kernel.flops);
  encoder.f64(kernel.bytesMoved);
}

void encodeStep(Encoder &encoder, const Step &step) {
  if (const auto *launch = std::get_if<Launch>(&step)) {
    encoder.u8(kStepLaunch);
    encoder.u32(launch->kernel);
    for (uint32_t value : launch->grid)
      encoder.u32(value);
    for (uint32_t value : launch->block)
      encoder.u32(value);
    encoder.u32(launch->sharedBytes);
    encoder.i64(launch->parallelExtent);
    encoder.count(launch->args.size());
    for (const BufferRef &arg : launch->args)
      encodeBufferRef(encoder, arg);
    return;
  }
  const Copy &copy = std::get<Copy>(step);
  encoder.u8(kStepCopy);
  encodeBufferRef(encoder, copy.source);
  encodeBufferRef(encoder, copy.destination);
  encoder.u64(copy.bytes);
}

void encodeBoundInput(Encoder &encoder, const BoundInput &bound) {
  encoder.string(bound.name);
  encoder.u32(static_cast<uint32_t>(dtypeToOnnx(bound.dtype)));
  encoder.count(bound.dims.size());
  for (int64_t dim : bound.dims)
    encoder.i64(dim);
  encoder.u64(bound.valueHash);
  encoder.bytes(bound.value);
}

void encodeSignatures(Encoder &encoder, const std::vector<TensorSignature> &list) {
  encoder.count(list.size());
  for (const TensorSignature &tensor : list)
    encodeSignature(encoder, tensor);
}

/// The shape-bucket section (kFeatureShapeBuckets): the symbols, then plans 1 and up, each with
/// its launches' argument sizes inline (one list per launch, possibly empty).
void encodeBuckets(Encoder &encoder, const Manifest &manifest) {
  encoder.count(manifest.symbols.size());
  for (const ShapeSymbol &symbol : manifest.symbols) {
    encoder.string(symbol.name);
    encoder.count(symbol.buckets.size());
    for (int64_t bucket : symbol.buckets)
      encoder.i64(bucket);
    encoder.u8(symbol.paddable ? 1 : 0);
    encoder.string(symbol.paddingRefusal);
  }
  encoder.count(manifest.additionalPlans.size());
  for (const Plan &plan : manifest.additionalPlans) {
    encodeSignatures(encoder, plan.inputs);
    encodeSignatures(encoder, plan.outputs);
    encoder.u64(plan.arenaBytes);
    encoder.u64(plan.activationBytes);
    encoder.count(plan.steps.size());
    for (const Step &step : plan.steps) {
      encodeStep(encoder, step);
      if (const auto *launch = std::get_if<Launch>(&step)) {
        encoder.count(launch->argBytes.size());
        for (uint64_t bytes : launch->argBytes)
          encoder.u64(bytes);
      }
    }
  }
}

void encodeMetadata(Encoder &encoder, const Manifest &manifest) {
  encoder.string(manifest.producer);
  encoder.string(joinedCpuLevels(manifest.cpuLevels));
  encoder.count(manifest.cudaArchs.size());
  for (const std::string &arch : manifest.cudaArchs)
    encoder.string(arch);
  encodeSignatures(encoder, manifest.inputs);
  encodeSignatures(encoder, manifest.outputs);
  encoder.u64(manifest.arenaBytes);
  encoder.u64(manifest.activationBytes);
  encoder.i64(manifest.sourceNodeCount);
  encoder.count(manifest.weightTable.size());
  for (const WeightEntry &entry : manifest.weightTable) {
    encoder.string(entry.name);
    encoder.u64(entry.offset);
    encoder.u64(entry.bytes);
  }
  encoder.count(manifest.cudaModules.size());
  for (const CudaModule &module : manifest.cudaModules) {
    encoder.count(module.binaries.size());
    for (const CudaBinary &binary : module.binaries) {
      encoder.string(binary.arch);
      encoder.u8(binary.isPtx ? 1 : 0);
      encoder.bytes(binary.bytes);
    }
  }
  encoder.count(manifest.kernels.size());
  for (const Kernel &kernel : manifest.kernels)
    encodeKernel(encoder, kernel);
  encoder.count(manifest.steps.size());
  for (const Step &step : manifest.steps)
    encodeStep(encoder, step);
  if (!manifest.symbols.empty())
    encodeBuckets(encoder, manifest);
  // Optional trailing fields, each absent when it says nothing (no bound input, float32
  // storage, no argument sizes), so such artifacts are unchanged. A later field needs the earlier
  // ones before it: the bound inputs' count (0 when there are none) and the storage precision
  // (float32 when it is not reduced).
  bool reducedStorage = manifest.storagePrecision != DType::Float32;
  bool argBytes = std::any_of(manifest.steps.begin(), manifest.steps.end(), [](const Step &step) {
    const auto *launch = std::get_if<Launch>(&step);
    return launch && !launch->argBytes.empty();
  });
  if (!manifest.boundInputs.empty() || reducedStorage || argBytes) {
    encoder.count(manifest.boundInputs.size());
    for (const BoundInput &bound : manifest.boundInputs)
      encodeBoundInput(encoder, bound);
  }
  if (reducedStorage || argBytes)
    encoder.u32(static_cast<uint32_t>(dtypeToOnnx(manifest.storagePrecision)));
  if (argBytes) // one list per launch, in step order
    for (const Step &step : manifest.steps)
      if (const auto *launch = std::get_if<Launch>(&step)) {
        encoder.count(launch->argBytes.size());
        for (uint64_t bytes : launch->argBytes)
          encoder.u64(bytes);
      }
}

// ---------------------------------------------------------------------------------------------
// Decoding

/// A cursor over the metadata; every read is checked against the end.
class Decoder {
public:
  Decoder(const uint8_t *data, uint64_t size) : data_(data), size_(size) {}

  uint64_t position() const { return position_; }
  uint64_t remaining() const { return size_ - position_; }

  const uint8_t *take(uint64_t bytes, const char *what) {
    if (bytes > remaining())
      userError("corrupt artifact: metadata ends inside ", what, " (needs ", bytes,
                " bytes at metadata byte ", position_, ", ", remaining(), " left)");
    const uint8_t *at = data_ + position_;
    position_ += bytes;
    return at;
  }
  uint8_t u8(const char *what) { return *take(1, what); }
  uint32_t u32(const char *what) {
    uint32_t value;
    std::memcpy(&value, take(4, what), 4);
    return value;
  }
  uint64_t u64(const char *what) { return load64(take(8, what)); }
  int64_t i64(const char *what) { return static_cast<int64_t>(u64(what)); }
  double f64(const char *what) { return std::bit_cast<double>(u64(what)); }
  bool boolean(const char *what) {
    uint8_t value = u8(what);
    if (value > 1)
      userError("corrupt artifact: ", what, " is ", int(value), ", not 0 or 1");
    return value == 1;
  }
  /// A list length; each element needs at least `minElementBytes`, so a count larger than what
  /// is left is rejected before anything is allocated.
  uint32_t count(uint64_t minElementBytes, const char *what) {
    uint32_t value = u32(what);
    if (minElementBytes > 0 && value > remaining() / minElementBytes)
      userError("corrupt artifact: ", what, " count ", value, " does not fit in the ",
                remaining(), " metadata bytes left");
    return value;
  }
  std::string string(const char *what) {
    uint32_t length = count(1, what);
    const uint8_t *at = take(length, what);
    return std::string(reinterpret_cast<const char *>(at), length);
  }
  std::vector<uint8_t> bytes(const char *what) {
    uint64_t length = u64(what);
    const uint8_t *at = take(length, what);
    return std::vector<uint8_t>(at, at + length);
  }

private:
  const uint8_t *data_;
  uint64_t size_;
  uint64_t position_ = 0;
};

// Smallest encodings, for the count checks.
constexpr uint64_t kMinString = 4;
constexpr uint64_t kMinBufferRef = 12;
constexpr uint64_t kMinSignature = kMinString + 4 + 4 + 4 + 8;
constexpr uint64_t kMinWeightEntry = kMinString + 16;
constexpr uint64_t kMinKernel = kMinString * 3 + 4 + 16;
constexpr uint64_t kMinBinary = kMinString + 1 + 8;
constexpr uint64_t kMinStep = 1 + 2 * kMinBufferRef + 8; // a copy; a launch is longer
constexpr uint64_t kMinBoundInput = kMinString + 4 + 4 + 8 + 8;

BufferRef decodeBufferRef(Decoder &decoder) {
  uint32_t region = decoder.u32("buffer region");
  if (region > static_cast<uint32_t>(Region::Weights))
    userError("corrupt artifact: buffer region ", region, " is neither arena (0) nor weights (1)");
  BufferRef ref;
  ref.region = static_cast<Region>(region);
  ref.offset = decoder.u64("buffer offset");
  return ref;
}

/// A named, typed shape, as tensor signatures and bound inputs begin: name, ONNX dtype, rank,
/// dims. `what` names the record in errors ("tensor", "bound input").
void decodeNamedShape(Decoder &decoder, const std::string &what, std::string &name, DType &dtype,
                      std::vector<int64_t> &dims) {
  name = decoder.string((what + " name").c_str());
  uint32_t onnxType = decoder.u32((what + " dtype").c_str());
  std::optional<DType> known = dtypeFromOnnx(static_cast<int>(onnxType));
  if (!known)
    userError("corrupt artifact: ", what, " '", name, "' has unknown dtype ", onnxType);
  dtype = *known;
  uint32_t rank = decoder.count(8, (what + " rank").c_str());
  if (rank > SINTER_MAX_RANK)
    userError("corrupt artifact: ", what, " '", name, "' has rank ", rank, " (at most ",
              SINTER_MAX_RANK, ")");
  for (uint32_t i = 0; i < rank; ++i)
    dims.push_back(decoder.i64((what + " dim").c_str()));
}

TensorSignature decodeSignature(Decoder &decoder) {
  TensorSignature tensor;
  decodeNamedShape(decoder, "tensor", tensor.name, tensor.dtype, tensor.dims);
  uint32_t symbols = decoder.count(kMinString, "tensor dim symbols");
  if (symbols > SINTER_MAX_RANK)
    userError("corrupt artifact: tensor '", tensor.name, "' has ", symbols, " dim symbols");
  for (uint32_t i = 0; i < symbols; ++i)
    tensor.dimSymbols.push_back(decoder.string("dim symbol"));
  tensor.arenaOffset = decoder.u64("tensor arena offset");
  return tensor;
}

BoundInput decodeBoundInput(Decoder &decoder) {
  BoundInput bound;
  decodeNamedShape(decoder, "bound input", bound.name, bound.dtype, bound.dims);
  bound.valueHash = decoder.u64("bound input hash");
  bound.value = decoder.bytes("bound input value");
  return bound;
}

Kernel decodeKernel(Decoder &decoder) {
  Kernel kernel;
  kernel.name = decoder.string("kernel name");
  kernel.generator = decoder.string("kernel generator");
  uint32_t ops = decoder.count(kMinString, "kernel ops");
  for (uint32_t i = 0; i < ops; ++i)
    kernel.ops.push_back(decoder.string("kernel op"));
  kernel.cudaModule = decoder.u32("kernel cuda module");
  kernel.flops = decoder.f64("kernel flops");
  kernel.bytesMoved = decoder.f64("kernel bytes moved");
  return kernel;
}

Step decodeStep(Decoder &decoder) {
  uint8_t kind = decoder.u8("step kind");
  if (kind == kStepLaunch) {
    Launch launch;
    launch.kernel = decoder.u32("launch kernel");
    for (uint32_t &value : launch.grid)
      value = decoder.u32("launch grid");
    for (uint32_t &value : launch.block)
      value = decoder.u32("launch block");
    launch.sharedBytes = decoder.u32("launch shared bytes");
    launch.parallelExtent = decoder.i64("launch parallel extent");
    uint32_t args = decoder.count(kMinBufferRef, "launch arguments");
    launch.args.reserve(args);
    for (uint32_t i = 0; i < args; ++i)
      launch.args.push_back(decodeBufferRef(decoder));
    return launch;
  }
  if (kind == kStepCopy) {
    Copy copy;
    copy.source = decodeBufferRef(decoder);
    copy.destination = decodeBufferRef(decoder);
    copy.bytes = decoder.u64("copy bytes");
    return copy;
  }
  userError("corrupt artifact: step kind ", int(kind), " is neither launch (0) nor copy (1)");
}

std::vector<TensorSignature> decodeSignatures(Decoder &decoder) {
  std::vector<TensorSignature> list;
  uint32_t tensors = decoder.count(kMinSignature, "signature");
  for (uint32_t i = 0; i < tensors; ++i)
    list.push_back(decodeSignature(decoder));
  return list;
}

void decodeBuckets(Decoder &decoder, Manifest &manifest) {
  uint32_t symbols = decoder.count(kMinString + 4 + 1 + kMinString, "shape symbols");
  if (symbols == 0)
    userError("corrupt artifact: the shape-bucket feature is set but no symbol is recorded");
  for (uint32_t i = 0; i < symbols; ++i) {
    ShapeSymbol symbol;
    symbol.name = decoder.string("symbol name");
    uint32_t buckets = decoder.count(8, "symbol buckets");
    for (uint32_t j = 0; j < buckets; ++j)
      symbol.buckets.push_back(decoder.i64("symbol bucket"));
    symbol.paddable = decoder.boolean("symbol paddable");
    symbol.paddingRefusal = decoder.string("symbol padding refusal");
    manifest.symbols.push_back(std::move(symbol));
  }
  uint32_t plans = decoder.count(2 * 4 + 16 + 4, "additional plans");
  for (uint32_t i = 0; i < plans; ++i) {
    Plan plan;
    plan.inputs = decodeSignatures(decoder);
    plan.outputs = decodeSignatures(decoder);
    plan.arenaBytes = decoder.u64("plan arena bytes");
    plan.activationBytes = decoder.u64("plan activation bytes");
    uint32_t steps = decoder.count(kMinStep, "plan steps");
    plan.steps.reserve(steps);
    for (uint32_t j = 0; j < steps; ++j) {
      plan.steps.push_back(decodeStep(decoder));
      if (auto *launch = std::get_if<Launch>(&plan.steps.back())) {
        uint32_t sizes = decoder.count(8, "plan argument sizes");
        for (uint32_t k = 0; k < sizes; ++k)
          launch->argBytes.push_back(decoder.u64("plan argument bytes"));
      }
    }
    manifest.additionalPlans.push_back(std::move(plan));
  }
}

Manifest decodeMetadata(Decoder &decoder, Target target, uint64_t features) {
  Manifest manifest;
  manifest.target = target;
  manifest.producer = decoder.string("producer");
  std::string levels = decoder.string("cpu levels");
  for (size_t start = 0; !levels.empty() && start <= levels.size();) {
    size_t comma = std::min(levels.find(',', start), levels.size());
    manifest.cpuLevels.push_back(levels.substr(start, comma - start));
    start = comma + 1;
  }
  uint32_t archs = decoder.count(kMinString, "cuda archs");
  for (uint32_t i = 0; i < archs; ++i)
    manifest.cudaArchs.push_back(decoder.string("cuda arch"));
  manifest.inputs = decodeSignatures(decoder);
  manifest.outputs = decodeSignatures(decoder);
  manifest.arenaBytes = decoder.u64("arena bytes");
  manifest.activationBytes = decoder.u64("activation bytes");
  manifest.sourceNodeCount = decoder.i64("source node count");
  uint32_t entries = decoder.count(kMinWeightEntry, "weight table");
  for (uint32_t i = 0; i < entries; ++i) {
    WeightEntry entry;
    entry.name = decoder.string("weight name");
    entry.offset = decoder.u64("weight offset");
    entry.bytes = decoder.u64("weight bytes");
    manifest.weightTable.push_back(std::move(entry));
  }
  uint32_t modules = decoder.count(4, "cuda modules");
  for (uint32_t i = 0; i < modules; ++i) {
    CudaModule module;
    uint32_t binaries = decoder.count(kMinBinary, "module binaries");
    for (uint32_t j = 0; j < binaries; ++j) {
      CudaBinary binary;
      binary.arch = decoder.string("binary arch");
      binary.isPtx = decoder.boolean("binary isPtx");
      binary.bytes = decoder.bytes("binary bytes");
      module.binaries.push_back(std::move(binary));
    }
    manifest.cudaModules.push_back(std::move(module));
  }
  uint32_t kernels = decoder.count(kMinKernel, "kernels");
  for (uint32_t i = 0; i < kernels; ++i)
    manifest.kernels.push_back(decodeKernel(decoder));
  uint32_t steps = decoder.count(kMinStep, "steps");
  manifest.steps.reserve(steps);
  for (uint32_t i = 0; i < steps; ++i)
    manifest.steps.push_back(decodeStep(decoder));
  if (features & kFeatureShapeBuckets)
    decodeBuckets(decoder, manifest);
  if (decoder.remaining() != 0) {
    uint32_t bound = decoder.count(kMinBoundInput, "bound inputs");
    if (bound == 0 && decoder.remaining() == 0)
      userError("corrupt artifact: an empty bound-input list (it is left out when empty)");
    for (uint32_t i = 0; i < bound; ++i)
      manifest.boundInputs.push_back(decodeBoundInput(decoder));
  }
  if (decoder.remaining() != 0) {
    std::optional<DType> storage = dtypeFromOnnx(int(decoder.u32("storage precision")));
    bool more = decoder.remaining() != 0; // argument sizes follow: f32 is written out then
    if (!storage || (*storage != DType::Float16 && *storage != DType::BFloat16 &&
                     !(more && *storage == DType::Float32)))
      userError("corrupt artifact: the storage precision is not f16 or bf16 (f32 is left out)");
    manifest.storagePrecision = *storage;
  }
  if (decoder.remaining() != 0) {
    bool any = false;
    for (Step &step : manifest.steps)
      if (auto *launch = std::get_if<Launch>(&step)) {
        uint32_t count = decoder.count(8, "argument sizes");
        for (uint32_t i = 0; i < count; ++i)
          launch->argBytes.push_back(decoder.u64("argument bytes"));
        any = any || count > 0;
      }
    if (!any)
      userError("corrupt artifact: argument sizes recorded for no launch (they are left out)");
  }
  if (decoder.remaining() != 0)
    userError("corrupt artifact: ", decoder.remaining(),
              " unexpected bytes after the metadata's last field");
  return manifest;
}

/// True when [offset, offset + bytes) lies within [0, regionBytes).
bool fits(uint64_t offset, uint64_t bytes, uint64_t regionBytes) {
  return offset <= regionBytes && bytes <= regionBytes - offset;
}

} // namespace

// ---------------------------------------------------------------------------------------------

std::string cpuKernelSymbol(const std::string &kernel, const std::string &level, size_t levelCount) {
  return levelCount > 1 ? kernel + "." + level : kernel;
}

std::string joinedCpuLevels(const std::vector<std::string> &levels) {
  std::string joined;
  for (const std::string &level : levels)
    joined += (joined.empty() ? "" : ",") + level;
  return joined;
}

uint64_t hashPieces(std::span<const std::span<const uint8_t>> pieces) {
  uint64_t lanes[4] = {0x243F6A8885A308D3ull, 0x13198A2E03707344ull, 0xA4093822299F31D0ull,
                       0x082EFA98EC4E6C89ull};
  uint8_t block[32] = {}; // a 32-byte block that spans pieces, as far as it is filled
  size_t pending = 0;
  uint64_t size = 0;
  auto step = [&](const uint8_t *data) {
    for (int lane = 0; lane < 4; ++lane)
      lanes[lane] = hashStep(lanes[lane], load64(data + 8 * lane));
  };
  for (std::span<const uint8_t> piece : pieces) {
    const uint8_t *data = piece.data();
    size_t left = piece.size();
    size += left;
    if (pending > 0 && left > 0) {
      size_t take = std::min(left, sizeof block - pending);
      std::memcpy(block + pending, data, take);
      pending += take;
      data += take;
      left -= take;
      if (pending < sizeof block)
        continue;
      step(block);
      pending = 0;
    }
    if (pending > 0)
      continue; // the piece ended inside the block (or was empty)
    for (; left >= 32; data += 32, left -= 32)
      step(data);
    if (left > 0)
      std::memcpy(block, data, left);
    pending = left;
  }
  if (pending > 0) { // the last block, zero-padded
    std::memset(block + pending, 0, sizeof block - pending);
    step(block);
  }
  uint64_t result = hashStep(0, size);
  for (uint64_t lane : lanes)
    result = hashStep(result, lane);
  return hashStep(result, 0);
}

uint64_t hashBytes(std::span<const uint8_t> bytes) {
  return hashPieces(std::span<const std::span<const uint8_t>>(&bytes, 1));
}

std::vector<uint8_t> serializeManifestHead(const Manifest &manifest) {
  std::string problem = findManifestProblem(manifest, weightsSize(manifest));
  SINTER_ASSERT(problem.empty(), "the manifest to serialize is invalid: ", problem);

  std::vector<uint8_t> head(kArtifactHeaderBytes, 0);
  Encoder encoder(head);
  encodeMetadata(encoder, manifest);
  uint64_t metadataBytes = head.size() - kArtifactHeaderBytes;
  uint64_t weightsOffset = (head.size() + kWeightAlignment - 1) / kWeightAlignment * kWeightAlignment;
  uint64_t weightsBytes = weightsSize(manifest);
  head.resize(weightsOffset, 0);

  uint64_t metadataHash =
      hashBytes(std::span<const uint8_t>(head.data() + kArtifactHeaderBytes, metadataBytes));
  uint64_t weightsHash = hashPieces(weightPieces(manifest));
  std::vector<uint8_t> header;
  Encoder headerEncoder(header);
  headerEncoder.raw(kArtifactMagic, sizeof(kArtifactMagic));
  headerEncoder.u32(SINTER_ABI_VERSION);
  headerEncoder.u32(static_cast<uint32_t>(manifest.target));
  headerEncoder.u64(weightsOffset + weightsBytes);
  headerEncoder.u64(kArtifactHeaderBytes);
  headerEncoder.u64(metadataBytes);
  headerEncoder.u64(metadataHash);
  headerEncoder.u64(weightsOffset);
  headerEncoder.u64(weightsBytes);
  headerEncoder.u64(weightsHash);
  headerEncoder.u64(manifest.symbols.empty() ? 0 : kFeatureShapeBuckets); // features
  SINTER_ASSERT(header.size() == kArtifactHeaderBytes);
  std::memcpy(head.data(), header.data(), header.size());
  return head;
}

std::vector<uint8_t> serializeManifest(const Manifest &manifest) {
  std::vector<uint8_t> bytes = serializeManifestHead(manifest);
  for (std::span<const uint8_t> piece : weightPieces(manifest))
    bytes.insert(bytes.end(), piece.begin(), piece.end());
  return bytes;
}

ArtifactHeader parseArtifactHeader(std::span<const uint8_t> bytes) {
  if (bytes.size() < sizeof(kArtifactMagic) ||
      std::memcmp(bytes.data(), kArtifactMagic, sizeof(kArtifactMagic)) != 0)
    userError("not a sinter artifact (the manifest does not start with the magic 'SINTERAF')");
  if (bytes.size() < 12)
    userError("corrupt artifact: ", bytes.size(), " bytes, too short for the header");
  ArtifactHeader header;
  std::memcpy(&header.abiVersion, bytes.data() + 8, 4);
  if (header.abiVersion != SINTER_ABI_VERSION)
    userError("the artifact has ABI version ", header.abiVersion, " but this build reads ABI ",
              SINTER_ABI_VERSION, ": recompile the model with a matching sinter");
  if (bytes.size() < kArtifactHeaderBytes)
    userError("corrupt artifact: ", bytes.size(), " bytes, too short for the ",
              kArtifactHeaderBytes, "-byte header");
  const uint8_t *data = bytes.data();
  uint32_t target;
  std::memcpy(&target, data + 12, 4);
  if (target != static_cast<uint32_t>(Target::Cpu) && target != static_cast<uint32_t>(Target::Cuda))
    userError("corrupt artifact: unknown target ", target);
  header.target = static_cast<Target>(target);
  header.totalBytes = load64(data + 16);
  header.metadataOffset = load64(data + 24);
  header.metadataBytes = load64(data + 32);
  header.metadataHash = load64(data + 40);
  header.weightsOffset = load64(data + 48);
  header.weightsBytes = load64(data + 56);
  header.weightsHash = load64(data + 64);
  header.features = load64(data + 72);

  if (header.totalBytes != bytes.size())
    userError("corrupt artifact: the header says ", header.totalBytes, " bytes but there are ",
              bytes.size(), " (truncated?)");
  if (header.features & ~kKnownFeatures)
    userError("the artifact needs features (header feature bits ", header.features & ~kKnownFeatures,
              ") that this build of sinter (ABI revision ", SINTER_ABI_REVISION,
              ") does not know: load it with a newer libsinter_rt");
  if (header.metadataOffset != kArtifactHeaderBytes)
    userError("corrupt artifact: metadata offset ", header.metadataOffset, " is not ",
              kArtifactHeaderBytes);
  if (!fits(header.metadataOffset, header.metadataBytes, bytes.size()))
    userError("corrupt artifact: the metadata runs past the end");
  if (header.weightsOffset % kWeightAlignment != 0)
    userError("corrupt artifact: the weights offset ", header.weightsOffset,
              " is not aligned to ", kWeightAlignment);
  if (header.weightsOffset < header.metadataOffset + header.metadataBytes)
    userError("corrupt artifact: the weights overlap the metadata");
  if (!fits(header.weightsOffset, header.weightsBytes, bytes.size()) ||
      header.weightsOffset + header.weightsBytes != bytes.size())
    userError("corrupt artifact: the weights do not end where the artifact ends");
  return header;
}

ArtifactView parseArtifactView(std::span<const uint8_t> bytes, bool verifyWeights) {
  ArtifactView view;
  view.header = parseArtifactHeader(bytes);
  std::span<const uint8_t> metadata =
      bytes.subspan(view.header.metadataOffset, view.header.metadataBytes);
  if (hashBytes(metadata) != view.header.metadataHash)
    userError("corrupt artifact: the metadata checksum does not match");
  view.weights = bytes.subspan(view.header.weightsOffset, view.header.weightsBytes);
  if (verifyWeights && hashBytes(view.weights) != view.header.weightsHash)
    userError("corrupt artifact: the weights checksum does not match");

  Decoder decoder(metadata.data(), metadata.size());
  view.manifest = decodeMetadata(decoder, view.header.target, view.header.features);
  std::string problem = findManifestProblem(view.manifest, view.weights.size());
  if (!problem.empty())
    userError("corrupt artifact: ", problem);
  return view;
}

Manifest parseManifest(std::span<const uint8_t> bytes) {
  ArtifactView view = parseArtifactView(bytes, true);
  view.manifest.weights.assign(view.weights.begin(), view.weights.end());
  return std::move(view.manifest);
}

} // namespace sinter::package
