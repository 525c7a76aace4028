// A damaged model.so is an error, never a crash, a hang or a changed output. On a real CPU
// artifact (models/tiny_cnn.onnx): cuts every 384 bytes and at every segment and section
// boundary; a FIFO at the path; bytes flipped in every ELF region (headers, program headers,
// .dynamic, relocations, symbols, .text, .rodata, the manifest, the weights, the trailer); forged
// manifests whose hashes and digest were recomputed, which only the validator can catch. Each
// damaged file is loaded and run in a child process under an alarm, so a crash or a hang fails
// the test instead of killing the test runner. Also: XXH64 against the reference
// implementation's outputs, and the artifact staying byte-identical for identical inputs.
#include "artifact_test_util.h"
#include "sinter/package/file_digest.h"
#include "sinter/package/format.h"
#include "sinter/package/writer.h"
#include "tiny_model_util.h"

#include <gtest/gtest.h>

#include <elf.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <functional>
#include <set>

using namespace sinter;
using namespace sinter::package;
using namespace sinter::testing;

namespace {

/// What a child made of one file.
enum class Outcome { Refused, SameOutput, DifferentOutput, RunFailed, Crashed, Hung };

const char *outcomeName(Outcome outcome) {
  switch (outcome) {
  case Outcome::Refused:
    return "refused";
  case Outcome::SameOutput:
    return "loaded and ran with the intact output";
  case Outcome::DifferentOutput:
    return "loaded and ran with a DIFFERENT output";
  case Outcome::RunFailed:
    return "loaded, then failed to run";
  case Outcome::Crashed:
    return "CRASHED";
  case Outcome::Hung:
    return "HUNG";
  }
  return "?";
}

struct ChildResult {
  Outcome outcome = Outcome::Crashed;
  int status = -1;     ///< sinter_model_load's status when refused
  std::string message; ///< its last error, or the signal
};

/// Loads `path` in a child process, and if that succeeds runs it once (one thread) and compares
/// the output with `expected`. The child gets `seconds` before SIGALRM ends it.
ChildResult loadAndRunInChild(const std::string &path, const std::vector<uint8_t> &expected,
                              unsigned seconds = 20) {
  int channel[2];
  if (pipe(channel) != 0)
    return {Outcome::Crashed, -1, "pipe failed"};
  pid_t child = fork();
  if (child == 0) {
    close(channel[0]);
    alarm(seconds);
    sinter_model *model = nullptr;
    sinter_status status = sinter_model_load(path.c_str(), &model);
    auto report = [&](int code, const std::string &text) {
      int32_t value = status;
      (void)!write(channel[1], &value, sizeof value);
      (void)!write(channel[1], text.data(), text.size());
      _exit(code);
    };
    if (status != SINTER_OK)
      report(10, sinter_last_error());
    sinter_session_options options;
    sinter_session_options_init(&options);
    options.threads = 1;
    sinter_session *session = nullptr;
    if (sinter_session_create(model, &options, &session) != SINTER_OK)
      report(11, sinter_last_error());
    ModelBuffers buffers(model);
    if (buffers.run(session) != SINTER_OK)
      report(11, sinter_last_error());
    report(buffers.outputBytes() == expected ? 12 : 13, "");
  }
  close(channel[1]);
  std::string received;
  char chunk[512];
  for (ssize_t got; (got = read(channel[0], chunk, sizeof chunk)) > 0;)
    received.append(chunk, size_t(got));
  close(channel[0]);
  int wait = 0;
  waitpid(child, &wait, 0);
  ChildResult result;
  if (received.size() >= 4) {
    std::memcpy(&result.status, received.data(), 4);
    result.message = received.substr(4);
  }
  if (WIFSIGNALED(wait)) {
    result.outcome = WTERMSIG(wait) == SIGALRM ? Outcome::Hung : Outcome::Crashed;
    result.message = strsignal(WTERMSIG(wait));
    return result;
  }
  switch (WEXITSTATUS(wait)) {
  case 10:
    result.outcome = Outcome::Refused;
    break;
  case 11:
    result.outcome = Outcome::RunFailed;
    break;
  case 12:
    result.outcome = Outcome::SameOutput;
    break;
  case 13:
    result.outcome = Outcome::DifferentOutput;
    break;
  default:
    result.outcome = Outcome::Crashed;
    result.message = "exit code " + std::to_string(WEXITSTATUS(wait));
  }
  return result;
}

void writeBytes(const std::string &path, const std::vector<uint8_t> &bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char *>(bytes.data()), std::streamsize(bytes.size()));
}

template <typename T> T readAt(const std::vector<uint8_t> &bytes, uint64_t offset) {
  T value;
  std::memcpy(&value, bytes.data() + offset, sizeof(T));
  return value;
}

/// A named byte range of the file.
struct FileRange {
  std::string name;
  uint64_t offset = 0, bytes = 0;
};

/// The ELF regions of an artifact (read with the test's own parsing, not the runtime's): the
/// header, the program and section header tables, every section with file bytes (the
/// .sinter_artifact section split into the manifest's header, metadata and weights), the trailer.
std::vector<FileRange> elfRegions(const std::vector<uint8_t> &file) {
  auto header = readAt<Elf64_Ehdr>(file, 0);
  std::vector<FileRange> regions = {
      {"ELF header", 0, sizeof(Elf64_Ehdr)},
      {"program headers", header.e_phoff, uint64_t(header.e_phnum) * sizeof(Elf64_Phdr)},
      {"section headers", header.e_shoff, uint64_t(header.e_shnum) * sizeof(Elf64_Shdr)},
      {"digest trailer", file.size() - kDigestTrailerBytes, kDigestTrailerBytes}};
  auto names = readAt<Elf64_Shdr>(file, header.e_shoff + header.e_shstrndx * sizeof(Elf64_Shdr));
  for (uint64_t i = 1; i < header.e_shnum; ++i) {
    auto section = readAt<Elf64_Shdr>(file, header.e_shoff + i * sizeof(Elf64_Shdr));
    if (section.sh_type == SHT_NOBITS || section.sh_size == 0)
      continue;
    std::string name(reinterpret_cast<const char *>(file.data() + names.sh_offset + section.sh_name));
    if (name != ".sinter_artifact") {
      regions.push_back({name, section.sh_offset, section.sh_size});
      continue;
    }
    auto metadataBytes = readAt<uint64_t>(file, section.sh_offset + 32);
    auto weightsOffset = readAt<uint64_t>(file, section.sh_offset + 48);
    auto weightsBytes = readAt<uint64_t>(file, section.sh_offset + 56);
    regions.push_back({"manifest header", section.sh_offset, kArtifactHeaderBytes});
    regions.push_back({"manifest metadata", section.sh_offset + kArtifactHeaderBytes, metadataBytes});
    regions.push_back({"weights", section.sh_offset + weightsOffset, weightsBytes});
  }
  return regions;
}

/// The .sinter_artifact section's file offset.
uint64_t artifactSectionOffset(const std::vector<uint8_t> &file) {
  for (const FileRange &region : elfRegions(file))
    if (region.name == "manifest header")
      return region.offset;
  ADD_FAILURE() << "no .sinter_artifact section";
  return 0;
}

/// Rewrites the metadata hash and the whole-file digest after an edit of the metadata, as a
/// deliberate forger would.
void resealForgery(std::vector<uint8_t> &file, uint64_t section) {
  auto metadataBytes = readAt<uint64_t>(file, section + 32);
  uint64_t metadataHash = hashBytes(
      std::span<const uint8_t>(file.data() + section + kArtifactHeaderBytes, metadataBytes));
  std::memcpy(file.data() + section + 40, &metadataHash, 8);
  uint64_t covered = file.size() - kDigestTrailerBytes;
  auto trailer = digestTrailer(covered, xxh64(std::span<const uint8_t>(file.data(), covered)));
  std::copy(trailer.begin(), trailer.end(), file.begin() + std::ptrdiff_t(covered));
}

class ArtifactIntegrity : public ArtifactTest {
protected:
  static void SetUpTestSuite() {
    std::string pattern = (fs::temp_directory_path() / "sinter-integrity-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    suiteFolder_ = pattern;
    artifact_ = suiteFolder_ + "/tiny_cnn.so";
    ASSERT_TRUE(compileTinyCnn(artifact_));
    file_ = readFile(artifact_);
    sinter::rt::Model model(artifact_);
    sinter_session_options options;
    sinter_session_options_init(&options);
    options.threads = 1;
    sinter_session *session = nullptr;
    ASSERT_EQ(sinter_session_create(model.get(), &options, &session), SINTER_OK);
    ModelBuffers buffers(model.get());
    ASSERT_EQ(buffers.run(session), SINTER_OK) << sinter_last_error();
    sinter_session_destroy(session);
    expected_ = buffers.outputBytes();
  }
  static void TearDownTestSuite() {
    std::error_code error;
    fs::remove_all(suiteFolder_, error);
  }

  /// Writes `bytes` to a scratch file and loads it in a child; expects a refusal with
  /// INVALID_ARTIFACT and returns the message.
  std::string expectRefused(const std::vector<uint8_t> &bytes, const std::string &what) {
    std::string damaged = path("damaged.so");
    writeBytes(damaged, bytes);
    ChildResult result = loadAndRunInChild(damaged, expected_);
    EXPECT_EQ(result.outcome, Outcome::Refused)
        << what << ": " << outcomeName(result.outcome) << " " << result.message;
    if (result.outcome == Outcome::Refused) {
      EXPECT_EQ(result.status, SINTER_ERROR_INVALID_ARTIFACT) << what << ": " << result.message;
    }
    return result.message;
  }

  static std::string suiteFolder_, artifact_;
  static std::vector<uint8_t> file_, expected_;
};

std::string ArtifactIntegrity::suiteFolder_, ArtifactIntegrity::artifact_;
std::vector<uint8_t> ArtifactIntegrity::file_, ArtifactIntegrity::expected_;

TEST(FileDigest, Xxh64MatchesTheReferenceImplementation) {
  // Expected values from the xxHash project's own library (libxxhash 0.8, XXH64), for inputs on
  // both sides of the 4-, 8- and 32-byte paths of the algorithm.
  std::vector<uint8_t> data(200);
  for (size_t i = 0; i < data.size(); ++i)
    data[i] = uint8_t(i * 131 + 7);
  auto hash = [&](size_t bytes, uint64_t seed) {
    return xxh64(std::span<const uint8_t>(data.data(), bytes), seed);
  };
  EXPECT_EQ(xxh64({}, 0), 0xEF46DB3751D8E999ull);
  const std::string abc = "abc";
  EXPECT_EQ(xxh64(std::span<const uint8_t>(reinterpret_cast<const uint8_t *>(abc.data()), 3)),
            0x44BC2CF5AD770999ull);
  const std::map<std::pair<size_t, uint64_t>, uint64_t> reference = {
      {{1, 0}, 0xA96C7F0CE858BBB7ull},  {{4, 0}, 0xFA212AE44B3BB23Dull},
      {{7, 0}, 0x2744460DD675D2C0ull},  {{8, 0}, 0x994B676B71CE94DDull},
      {{31, 0}, 0x6711D55E306B5D8Full}, {{32, 0}, 0x07F7B8E3BC5D6E25ull},
      {{33, 0}, 0x09F85EEB4E1CBE9Full}, {{200, 0}, 0x3B8CC7EAA63F107Eull},
      {{200, 12345}, 0x0942B64EFAD3248Dull}};
  for (const auto &[input, expected] : reference)
    EXPECT_EQ(hash(input.first, input.second), expected)
        << input.first << " bytes, seed " << input.second;
  // Fed in pieces of every size, the streaming form gives the one-call digest.
  for (size_t piece = 1; piece <= 40; ++piece) {
    Xxh64 streaming;
    for (size_t at = 0; at < data.size(); at += piece)
      streaming.update(std::span<const uint8_t>(data.data() + at, std::min(piece, data.size() - at)));
    EXPECT_EQ(streaming.digest(), hash(data.size(), 0)) << "pieces of " << piece;
  }
}

TEST_F(ArtifactIntegrity, TheIntactArtifactLoadsAndIsByteIdenticalWhenRecompiled) {
  ChildResult intact = loadAndRunInChild(artifact_, expected_);
  EXPECT_EQ(intact.outcome, Outcome::SameOutput) << intact.message;
  std::string again = path("again.so");
  ASSERT_TRUE(compileTinyCnn(again));
  EXPECT_TRUE(readFile(again) == file_) << "two compiles of one model differ";
  // The trailer covers exactly the bytes before it.
  auto trailer = digestTrailer(file_.size() - kDigestTrailerBytes,
                               xxh64(std::span<const uint8_t>(file_.data(), file_.size() - 32)));
  EXPECT_TRUE(std::equal(trailer.begin(), trailer.end(), file_.end() - 32));
}

TEST_F(ArtifactIntegrity, EveryTruncationIsRefused) {
  std::set<uint64_t> cuts;
  for (uint64_t at = 0; at < file_.size(); at += 384)
    cuts.insert(at);
  auto header = readAt<Elf64_Ehdr>(file_, 0);
  for (uint64_t i = 0; i < header.e_phnum; ++i) {
    auto segment = readAt<Elf64_Phdr>(file_, header.e_phoff + i * sizeof(Elf64_Phdr));
    for (uint64_t at : {segment.p_offset, segment.p_offset + segment.p_filesz})
      for (uint64_t near : {at - 1, at, at + 1})
        cuts.insert(near);
  }
  for (const FileRange &region : elfRegions(file_))
    for (uint64_t near : {region.offset, region.offset + 1, region.offset + region.bytes - 1})
      cuts.insert(near);
  for (uint64_t near = file_.size() - 40; near < file_.size(); ++near)
    cuts.insert(near);
  size_t tried = 0;
  for (uint64_t cut : cuts) {
    if (cut >= file_.size())
      continue;
    std::vector<uint8_t> truncated(file_.begin(), file_.begin() + std::ptrdiff_t(cut));
    expectRefused(truncated, "cut at byte " + std::to_string(cut));
    ++tried;
  }
  EXPECT_GT(tried, file_.size() / 384);
  // An extended file (bytes after the trailer) is refused too.
  std::vector<uint8_t> extended = file_;
  extended.push_back(0);
  std::string message = expectRefused(extended, "one byte appended");
  EXPECT_TRUE(contains(message, "digest trailer")) << message;
}

TEST_F(ArtifactIntegrity, TruncationNamesWhatIsMissing) {
  auto header = readAt<Elf64_Ehdr>(file_, 0);
  std::vector<uint8_t> cut(file_.begin(), file_.begin() + std::ptrdiff_t(header.e_shoff + 8));
  std::string message = expectRefused(cut, "cut inside the section headers");
  EXPECT_TRUE(contains(message, "section header table")) << message;
  EXPECT_TRUE(contains(message, "tiny_cnn") || contains(message, "damaged.so")) << message;
}

TEST_F(ArtifactIntegrity, AFifoAtThePathIsAnErrorNotAHang) {
  std::string fifo = path("model.so");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  auto start = std::chrono::steady_clock::now();
  ChildResult result = loadAndRunInChild(fifo, expected_, /*seconds=*/10);
  EXPECT_EQ(result.outcome, Outcome::Refused) << outcomeName(result.outcome) << " " << result.message;
  EXPECT_EQ(result.status, SINTER_ERROR_IO);
  EXPECT_TRUE(contains(result.message, "FIFO")) << result.message;
  (void)start;
  // Folders and devices are refused the same way.
  EXPECT_EQ(loadAndRunInChild(folder_.string(), expected_, 10).status, SINTER_ERROR_IO);
  ChildResult device = loadAndRunInChild("/dev/zero", expected_, 10);
  EXPECT_EQ(device.outcome, Outcome::Refused);
  EXPECT_EQ(device.status, SINTER_ERROR_IO);
  EXPECT_TRUE(contains(device.message, "device")) << device.message;
}

TEST_F(ArtifactIntegrity, AFlippedByteInAnyRegionIsRefused) {
  std::set<std::string> covered;
  size_t cases = 0;
  for (const FileRange &region : elfRegions(file_)) {
    if (region.bytes == 0)
      continue;
    covered.insert(region.name);
    // Both ends and six points between them; three bit patterns.
    std::set<uint64_t> points = {region.offset, region.offset + region.bytes - 1};
    for (uint64_t k = 1; k <= 6; ++k)
      points.insert(region.offset + region.bytes * k / 7);
    uint8_t masks[] = {0x01, 0x80, 0xFF};
    size_t m = 0;
    for (uint64_t point : points) {
      std::vector<uint8_t> damaged = file_;
      damaged[point] ^= masks[m++ % 3];
      std::string message =
          expectRefused(damaged, region.name + " byte " + std::to_string(point));
      if (region.name != "digest trailer" && region.name != "ELF header" &&
          region.name != "program headers" && region.name != "section headers") {
        EXPECT_TRUE(contains(message, "checksum")) << region.name << ": " << message;
      }
      ++cases;
    }
  }
  for (const char *name : {"ELF header", "program headers", "section headers", ".dynamic",
                           ".text", ".rodata", ".dynsym", ".dynstr", "manifest header",
                           "manifest metadata", "weights", "digest trailer"})
    EXPECT_TRUE(covered.count(name)) << "the artifact has no " << name << " region to damage";
  bool relocations = covered.count(".rela.dyn") || covered.count(".rela.plt");
  EXPECT_TRUE(relocations) << "the artifact has no relocation section to damage";
  EXPECT_GT(cases, 60u);
}

/// The section offset of the field `edit` changes: the first byte that differs when it moves the
/// field by one (a valid edit, so the manifest still serializes, to the same length).
uint64_t fieldOffset(const Manifest &manifest, const std::function<void(Manifest &)> &edit) {
  std::vector<uint8_t> before = serializeManifestHead(manifest);
  Manifest changed = manifest;
  edit(changed);
  std::vector<uint8_t> after = serializeManifestHead(changed);
  EXPECT_EQ(before.size(), after.size());
  for (size_t i = kArtifactHeaderBytes; i < before.size(); ++i)
    if (before[i] != after[i])
      return i;
  ADD_FAILURE() << "the edit changed nothing";
  return 0;
}

/// The section offset of a launch step's parallelExtent.
uint64_t extentOffset(const Manifest &manifest, size_t step) {
  return fieldOffset(manifest,
                     [&](Manifest &m) { std::get<Launch>(m.steps[step]).parallelExtent ^= 1; });
}

TEST_F(ArtifactIntegrity, ForgedExtentsAndKernelsReachTheValidatorAndAreRefused) {
  uint64_t section = artifactSectionOffset(file_);
  auto totalBytes = readAt<uint64_t>(file_, section + 16);
  Manifest manifest =
      parseManifest(std::span<const uint8_t>(file_.data() + section, totalBytes));
  // The file's manifest is what this build serializes, so fields can be placed by diffing.
  std::vector<uint8_t> head = serializeManifestHead(manifest);
  ASSERT_TRUE(std::equal(head.begin(), head.end(), file_.begin() + std::ptrdiff_t(section)));
  std::vector<size_t> launches;
  for (size_t i = 0; i < manifest.steps.size(); ++i)
    if (std::holds_alternative<Launch>(manifest.steps[i]))
      launches.push_back(i);
  ASSERT_GE(launches.size(), 2u);
  const Launch &secondLaunch = std::get<Launch>(manifest.steps[launches[1]]);
  ASSERT_FALSE(secondLaunch.args.empty());
  // A launch is u8 kind, u32 kernel, u32 grid[3], u32 block[3], u32 sharedBytes, i64
  // parallelExtent, list<BufferRef> args (docs/artifact-format.md): fields around the extent.
  uint64_t first = section + extentOffset(manifest, launches[0]);
  uint64_t second = section + extentOffset(manifest, launches[1]);
  struct Forgery {
    std::string what;
    uint64_t at;          ///< file offset of the field
    size_t bytes;         ///< its width
    uint64_t value;       ///< the forged value
    std::string expected; ///< part of the validator's message
  };
  std::vector<Forgery> forgeries = {
      {"parallel extent 2.9e17", first, 8, 290000000000000000ull, "parallel extent"},
      {"parallel extent 65284 past a small arena", first, 8,
       std::max<uint64_t>(65284, manifest.arenaBytes + 1), "parallel extent"},
      {"a CPU grid of 65284", first - 28, 4, 65284, "grid"},
      {"a CPU block of 2", first - 16, 4, 2, "block"},
      {"shared memory on the CPU", first - 4, 4, 1024, "shared memory"},
      {"the first launch naming the second's kernel", first - 32, 4, secondLaunch.kernel,
       "declaration order"},
      {"a kernel index out of range", second - 32, 4, uint64_t(manifest.kernels.size()),
       "launches kernel"},
      {"an argument far past its region", second + 16, 8, uint64_t(1) << 62, "past the end"},
  };
  // The compiler records every argument's size, so an argument moved to a start inside its
  // region from which its bytes run past the region's end is caught, and so is a size beyond it.
  const Launch &firstLaunch = std::get<Launch>(manifest.steps[launches[0]]);
  ASSERT_EQ(firstLaunch.argBytes.size(), firstLaunch.args.size()) << "the compiler records sizes";
  bool arenaArgument = false;
  for (size_t step : launches) {
    const Launch &launch = std::get<Launch>(manifest.steps[step]);
    for (size_t arg = 0; arg < launch.args.size(); ++arg) {
      EXPECT_GT(launch.argBytes[arg], 0u) << "step " << step << " argument " << arg;
      if (launch.args[arg].region != package::Region::Arena || arenaArgument)
        continue;
      arenaArgument = true;
      uint64_t bytes = launch.argBytes[arg];
      uint64_t start = section + fieldOffset(manifest, [&](Manifest &m) {
                         uint64_t &offset = std::get<Launch>(m.steps[step]).args[arg].offset;
                         offset = offset > 0 ? offset - 1 : offset + 1;
                       });
      uint64_t size = section + fieldOffset(manifest, [&](Manifest &m) {
                        std::get<Launch>(m.steps[step]).argBytes[arg] -= 1;
                      });
      forgeries.push_back({"an arena argument moved to end half past the arena", start, 8,
                           manifest.arenaBytes - bytes / 2, "runs past the end"});
      forgeries.push_back({"an arena argument's size past the arena", size, 8,
                           manifest.arenaBytes - launch.args[arg].offset + 1,
                           "runs past the end"});
    }
  }
  ASSERT_TRUE(arenaArgument);
  for (const Forgery &forgery : forgeries) {
    std::vector<uint8_t> forged = file_;
    std::memcpy(forged.data() + forgery.at, &forgery.value, forgery.bytes);
    resealForgery(forged, section);
    std::string message = expectRefused(forged, forgery.what);
    EXPECT_TRUE(contains(message, forgery.expected)) << forgery.what << ": " << message;
    EXPECT_FALSE(contains(message, "checksum")) << forgery.what << " should pass the checksums";
  }
}

/// A valid CUDA manifest with one kernel and one launch, for the launch-shape limits.
Manifest cudaManifest() {
  Manifest manifest;
  manifest.target = Target::Cuda;
  manifest.producer = "integrity_test";
  manifest.cudaArchs = {"sm_90"};
  manifest.inputs = {signature("x", DType::Float32, {256}, 0)};
  manifest.outputs = {signature("y", DType::Float32, {256}, 1024)};
  manifest.arenaBytes = 2048;
  manifest.cudaModules = {CudaModule{{CudaBinary{"sm_90", false, {1, 2, 3}}}}};
  Kernel kernel;
  kernel.name = "scale";
  manifest.kernels = {kernel};
  Launch launch;
  launch.grid[0] = 2;
  launch.block[0] = 128;
  launch.parallelExtent = 256;
  launch.args = {{package::Region::Arena, 0}, {package::Region::Arena, 1024}};
  launch.argBytes = {1024, 1024};
  manifest.steps = {launch};
  return manifest;
}

TEST(ManifestValidation, LaunchShapesAreBoundedByWhatCudaAndThePlanAllow) {
  EXPECT_EQ(findManifestProblem(cudaManifest(), 0), "");
  auto problemWith = [](const std::function<void(Launch &)> &edit) {
    Manifest manifest = cudaManifest();
    edit(std::get<Launch>(manifest.steps[0]));
    return findManifestProblem(manifest, 0);
  };
  EXPECT_TRUE(contains(problemWith([](Launch &l) { l.block[0] = 2048; }), "block"));
  EXPECT_TRUE(contains(problemWith([](Launch &l) { l.block[0] = 32, l.block[2] = 65; }), "block"));
  EXPECT_TRUE(contains(problemWith([](Launch &l) { l.grid[1] = 65536; }), "grid"));
  EXPECT_TRUE(contains(problemWith([](Launch &l) { l.grid[0] = 0x80000000u; }), "grid"));
  EXPECT_TRUE(contains(problemWith([](Launch &l) { l.sharedBytes = 300000; }), "shared memory"));
  EXPECT_TRUE(contains(problemWith([](Launch &l) { l.parallelExtent = 2049; }), "parallel extent"));
  EXPECT_TRUE(contains(problemWith([](Launch &l) { l.parallelExtent = -1; }), "negative"));
  EXPECT_TRUE(contains(problemWith([](Launch &l) { l.args[1].offset = 2049; }), "past the end"));
  // A second kernel launched before the first one.
  Manifest reordered = cudaManifest();
  Kernel extra;
  extra.name = "extra";
  reordered.kernels.push_back(extra);
  EXPECT_EQ(findManifestProblem(reordered, 0), ""); // declared, never launched: allowed
  std::get<Launch>(reordered.steps[0]).kernel = 1;
  EXPECT_TRUE(contains(findManifestProblem(reordered, 0), "declaration order"));
}

TEST(ManifestValidation, RecordedArgumentSizesBoundEveryArgumentsWholeRange) {
  Manifest manifest = cudaManifest();
  std::get<Launch>(manifest.steps[0]).argBytes = {1024, 1024};
  EXPECT_EQ(findManifestProblem(manifest, 0), "");
  // The sizes survive serialization (after an empty bound-input list and float32 storage).
  Manifest parsed = parseManifest(serializeManifest(manifest));
  EXPECT_EQ(std::get<Launch>(parsed.steps[0]).argBytes, (std::vector<uint64_t>{1024, 1024}));
  EXPECT_EQ(parsed.storagePrecision, DType::Float32);
  // A launch whose arguments' sizes are missing is refused (the compiler records them all), so
  // stripping them does not escape the range checks.
  Manifest plain = cudaManifest();
  std::get<Launch>(plain.steps[0]).argBytes.clear();
  EXPECT_TRUE(contains(findManifestProblem(plain, 0), "records no sizes for its 2 arguments"))
      << findManifestProblem(plain, 0);
  EXPECT_TRUE(contains(findManifestProblem(plain, 0), "compile the model again"));

  auto problemWith = [](std::vector<uint64_t> sizes) {
    Manifest edited = cudaManifest();
    std::get<Launch>(edited.steps[0]).argBytes = std::move(sizes);
    return findManifestProblem(edited, 0);
  };
  // The output at 1024 may span 1024 bytes of the 2048-byte arena, not 1025.
  EXPECT_TRUE(contains(problemWith({1024, 1025}), "runs past the end")) << problemWith({1024, 1025});
  EXPECT_TRUE(contains(problemWith({UINT64_MAX, 8}), "runs past the end"));
  EXPECT_TRUE(contains(problemWith({8}), "sizes of 1 of its 2 arguments"));
}

} // namespace
