// XXH64 as xxHash's specification (doc/xxhash_spec.md) defines it.
#include "sinter/support/xxh64.h"

#include "sinter/support/little_endian.h"

#include <algorithm>
#include <bit>
#include <cstring>

namespace sinter {
namespace {

constexpr uint64_t kPrime1 = 0x9E3779B185EBCA87ull;
constexpr uint64_t kPrime2 = 0xC2B2AE3D27D4EB4Full;
constexpr uint64_t kPrime3 = 0x165667B19E3779F9ull;
constexpr uint64_t kPrime4 = 0x85EBCA77C2B2AE63ull;
constexpr uint64_t kPrime5 = 0x27D4EB2F165667C5ull;


uint64_t round(uint64_t accumulator, uint64_t lane) {
  accumulator += lane * kPrime2;
  accumulator = std::rotl(accumulator, 31);
  return accumulator * kPrime1;
}

uint64_t mergeLane(uint64_t accumulator, uint64_t lane) {
  accumulator ^= round(0, lane);
  return accumulator * kPrime1 + kPrime4;
}

} // namespace

Xxh64::Xxh64(uint64_t seed)
    : seed_(seed), lanes_{seed + kPrime1 + kPrime2, seed + kPrime2, seed, seed - kPrime1},
      pending_{} {}

void Xxh64::update(std::span<const uint8_t> bytes) {
  const uint8_t *data = bytes.data();
  size_t size = bytes.size();
  if (size == 0) // an empty span may have a null data(), which memcpy must not see
    return;
  totalBytes_ += size;
  if (pendingBytes_ > 0) {
    size_t take = std::min<size_t>(size, 32 - pendingBytes_);
    std::memcpy(pending_ + pendingBytes_, data, take);
    pendingBytes_ += take;
    data += take;
    size -= take;
    if (pendingBytes_ < 32)
      return;
    for (int lane = 0; lane < 4; ++lane)
      lanes_[lane] = round(lanes_[lane], loadLittle64(pending_ + 8 * lane));
    pendingBytes_ = 0;
  }
  for (; size >= 32; data += 32, size -= 32)
    for (int lane = 0; lane < 4; ++lane)
      lanes_[lane] = round(lanes_[lane], loadLittle64(data + 8 * lane));
  std::memcpy(pending_, data, size);
  pendingBytes_ = size;
}

uint64_t Xxh64::digest() const {
  uint64_t accumulator;
  if (totalBytes_ >= 32) {
    accumulator = std::rotl(lanes_[0], 1) + std::rotl(lanes_[1], 7) + std::rotl(lanes_[2], 12) +
                  std::rotl(lanes_[3], 18);
    for (uint64_t lane : lanes_)
      accumulator = mergeLane(accumulator, lane);
  } else {
    accumulator = seed_ + kPrime5;
  }
  accumulator += totalBytes_;
  const uint8_t *data = pending_;
  uint64_t left = pendingBytes_;
  for (; left >= 8; data += 8, left -= 8) {
    accumulator ^= round(0, loadLittle64(data));
    accumulator = std::rotl(accumulator, 27) * kPrime1 + kPrime4;
  }
  if (left >= 4) {
    accumulator ^= uint64_t(loadLittle32(data)) * kPrime1;
    accumulator = std::rotl(accumulator, 23) * kPrime2 + kPrime3;
    data += 4;
    left -= 4;
  }
  for (; left > 0; ++data, --left) {
    accumulator ^= uint64_t(*data) * kPrime5;
    accumulator = std::rotl(accumulator, 11) * kPrime1;
  }
  accumulator ^= accumulator >> 33;
  accumulator *= kPrime2;
  accumulator ^= accumulator >> 29;
  accumulator *= kPrime3;
  accumulator ^= accumulator >> 32;
  return accumulator;
}

uint64_t xxh64(std::span<const uint8_t> bytes, uint64_t seed) {
  Xxh64 hash(seed);
  hash.update(bytes);
  return hash.digest();
}

} // namespace sinter
