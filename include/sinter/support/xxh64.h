// XXH64 from its specification (Yann Collet's xxHash, doc/xxhash_spec.md): the artifact's
// whole-file digest (package/file_digest.h) and the kernel cache's check of its entries. Fast in
// portable C++ (no instruction the CPU may lack), 64 bits: for detecting damage, not tampering.
// Compiled into libsinter_rt as well: the C++ library only.
#pragma once

#include <cstdint>
#include <span>

namespace sinter {

/// XXH64, fed in pieces of any size; digest() may be called at any point.
class Xxh64 {
public:
  explicit Xxh64(uint64_t seed = 0);
  void update(std::span<const uint8_t> bytes);
  uint64_t digest() const;

private:
  uint64_t seed_;
  uint64_t lanes_[4];
  uint8_t pending_[32]; ///< the start of an incomplete 32-byte stripe
  uint64_t pendingBytes_ = 0;
  uint64_t totalBytes_ = 0;
};

/// XXH64 of `bytes` in one call.
uint64_t xxh64(std::span<const uint8_t> bytes, uint64_t seed = 0);

} // namespace sinter
