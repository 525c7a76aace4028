// writeArtifact: serialize; when there are CPU kernel objects, emit the blob object, link, append
// the whole-file digest (file_digest.h), else write the shared object directly
// (shared_object.h); rename into place. Scratch files (the
// blob object, the version script) live in a private temporary folder that is removed whatever
// happens; the output is linked under a temporary name beside the destination and renamed, which
// is atomic on one file system.
#include "sinter/package/writer.h"

#include "blob_object.h"
#include "linker.h"
#include "shared_object.h"
#include "sinter/package/file_digest.h"
#include "sinter/package/format.h"
#include "sinter/support/error.h"
#include "sinter/support/temporary_folder.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include <vector>

namespace sinter::package {
namespace {

namespace fs = std::filesystem;

/// The blob is addressed RIP-relative from sinter_artifact (x86-64 small code model), so the
/// whole shared object must stay well under 2 GiB.
constexpr uint64_t kMaxBlobBytes = (uint64_t(2) << 30) - (uint64_t(64) << 20);

/// Where the blob object (a copy of the whole artifact) may be written before linking, in order
/// of preference: /dev/shm when TMPDIR is unset and /dev/shm is a writable folder with room for
/// the object and 64 MiB more, since a file in memory is written and read back by the linker at
/// about twice the speed of one on a disk's page cache (BERT-base's 440 MB: the write phase
/// 2.3 -> 1.1 s on the 2-core development machine); then the temporary folder.
std::vector<fs::path> scratchBases(uint64_t objectBytes) {
  std::vector<fs::path> bases;
  const char *chosen = std::getenv("TMPDIR");
  struct statvfs space {};
  if (!(chosen && *chosen) && access("/dev/shm", W_OK | X_OK) == 0 && statvfs("/dev/shm", &space) == 0 &&
      uint64_t(space.f_bavail) * space.f_frsize >= objectBytes + (uint64_t(64) << 20))
    bases.push_back("/dev/shm");
  bases.push_back(temporaryDirectory());
  return bases;
}

/// The process's file-creation mask, read without changing it (umask() sets it, which would race
/// with the job pool's threads creating cache entries); 022 when /proc is not there.
mode_t processUmask() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("Umask:", 0) == 0)
      return mode_t(std::strtoul(line.c_str() + 6, nullptr, 8));
  return 022;
}

/// Reserves a unique temporary name beside `destination`; removes it on destruction unless it
/// was committed (renamed onto the destination).
class PendingFile {
public:
  explicit PendingFile(const fs::path &destination) : destination_(destination) {
    fs::path folder = destination.parent_path();
    if (folder.empty())
      folder = ".";
    std::string pattern = (folder / ("." + destination.filename().string() + ".tmp-XXXXXX")).string();
    int descriptor = mkstemp(pattern.data());
    if (descriptor < 0)
      userError("cannot create a file in '", folder.string(), "': ", std::strerror(errno));
    close(descriptor);
    path_ = pattern;
  }
  ~PendingFile() {
    if (!committed_) {
      std::error_code error;
      fs::remove(path_, error);
    }
  }
  PendingFile(const PendingFile &) = delete;
  PendingFile &operator=(const PendingFile &) = delete;

  const fs::path &path() const { return path_; }
  void commit() {
    std::error_code error;
    fs::rename(path_, destination_, error);
    if (error)
      userError("cannot move '", path_.string(), "' to '", destination_.string(),
                "': ", error.message());
    committed_ = true;
  }

private:
  fs::path destination_;
  fs::path path_;
  bool committed_ = false;
};

} // namespace

void writeArtifact(const Manifest &manifest, const std::string &path,
                   const std::vector<std::string> &cpuObjectFiles) {
  if (path.empty())
    userError("no output path for the artifact");
  if (manifest.target == Target::Cuda && !cpuObjectFiles.empty())
    userError("a CUDA artifact takes no CPU object files (", cpuObjectFiles.size(), " given)");
  if (fs::is_directory(path))
    userError("cannot write the artifact to '", path, "': it is a folder");

  std::vector<uint8_t> head = serializeManifestHead(manifest);
  const uint64_t weightsBytes = weightsSize(manifest);
  const std::vector<std::span<const uint8_t>> weights = weightPieces(manifest);
  if (head.size() + weightsBytes > kMaxBlobBytes)
    userError("the artifact's weights (", weightsBytes >> 20,
              " MiB) are too large to embed in a shared object (at most ", kMaxBlobBytes >> 20,
              " MiB)");

  if (cpuObjectFiles.empty() && (manifest.target == Target::Cuda || manifest.kernels.empty())) {
    // Nothing to link: model.so is written directly, its digest hashed on the way. (CPU kernels
    // without objects go to the linker, which names the undefined ones.)
    PendingFile output{fs::path(path)};
    try {
      writeBlobSharedObject(head, weights, output.path().string());
      // The mode a linker gives its output (mkstemp made the file private): 0777 less the umask.
      if (chmod(output.path().c_str(), 0777 & ~processUmask()) != 0)
        userError("cannot set the mode of '", output.path().string(), "': ", std::strerror(errno));
    } catch (const UserError &error) {
      userError("cannot write the artifact '", path, "': ", error.what());
    }
    output.commit();
    return;
  }

  TemporaryFolder scratch("sinter-artifact", scratchBases(head.size() + weightsBytes));
  std::string blobObject = (scratch.path() / "artifact.o").string();
  emitBlobObject(head, weights, blobObject);
  head.clear();
  head.shrink_to_fit();

  LinkRequest request;
  request.objects.push_back(blobObject);
  request.objects.insert(request.objects.end(), cpuObjectFiles.begin(), cpuObjectFiles.end());
  request.exports.push_back("sinter_artifact");
  if (manifest.target == Target::Cpu) {
    for (const Kernel &kernel : manifest.kernels)
      for (const std::string &level : manifest.cpuLevels.empty() ? std::vector<std::string>{""} : manifest.cpuLevels)
        request.exports.push_back(cpuKernelSymbol(kernel.name, level, manifest.cpuLevels.size()));
    request.linkLibc = !cpuObjectFiles.empty();
  }
  request.versionScriptPath = (scratch.path() / "exports.map").string();

  PendingFile output{fs::path(path)};
  request.output = output.path().string();
  try {
    linkSharedObject(request);
    appendFileDigest(request.output);
  } catch (const UserError &error) {
    userError("cannot write the artifact '", path, "': ", error.what());
  }
  output.commit();
}

} // namespace sinter::package
