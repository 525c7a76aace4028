// A persistent, content-addressed cache of toolchain results (PTX, cubins, CPU objects), shared
// by every compile of a user: `sinter compile` looks a unit up before it runs NVRTC, ptxas or
// LLVM on it, and stores what they made.
//
//  * Keys: cacheKey() of everything that decides the result (the unit's code, the target, each
//    option passed to the tool, the tool's version, the cache format), a SHA-256 digest. A hit
//    returns the very bytes the tool made for that input, so an artifact is byte-identical with
//    the cache, without it, and on a warm hit.
//  * Where: $SINTER_CACHE_DIR, else $XDG_CACHE_HOME/sinter, else $HOME/.cache/sinter
//    (defaultCacheDirectory); `sinter compile --cache-dir DIR` or `--no-cache`.
//  * Entries: DIR/kernels-v1/XY/KEY (XY: the key's first two digits), each a header (magic,
//    format version, payload size, the key, the payload's SHA-256) and the payload. A load checks
//    all of them; an entry that fails is removed and counted corrupt, and the caller rebuilds it,
//    so a damaged entry is never used.
//  * Several compiles may share a folder at once: an entry is written under a temporary name
//    unique to the writer and renamed into place (rename is atomic within a file system), so a
//    reader sees a whole entry or none; two writers of one key write the same bytes.
//  * Size: at most maxBytes (SINTER_CACHE_MAX_BYTES, default 2 GiB); trim() removes the entries
//    least recently used (a hit refreshes an entry's modification time) until the folder holds
//    at most 80% of it.
//  * The cache is an accelerator, never a source of errors: a folder that cannot be created,
//    read or written makes lookups miss and stores do nothing.
#pragma once

#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

namespace sinter {

/// The key of a cache entry: SHA-256 (64 hex digits) over the parts, each prefixed with its
/// length, so no two different lists of parts give the same bytes to hash.
std::string cacheKey(std::initializer_list<std::string_view> parts);

/// $SINTER_CACHE_DIR, $XDG_CACHE_HOME/sinter or $HOME/.cache/sinter; empty when none is set.
std::string defaultCacheDirectory();

/// SINTER_CACHE_MAX_BYTES when it is a positive number, else 2 GiB.
uint64_t defaultCacheMaxBytes();

class KernelCache {
public:
  /// A cache in `directory` (created when first stored to); an empty directory is a cache that
  /// is off (every lookup misses, stores do nothing).
  explicit KernelCache(std::string directory, uint64_t maxBytes = defaultCacheMaxBytes());

  bool enabled() const { return !root_.empty(); }
  /// The folder given to the constructor.
  const std::string &directory() const { return directory_; }

  /// The payload stored under `key`, after checking the entry; nullopt on a miss or a corrupt
  /// entry (which is removed).
  std::optional<std::string> load(const std::string &key) const;

  /// Stores `payload` under `key` (temporary file, then rename); failures are ignored.
  void store(const std::string &key, std::string_view payload) const;

  /// Removes the least recently used entries while the cache holds more than maxBytes, down to
  /// 80% of it. Leftover temporary files of writers that died go too, once an hour old.
  void trim() const;

  /// The entry's file (whether or not it exists): for tests and tools.
  std::string entryPath(const std::string &key) const;

  struct Counters {
    uint64_t hits = 0, misses = 0, corrupt = 0, stored = 0;
  };
  Counters counters() const;

private:
  std::string directory_;
  std::string root_; ///< directory/kernels-v1, or empty when off
  uint64_t maxBytes_;
  mutable std::atomic<uint64_t> hits_{0}, misses_{0}, corrupt_{0}, stored_{0};
};

} // namespace sinter
