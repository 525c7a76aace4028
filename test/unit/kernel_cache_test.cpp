// The kernel cache (support/kernel_cache.h) on its own: entries round-trip; an entry damaged in
// any part (payload, digest, size, key, magic, truncation) is detected, removed and never
// returned; the size bound evicts the least recently used entries; writers on several threads
// sharing one folder leave only whole entries. The truth for keys is SHA-256 (sha256sum's).
#include "sinter/support/kernel_cache.h"
#include "sinter/support/sha256.h"

#include "temp_dir.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>
#include <unistd.h>

using namespace sinter;

namespace {

namespace fs = std::filesystem;

std::string readAll(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void writeAll(const std::string &path, const std::string &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

} // namespace

TEST(KernelCache, KeysAreSha256OfLengthPrefixedParts) {
  // sha256sum of the bytes "3:abc1:d" (printf '3:abc1:d' | sha256sum).
  EXPECT_EQ(cacheKey({"abc", "d"}), sha256Hex("3:abc1:d"));
  EXPECT_EQ(sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_NE(cacheKey({"ab", "cd"}), cacheKey({"abc", "d"}));
  EXPECT_EQ(cacheKey({"x"}).size(), 64u);
}

TEST(KernelCache, EntriesRoundTripAndMissesAreCounted) {
  sinter::testing::TempDir folder;
  KernelCache cache(folder.path().string());
  std::string key = cacheKey({"unit"});
  EXPECT_EQ(cache.load(key), std::nullopt);
  std::string payload("cubin\0bytes", 11);
  cache.store(key, payload);
  EXPECT_EQ(cache.load(key), payload);
  EXPECT_TRUE(fs::exists(cache.entryPath(key)));
  EXPECT_EQ(cache.load("not-a-key"), std::nullopt);
  KernelCache::Counters counters = cache.counters();
  EXPECT_EQ(counters.hits, 1u);
  EXPECT_EQ(counters.misses, 2u);
  EXPECT_EQ(counters.stored, 1u);
  EXPECT_EQ(counters.corrupt, 0u);
  KernelCache off("");
  EXPECT_FALSE(off.enabled());
  off.store(key, payload);
  EXPECT_EQ(off.load(key), std::nullopt);
}

TEST(KernelCache, DamagedEntriesAreDetectedRemovedAndRebuilt) {
  sinter::testing::TempDir folder;
  KernelCache cache(folder.path().string());
  const std::string key = cacheKey({"unit", "sm_90"});
  const std::string payload(1000, 'p');
  cache.store(key, payload);
  const std::string good = readAll(cache.entryPath(key));
  ASSERT_EQ(good.size(), 96u + payload.size()); // magic 8, size 8, key 64, XXH64 16
  // Each damage: a byte of the payload, of the digest, of the size, of the key, of the magic;
  // the entry cut short; the entry with bytes appended.
  std::vector<std::string> damaged;
  for (size_t at : {size_t(96 + 500), size_t(80 + 3), size_t(8), size_t(16 + 5), size_t(0)}) {
    std::string bytes = good;
    bytes[at] ^= 0x01;
    damaged.push_back(bytes);
  }
  damaged.push_back(good.substr(0, good.size() - 1));
  damaged.push_back(good + "x");
  damaged.push_back("");
  for (size_t i = 0; i < damaged.size(); ++i) {
    writeAll(cache.entryPath(key), damaged[i]);
    EXPECT_EQ(cache.load(key), std::nullopt) << "damage " << i;
    EXPECT_FALSE(fs::exists(cache.entryPath(key))) << "damage " << i << " was left in place";
    cache.store(key, payload); // what a compile does after the miss
    EXPECT_EQ(cache.load(key), payload) << "damage " << i;
  }
  EXPECT_EQ(cache.counters().corrupt, damaged.size());
}

TEST(KernelCache, TrimEvictsTheLeastRecentlyUsedEntries) {
  sinter::testing::TempDir folder;
  // Room for about three entries of 1000 bytes (1144 on disk each).
  KernelCache cache(folder.path().string(), 3 * 1144 + 100);
  std::vector<std::string> keys;
  for (int i = 0; i < 5; ++i) {
    keys.push_back(cacheKey({"entry", std::to_string(i)}));
    cache.store(keys.back(), std::string(1000, char('a' + i)));
    // Distinct modification times, oldest first: entry 0, then 1, ...
    fs::last_write_time(cache.entryPath(keys.back()),
                        fs::file_time_type::clock::now() - std::chrono::hours(10 - i));
  }
  // A hit makes entry 0 the most recently used.
  ASSERT_TRUE(cache.load(keys[0]));
  cache.trim();
  // 5 entries are over the bound; trimming goes to 80% of it (two entries fit): the oldest
  // unused ones go first.
  EXPECT_TRUE(fs::exists(cache.entryPath(keys[0])));
  EXPECT_TRUE(fs::exists(cache.entryPath(keys[4])));
  EXPECT_FALSE(fs::exists(cache.entryPath(keys[1])));
  EXPECT_FALSE(fs::exists(cache.entryPath(keys[2])));
  EXPECT_FALSE(fs::exists(cache.entryPath(keys[3])));
}

TEST(KernelCache, ConcurrentWritersLeaveWholeEntries) {
  sinter::testing::TempDir folder;
  KernelCache cache(folder.path().string());
  std::vector<std::string> keys;
  for (int i = 0; i < 8; ++i)
    keys.push_back(cacheKey({"shared", std::to_string(i)}));
  std::vector<std::thread> threads;
  std::atomic<int> bad{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int round = 0; round < 20; ++round)
        for (size_t i = 0; i < keys.size(); ++i) {
          std::string payload(2000 + i, char('a' + i));
          if (std::optional<std::string> got = cache.load(keys[i]); got && *got != payload)
            ++bad;
          cache.store(keys[i], payload);
        }
    });
  for (std::thread &thread : threads)
    thread.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(cache.counters().corrupt, 0u);
  for (size_t i = 0; i < keys.size(); ++i)
    EXPECT_EQ(cache.load(keys[i]), std::string(2000 + i, char('a' + i)));
  // No temporary file is left behind.
  for (const auto &entry : fs::recursive_directory_iterator(folder.path()))
    EXPECT_NE(entry.path().filename().string().rfind(".tmp-", 0), 0u) << entry.path();
}
