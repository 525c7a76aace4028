#include "sinter/support/kernel_cache.h"

#include "sinter/support/sha256.h"
#include "sinter/support/xxh64.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <thread>
#include <vector>

#include <unistd.h>

namespace sinter {
namespace {

namespace fs = std::filesystem;

// An entry: the magic (which carries the format version), the payload's size as 8 little-endian
// bytes, the key as 64 hex digits, the payload's XXH64 as 16, then the payload. The key is a
// SHA-256 (what the entry is for must not collide); the payload's check only has to catch damage,
// and XXH64 does that at memory speed where SHA-256 took 6% of a warm ResNet-50 compile
// (format 01 used SHA-256 there; its entries fail the magic and are rebuilt).
constexpr char kMagic[8] = {'S', 'N', 'T', 'R', 'K', 'C', '0', '2'};
constexpr size_t kKeyDigits = 64;
constexpr size_t kCheckDigits = 16;
constexpr size_t kHeaderBytes = sizeof kMagic + 8 + kKeyDigits + kCheckDigits;
constexpr uint64_t kDefaultMaxBytes = uint64_t(2) << 30;

bool isKey(const std::string &key) {
  return key.size() == kKeyDigits &&
         std::all_of(key.begin(), key.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

std::string payloadCheck(std::string_view payload) {
  uint64_t hash = xxh64({reinterpret_cast<const uint8_t *>(payload.data()), payload.size()});
  char digits[kCheckDigits + 1];
  std::snprintf(digits, sizeof digits, "%016llx", static_cast<unsigned long long>(hash));
  return std::string(digits, kCheckDigits);
}

std::string encodeEntry(const std::string &key, std::string_view payload) {
  std::string entry(kMagic, sizeof kMagic);
  uint64_t size = payload.size();
  for (int i = 0; i < 8; ++i)
    entry.push_back(char((size >> (8 * i)) & 0xff));
  entry += key;
  entry += payloadCheck(payload);
  entry += payload;
  return entry;
}

/// The payload of a whole entry file (taken from `entry`), or nullopt when any part disagrees.
std::optional<std::string> decodeEntry(const std::string &key, std::string &entry) {
  if (entry.size() < kHeaderBytes || std::memcmp(entry.data(), kMagic, sizeof kMagic) != 0)
    return std::nullopt;
  uint64_t size = 0;
  for (int i = 0; i < 8; ++i)
    size |= uint64_t(uint8_t(entry[sizeof kMagic + i])) << (8 * i);
  if (size != entry.size() - kHeaderBytes)
    return std::nullopt;
  size_t at = sizeof kMagic + 8;
  if (entry.compare(at, kKeyDigits, key) != 0)
    return std::nullopt;
  if (entry.compare(at + kKeyDigits, kCheckDigits,
                    payloadCheck(std::string_view(entry).substr(kHeaderBytes))) != 0)
    return std::nullopt;
  entry.erase(0, kHeaderBytes);
  return std::move(entry);
}

/// The whole file at `path`, or nullopt when it cannot be opened or read.
std::optional<std::string> readWholeFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in)
    return std::nullopt;
  std::streamoff size = in.tellg();
  if (size < 0)
    return std::nullopt;
  std::string bytes(size_t(size), '\0');
  in.seekg(0);
  in.read(bytes.data(), size);
  if (in.gcount() != size)
    return std::nullopt;
  return bytes;
}

} // namespace

std::string cacheKey(std::initializer_list<std::string_view> parts) {
  std::string bytes;
  for (std::string_view part : parts) {
    bytes += std::to_string(part.size());
    bytes += ':';
    bytes += part;
  }
  return sha256Hex(bytes);
}

std::string defaultCacheDirectory() {
  if (const char *directory = std::getenv("SINTER_CACHE_DIR"); directory && *directory)
    return directory;
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return (fs::path(xdg) / "sinter").string();
  if (const char *home = std::getenv("HOME"); home && *home)
    return (fs::path(home) / ".cache" / "sinter").string();
  return "";
}

uint64_t defaultCacheMaxBytes() {
  if (const char *text = std::getenv("SINTER_CACHE_MAX_BYTES")) {
    char *end = nullptr;
    unsigned long long value = std::strtoull(text, &end, 10);
    if (end != text && *end == '\0' && value > 0)
      return value;
  }
  return kDefaultMaxBytes;
}

KernelCache::KernelCache(std::string directory, uint64_t maxBytes)
    : directory_(std::move(directory)), maxBytes_(maxBytes) {
  if (!directory_.empty())
    root_ = (fs::path(directory_) / "kernels-v1").string();
}

std::string KernelCache::entryPath(const std::string &key) const {
  return (fs::path(root_) / key.substr(0, 2) / key).string();
}

std::optional<std::string> KernelCache::load(const std::string &key) const {
  if (!enabled() || !isKey(key)) {
    ++misses_;
    return std::nullopt;
  }
  const std::string path = entryPath(key);
  std::optional<std::string> entry = readWholeFile(path);
  if (!entry) {
    ++misses_;
    return std::nullopt;
  }
  std::optional<std::string> payload = decodeEntry(key, *entry);
  if (!payload) {
    // Damaged (a full disk, a crash mid-copy, a bit flip, an edit): never used; the caller
    // rebuilds it and stores a good one.
    std::error_code ignored;
    fs::remove(path, ignored);
    ++corrupt_;
    ++misses_;
    return std::nullopt;
  }
  std::error_code ignored; // a hit is a use: the entry becomes the most recently used
  fs::last_write_time(path, fs::file_time_type::clock::now(), ignored);
  ++hits_;
  return payload;
}

void KernelCache::store(const std::string &key, std::string_view payload) const {
  if (!enabled() || !isKey(key))
    return;
  std::error_code error;
  const fs::path final = entryPath(key);
  fs::create_directories(final.parent_path(), error);
  if (error)
    return;
  std::ostringstream temporaryName;
  temporaryName << ".tmp-" << ::getpid() << "-" << std::this_thread::get_id() << "-" << key;
  const fs::path temporary = final.parent_path() / temporaryName.str();
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    std::string entry = encodeEntry(key, payload);
    out.write(entry.data(), std::streamsize(entry.size()));
    out.close();
    if (!out) {
      fs::remove(temporary, error);
      return;
    }
  }
  fs::rename(temporary, final, error);
  if (error) {
    fs::remove(temporary, error);
    return;
  }
  ++stored_;
}

void KernelCache::trim() const {
  if (!enabled())
    return;
  struct File {
    fs::path path;
    uint64_t bytes;
    fs::file_time_type time;
  };
  std::vector<File> entries;
  uint64_t total = 0;
  const auto now = fs::file_time_type::clock::now();
  std::error_code error;
  for (fs::recursive_directory_iterator it(root_, error), end; !error && it != end; it.increment(error)) {
    std::error_code statError;
    if (!it->is_regular_file(statError))
      continue;
    File file{it->path(), uint64_t(it->file_size(statError)), it->last_write_time(statError)};
    if (statError)
      continue;
    if (file.path.filename().string().rfind(".tmp-", 0) == 0) {
      if (now - file.time > std::chrono::hours(1))
        fs::remove(file.path, statError); // a writer that died before its rename
      continue;
    }
    total += file.bytes;
    entries.push_back(std::move(file));
  }
  if (total <= maxBytes_)
    return;
  // Oldest first; ties by path, so the order is the same on every run.
  std::sort(entries.begin(), entries.end(), [](const File &a, const File &b) {
    return a.time != b.time ? a.time < b.time : a.path < b.path;
  });
  const uint64_t goal = maxBytes_ / 10 * 8;
  for (const File &file : entries) {
    if (total <= goal)
      break;
    std::error_code removeError;
    if (fs::remove(file.path, removeError))
      total -= file.bytes;
  }
}

KernelCache::Counters KernelCache::counters() const {
  return {hits_.load(), misses_.load(), corrupt_.load(), stored_.load()};
}

} // namespace sinter
