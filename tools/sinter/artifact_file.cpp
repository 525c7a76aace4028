#include "artifact_file.h"

#include "sinter/package/file_digest.h"
#include "sinter/support/error.h"

#include <cerrno>
#include <cstring>
#include <elf.h>
#include <fcntl.h>
#include <span>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace sinter::cli {
namespace {

constexpr const char *kSectionName = ".sinter_artifact";

template <typename T> T readAt(const uint8_t *data, uint64_t offset) {
  T value;
  std::memcpy(&value, data + offset, sizeof(T));
  return value;
}

/// True when [offset, offset + bytes) lies inside a file of `size` bytes (no overflow).
bool inside(uint64_t offset, uint64_t bytes, uint64_t size) {
  return offset <= size && bytes <= size - offset;
}

/// The file range of the `.sinter_artifact` section.
std::span<const uint8_t> findArtifactSection(const std::string &path, const uint8_t *data,
                                             uint64_t size) {
  auto notElf = [&](const std::string &why) {
    userError("'", path, "' is not a sinter artifact: ", why);
  };
  if (size < sizeof(Elf64_Ehdr) || std::memcmp(data, ELFMAG, SELFMAG) != 0)
    notElf("it is not an ELF file");
  if (data[EI_CLASS] != ELFCLASS64 || data[EI_DATA] != ELFDATA2LSB)
    notElf("it is not a 64-bit little-endian ELF file");
  auto header = readAt<Elf64_Ehdr>(data, 0);
  if (header.e_shnum == 0 || header.e_shentsize < sizeof(Elf64_Shdr) ||
      !inside(header.e_shoff, uint64_t(header.e_shnum) * header.e_shentsize, size))
    notElf("its ELF section headers are missing or truncated");
  if (header.e_shstrndx == SHN_UNDEF || header.e_shstrndx >= header.e_shnum)
    notElf("it has no section name table");
  auto section = [&](uint64_t index) {
    return readAt<Elf64_Shdr>(data, header.e_shoff + index * header.e_shentsize);
  };
  Elf64_Shdr names = section(header.e_shstrndx);
  if (names.sh_type == SHT_NOBITS || !inside(names.sh_offset, names.sh_size, size))
    notElf("its section name table is truncated");
  const size_t nameLength = std::strlen(kSectionName);
  for (uint64_t index = 0; index < header.e_shnum; ++index) {
    Elf64_Shdr candidate = section(index);
    // The name must fit, NUL included, inside the name table.
    if (candidate.sh_name >= names.sh_size || names.sh_size - candidate.sh_name < nameLength + 1)
      continue;
    const uint8_t *name = data + names.sh_offset + candidate.sh_name;
    if (std::memcmp(name, kSectionName, nameLength + 1) != 0)
      continue;
    if (candidate.sh_type == SHT_NOBITS || !inside(candidate.sh_offset, candidate.sh_size, size))
      notElf("its .sinter_artifact section is truncated");
    return {data + candidate.sh_offset, candidate.sh_size};
  }
  notElf("it has no .sinter_artifact section (was it made by `sinter compile`?)");
  return {};
}

} // namespace

ArtifactFile::~ArtifactFile() {
  if (mapping_)
    munmap(mapping_, fileBytes_);
}

std::unique_ptr<ArtifactFile> readArtifactFile(const std::string &path) {
  int descriptor = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (descriptor < 0)
    userError("cannot open '", path, "': ", std::strerror(errno));
  struct stat status {};
  if (fstat(descriptor, &status) != 0 || !S_ISREG(status.st_mode)) {
    close(descriptor);
    userError("'", path, "' is not a regular file");
  }
  std::unique_ptr<ArtifactFile> file(new ArtifactFile());
  file->fileBytes_ = static_cast<uint64_t>(status.st_size);
  if (file->fileBytes_ == 0) {
    close(descriptor);
    userError("'", path, "' is empty, not a sinter artifact");
  }

  void *mapping = mmap(nullptr, file->fileBytes_, PROT_READ, MAP_PRIVATE, descriptor, 0);
  int mapError = errno;
  if (mapping == MAP_FAILED) {
    close(descriptor);
    userError("cannot map '", path, "': ", std::strerror(mapError));
  }
  file->mapping_ = mapping;
  const auto *data = static_cast<const uint8_t *>(mapping);

  std::span<const uint8_t> section;
  try {
    section = findArtifactSection(path, data, file->fileBytes_);
  } catch (...) {
    close(descriptor);
    throw;
  }
  // Then the runtime's checks: the ELF layout against the size, and the whole-file digest.
  std::string problem = package::findArtifactFileProblem(descriptor, file->fileBytes_);
  close(descriptor);
  if (!problem.empty())
    userError("'", path, "' is not a valid sinter artifact: ", problem);
  if (section.size() < package::kArtifactHeaderBytes ||
      std::memcmp(section.data(), package::kArtifactMagic, sizeof(package::kArtifactMagic)) != 0)
    userError("'", path, "': its .sinter_artifact section does not start with a sinter manifest");
  // The header's total size (offset 16); the section may be padded beyond it.
  uint64_t total = readAt<uint64_t>(section.data(), 16);
  if (total > section.size())
    userError("'", path, "': corrupt artifact: the manifest says ", total,
              " bytes but its section holds ", section.size());
  file->blobBytes_ = total;
  try {
    file->view_ = package::parseArtifactView(section.first(total), /*verifyWeights=*/true);
  } catch (const UserError &error) {
    userError("'", path, "': ", error.what());
  }
  return file;
}

} // namespace sinter::cli
