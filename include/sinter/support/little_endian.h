// Unaligned little-endian loads, for the formats sinter reads and writes (the artifact, its
// digest, XXH64's input). Every host the compiler and runtime support is little-endian.
#pragma once

#include <cstdint>
#include <cstring>

namespace sinter {

inline uint64_t loadLittle64(const uint8_t *bytes) {
  uint64_t value;
  std::memcpy(&value, bytes, 8);
  return value;
}

inline uint32_t loadLittle32(const uint8_t *bytes) {
  uint32_t value;
  std::memcpy(&value, bytes, 4);
  return value;
}

} // namespace sinter
