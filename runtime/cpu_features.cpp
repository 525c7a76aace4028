// Feature sets of the x86-64 micro-architecture levels (the psABI's x86-64-v2, -v3, -v4) and of
// some CPU names, checked bit by bit against cpuid. Each level includes the one below it.
#include "cpu_features.h"

#include "status.h"

#include <cpuid.h>
#include <cstdint>
#include <cstdlib>

namespace sinter::rt {
namespace {

enum Level { kBaseline = 1, kV2 = 2, kV3 = 3, kV4 = 4 };

struct Feature {
  const char *name;
  Level level;
  // Where the bit is: cpuid leaf and subleaf, register (0 eax .. 3 edx), bit. Leaf 0xFFFFFFFF
  // marks an XCR0 requirement (OS support for a register file) with the needed bit mask.
  uint32_t leaf;
  uint32_t subleaf;
  int reg;
  uint32_t bit;
};

constexpr uint32_t kXcr0 = 0xFFFFFFFFu;
constexpr int kEbx = 1, kEcx = 2;

constexpr Feature kFeatures[] = {
    {"cx16", kV2, 1, 0, kEcx, 13},
    {"lahf_lm", kV2, 0x80000001u, 0, kEcx, 0},
    {"popcnt", kV2, 1, 0, kEcx, 23},
    {"sse3", kV2, 1, 0, kEcx, 0},
    {"ssse3", kV2, 1, 0, kEcx, 9},
    {"sse4_1", kV2, 1, 0, kEcx, 19},
    {"sse4_2", kV2, 1, 0, kEcx, 20},
    {"avx", kV3, 1, 0, kEcx, 28},
    {"avx2", kV3, 7, 0, kEbx, 5},
    {"bmi1", kV3, 7, 0, kEbx, 3},
    {"bmi2", kV3, 7, 0, kEbx, 8},
    {"f16c", kV3, 1, 0, kEcx, 29},
    {"fma", kV3, 1, 0, kEcx, 12},
    {"lzcnt", kV3, 0x80000001u, 0, kEcx, 5},
    {"movbe", kV3, 1, 0, kEcx, 22},
    {"osxsave", kV3, 1, 0, kEcx, 27},
    {"os-avx-state", kV3, kXcr0, 0, 0, 0x6},
    {"avx512f", kV4, 7, 0, kEbx, 16},
    {"avx512dq", kV4, 7, 0, kEbx, 17},
    {"avx512cd", kV4, 7, 0, kEbx, 28},
    {"avx512bw", kV4, 7, 0, kEbx, 30},
    {"avx512vl", kV4, 7, 0, kEbx, 31},
    {"os-avx512-state", kV4, kXcr0, 0, 0, 0xE6},
};

struct NamedLevel {
  const char *name;
  Level level;
};

// CPU names that the compiler may record, by the level whose features they all have. A name
// with more features than its level (sandybridge has AVX) maps to the level below plus what the
// loader then cannot check, so such names are not listed: compile for a level instead.
constexpr NamedLevel kLevels[] = {
    {"", kBaseline},           {"x86-64", kBaseline},     {"x86-64-v1", kBaseline},
    {"x86-64-v2", kV2},        {"x86-64-v3", kV3},        {"x86-64-v4", kV4},
    {"nehalem", kV2},          {"westmere", kV2},         {"haswell", kV3},
    {"broadwell", kV3},        {"skylake", kV3},          {"alderlake", kV3},
    {"znver1", kV3},           {"znver2", kV3},           {"znver3", kV3},
    {"skylake-avx512", kV4},   {"cascadelake", kV4},      {"cooperlake", kV4},
    {"icelake-server", kV4},   {"sapphirerapids", kV4},   {"znver4", kV4},
    {"znver5", kV4},
};

uint64_t readXcr0() {
  uint32_t low, high;
  __asm__ volatile("xgetbv" : "=a"(low), "=d"(high) : "c"(0));
  return (uint64_t(high) << 32) | low;
}

bool hasFeature(const Feature &feature) {
  if (feature.leaf == kXcr0) {
    uint32_t eax, ebx, ecx, edx;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx) || !(ecx & (1u << 27)))
      return false; // no OSXSAVE: xgetbv would fault
    return (readXcr0() & feature.bit) == feature.bit;
  }
  uint32_t registers[4] = {0, 0, 0, 0};
  if (!__get_cpuid_count(feature.leaf, feature.subleaf, &registers[0], &registers[1],
                         &registers[2], &registers[3]))
    return false; // the leaf is beyond what this CPU reports
  return (registers[feature.reg] >> feature.bit) & 1u;
}

const NamedLevel *findLevel(const std::string &name) {
  for (const NamedLevel &entry : kLevels)
    if (name == entry.name)
      return &entry;
  return nullptr;
}

std::string joined(const std::vector<std::string> &names) {
  std::string text;
  for (const std::string &name : names)
    text += (text.empty() ? "" : ", ") + name;
  return text;
}

} // namespace

std::vector<std::string> missingCpuFeatures(const std::string &cpuLevel) {
  const NamedLevel *found = findLevel(cpuLevel);
  if (!found)
    fail(SINTER_ERROR_UNSUPPORTED, "the artifact was compiled for the CPU '", cpuLevel,
         "', whose instruction set this runtime cannot check; compile for x86-64-v2, "
         "x86-64-v3 or x86-64-v4");
  std::vector<std::string> missing;
  for (const Feature &feature : kFeatures)
    if (feature.level <= found->level && !hasFeature(feature))
      missing.push_back(feature.name);
  return missing;
}

std::string chooseCpuLevel(const std::vector<std::string> &levels, const std::string &path) {
  if (levels.empty())
    return "x86-64"; // an artifact that names no level needs nothing beyond the baseline
  Level highest = kV4;
  const char *limit = std::getenv("SINTER_MAX_CPU_LEVEL");
  if (limit && *limit) {
    const NamedLevel *named = findLevel(limit);
    if (!named || !*named->name)
      fail(SINTER_ERROR_UNSUPPORTED, "SINTER_MAX_CPU_LEVEL is '", limit,
           "', not a level: use x86-64-v2, x86-64-v3 or x86-64-v4");
    highest = named->level;
  }
  std::vector<std::string> missing;
  bool any = false;
  for (size_t i = levels.size(); i-- > 0;) {
    const NamedLevel *named = findLevel(levels[i]);
    if (named && named->level > highest)
      continue;
    any = true;
    missing = missingCpuFeatures(levels[i]); // fails for a level this runtime cannot check
    if (missing.empty())
      return levels[i];
  }
  if (!any)
    fail(SINTER_ERROR_UNSUPPORTED, "'", path, "' has kernels for ", joined(levels),
         ", none at or below SINTER_MAX_CPU_LEVEL=", limit);
  fail(SINTER_ERROR_UNSUPPORTED, "'", path, "' was compiled for ", joined(levels),
       " but this CPU lacks ", joined(missing));
}

} // namespace sinter::rt
