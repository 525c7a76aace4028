// The serialized manifest: the bytes `sinter_artifact()` in model.so returns. One header, the
// metadata (signature, kernels, plan), padding, then the weights blob at an offset aligned to
// kWeightAlignment. docs/artifact-format.md has the byte layout.
//
// Both sides use this file: the compiler serializes (writer.cpp), the runtime parses. So it
// depends on nothing but the C++ library, error.h and dtype.h. Parsing is bounds-checked
// everywhere and validates the plan against the regions it touches: corrupt, truncated or hostile
// bytes throw UserError, never read outside the buffer or allocate more than the buffer could
// describe.
#pragma once

#include "sinter/package/manifest.h"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace sinter::package {

/// The first eight bytes of every serialized manifest.
inline constexpr char kArtifactMagic[8] = {'S', 'I', 'N', 'T', 'E', 'R', 'A', 'F'};
/// Header feature bits (the `features` field, reserved and zero before shape buckets): what a
/// reader must understand to read the artifact. A reader refuses bits it does not know.
inline constexpr uint64_t kFeatureShapeBuckets = 1; ///< symbols and additional plans follow the steps
inline constexpr uint64_t kKnownFeatures = kFeatureShapeBuckets;
/// Size of the fixed header; the metadata starts right after it.
inline constexpr uint64_t kArtifactHeaderBytes = 80;

/// The fixed-size header at the start of the serialized bytes (all fields little-endian).
struct ArtifactHeader {
  uint32_t abiVersion = 0; ///< SINTER_ABI_VERSION of the producer
  Target target = Target::Cpu;
  uint64_t totalBytes = 0;     ///< header + metadata + padding + weights
  uint64_t metadataOffset = 0; ///< always kArtifactHeaderBytes in ABI 1
  uint64_t metadataBytes = 0;
  uint64_t metadataHash = 0; ///< hashBytes() of the metadata
  uint64_t weightsOffset = 0; ///< a multiple of kWeightAlignment, after the metadata
  uint64_t weightsBytes = 0;
  uint64_t weightsHash = 0; ///< hashBytes() of the weights
  uint64_t features = 0;    ///< kFeature* bits
};

/// A parsed artifact whose weights stay in the parsed buffer (the runtime's mapped model.so):
/// `manifest.weights` is empty and `weights` points into the bytes given to parseArtifactView.
struct ArtifactView {
  ArtifactHeader header;
  Manifest manifest;
  std::span<const uint8_t> weights;
};

/// The serialized bytes that come before the weights: header, metadata and the padding up to the
/// weights offset. The whole artifact is these bytes followed by the weights (weightPieces); the writer
/// uses the split to avoid copying a large blob. Throws InternalError for an invalid manifest
/// (see findManifestProblem): the code generators must not produce one.
std::vector<uint8_t> serializeManifestHead(const Manifest &manifest);

/// The whole serialized artifact: serializeManifestHead() followed by the weights.
std::vector<uint8_t> serializeManifest(const Manifest &manifest);

/// Reads and checks the header only (magic, ABI version, region bounds). Throws UserError.
ArtifactHeader parseArtifactHeader(std::span<const uint8_t> bytes);

/// Parses and validates everything; the weights stay in `bytes`. With verifyWeights the weights
/// hash is checked too (one pass over the blob). Throws UserError naming what is wrong.
ArtifactView parseArtifactView(std::span<const uint8_t> bytes, bool verifyWeights = true);

/// Parses and validates everything into a self-contained Manifest (weights copied).
Manifest parseManifest(std::span<const uint8_t> bytes);

/// The first thing wrong with a manifest whose weights blob has `weightsBytes` bytes, or "" when
/// it is valid: every name and enum in range, every shape within SINTER_MAX_RANK, every tensor,
/// copy and argument inside its region, copies writing the arena only, kernel names that are C
/// identifiers and unique.
std::string findManifestProblem(const Manifest &manifest, uint64_t weightsBytes);

/// The symbol of a CPU kernel's entry point for `level` in an artifact with `levelCount` levels:
/// the kernel's name when there is one level, "NAME.LEVEL" ("k3_conv.x86-64-v3") when several.
std::string cpuKernelSymbol(const std::string &kernel, const std::string &level, size_t levelCount);

/// The levels as the manifest stores and tools show them: "x86-64-v2,x86-64-v3".
std::string joinedCpuLevels(const std::vector<std::string> &levels);

/// The 64-bit hash the format uses for its checksums (docs/artifact-format.md defines it).
uint64_t hashBytes(std::span<const uint8_t> bytes);
/// hashBytes of the pieces' bytes end to end.
uint64_t hashPieces(std::span<const std::span<const uint8_t>> pieces);

/// Bytes of a tensor with these dims and dtype; UINT64_MAX when a dim is negative or the size
/// overflows 64 bits.
uint64_t tensorByteSize(DType dtype, const std::vector<int64_t> &dims);

} // namespace sinter::package
