// The digest trailer, and the file checks sinter_model_load makes before dlopen. The digest is
// XXH64 (sinter/support/xxh64.h). Why XXH64: it is a published,
// widely implemented algorithm (any xxHash library can check an artifact), it is as fast as the
// manifest's hash64 in portable C++ (a SHA-256 without its instructions is several times slower,
// a cost paid on every load of a large model), and 64 bits make an undetected random corruption
// vanishingly rare. Integrity is the goal, not authenticity (docs/runtime.md).
#include "sinter/package/file_digest.h"

#include "sinter/support/error.h"
#include "sinter/support/little_endian.h"

#include <bit>
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <elf.h>
#include <fstream>
#include <unistd.h>
#include <vector>

namespace sinter::package {
namespace {


std::string hexText(uint64_t value) {
  char text[19];
  std::snprintf(text, sizeof text, "0x%016llx", static_cast<unsigned long long>(value));
  return text;
}

/// True when [offset, offset + bytes) lies within [0, size) (no overflow).
bool inside(uint64_t offset, uint64_t bytes, uint64_t size) {
  return offset <= size && bytes <= size - offset;
}

/// Reads exactly `size` bytes at `offset`; false when the file ends first or read fails.
bool readAt(int descriptor, uint64_t offset, void *out, size_t size) {
  auto *bytes = static_cast<uint8_t *>(out);
  while (size > 0) {
    ssize_t got = pread(descriptor, bytes, size, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0)
      return false;
    bytes += got;
    size -= static_cast<size_t>(got);
    offset += static_cast<uint64_t>(got);
  }
  return true;
}

const char *segmentTypeName(uint32_t type) {
  switch (type) {
  case PT_LOAD:
    return "PT_LOAD";
  case PT_DYNAMIC:
    return "PT_DYNAMIC";
  case PT_NOTE:
    return "PT_NOTE";
  case PT_GNU_RELRO:
    return "PT_GNU_RELRO";
  case PT_GNU_EH_FRAME:
    return "PT_GNU_EH_FRAME";
  default:
    return "segment";
  }
}

/// Reads a header table of `count` entries at `offset` into `entries`; "" or why it cannot.
template <typename Entry>
std::string readTable(int descriptor, uint64_t offset, uint64_t count, uint64_t elfBytes,
                      const char *kind, std::vector<Entry> &entries) {
  uint64_t bytes = count * sizeof(Entry);
  if (!inside(offset, bytes, elfBytes))
    return detail::concat("its ", kind, " header table [", offset, ", +", bytes,
                          ") ends past the file's ", elfBytes, " bytes (truncated?)");
  entries.resize(count);
  if (!readAt(descriptor, offset, entries.data(), bytes))
    return detail::concat("its ", kind, " header table cannot be read");
  return "";
}

/// The ELF header, program headers and section headers against the `elfBytes` the digest covers.
std::string findElfProblem(int descriptor, uint64_t elfBytes) {
  Elf64_Ehdr header;
  if (elfBytes < sizeof header || !readAt(descriptor, 0, &header, sizeof header))
    return detail::concat("the file (", elfBytes, " bytes before the trailer) is too small for an "
                          "ELF header");
  if (std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0)
    return "it is not an ELF file";
  if (header.e_ident[EI_CLASS] != ELFCLASS64 || header.e_ident[EI_DATA] != ELFDATA2LSB ||
      header.e_ident[EI_VERSION] != EV_CURRENT)
    return "it is not a 64-bit little-endian ELF file";
  if (header.e_type != ET_DYN || header.e_machine != EM_X86_64)
    return detail::concat("its ELF header says type ", header.e_type, ", machine ",
                          header.e_machine, ": not an x86-64 shared object");
  if (header.e_ehsize != sizeof(Elf64_Ehdr) || header.e_phentsize != sizeof(Elf64_Phdr) ||
      (header.e_shnum != 0 && header.e_shentsize != sizeof(Elf64_Shdr)))
    return "its ELF header gives header sizes other than ELF64's";
  if (header.e_phnum == 0 || header.e_phnum == PN_XNUM)
    return detail::concat("its ELF header gives ", header.e_phnum, " program headers");
  std::vector<Elf64_Phdr> segments;
  std::string problem =
      readTable(descriptor, header.e_phoff, header.e_phnum, elfBytes, "program", segments);
  if (!problem.empty())
    return problem;
  bool loads = false, dynamic = false;
  for (size_t i = 0; i < segments.size(); ++i) {
    const Elf64_Phdr &segment = segments[i];
    if (segment.p_type == PT_LOAD) {
      loads = true;
      if (segment.p_filesz > segment.p_memsz)
        return detail::concat("PT_LOAD segment ", i, " has more file bytes (", segment.p_filesz,
                              ") than memory bytes (", segment.p_memsz, ")");
      if (segment.p_align > 1 && (!std::has_single_bit(segment.p_align) ||
                                  (segment.p_offset - segment.p_vaddr) % segment.p_align != 0))
        return detail::concat("PT_LOAD segment ", i, " is misaligned (offset ", segment.p_offset,
                              ", address ", segment.p_vaddr, ", alignment ", segment.p_align, ")");
    }
    dynamic = dynamic || segment.p_type == PT_DYNAMIC;
    if (!inside(segment.p_offset, segment.p_filesz, elfBytes))
      return detail::concat(segmentTypeName(segment.p_type), " ", i, "'s file range [",
                            segment.p_offset, ", ", segment.p_offset + segment.p_filesz,
                            ") ends past the file's ", elfBytes, " bytes (truncated?)");
  }
  if (!loads || !dynamic)
    return "it has no loadable segment or no dynamic section";
  if (header.e_shnum > 0) {
    std::vector<Elf64_Shdr> sections;
    problem = readTable(descriptor, header.e_shoff, header.e_shnum, elfBytes, "section", sections);
    if (!problem.empty())
      return problem;
    for (size_t i = 0; i < sections.size(); ++i)
      if (sections[i].sh_type != SHT_NOBITS &&
          !inside(sections[i].sh_offset, sections[i].sh_size, elfBytes))
        return detail::concat("section ", i, "'s file range [", sections[i].sh_offset, ", ",
                              sections[i].sh_offset + sections[i].sh_size,
                              ") ends past the file's ", elfBytes, " bytes (truncated?)");
  }
  return "";
}

} // namespace

std::array<uint8_t, kDigestTrailerBytes> digestTrailer(uint64_t coveredBytes, uint64_t digest) {
  std::array<uint8_t, kDigestTrailerBytes> trailer{};
  std::memcpy(trailer.data(), &digest, 8);
  std::memcpy(trailer.data() + 8, &coveredBytes, 8);
  std::memcpy(trailer.data() + 16, &kDigestTrailerVersion, 4);
  std::memcpy(trailer.data() + 20, &kDigestAlgorithmXxh64, 4);
  std::memcpy(trailer.data() + 24, kDigestTrailerMagic, 8);
  return trailer;
}

void appendFileDigest(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    userError("cannot read '", path, "' to compute its digest");
  Xxh64 hash;
  std::vector<uint8_t> buffer(uint64_t(1) << 20);
  uint64_t covered = 0;
  while (in) {
    in.read(reinterpret_cast<char *>(buffer.data()), std::streamsize(buffer.size()));
    std::streamsize got = in.gcount();
    hash.update(std::span<const uint8_t>(buffer.data(), size_t(got)));
    covered += uint64_t(got);
  }
  if (in.bad())
    userError("cannot read '", path, "' to compute its digest");
  in.close();
  std::array<uint8_t, kDigestTrailerBytes> trailer = digestTrailer(covered, hash.digest());
  std::ofstream out(path, std::ios::binary | std::ios::app);
  out.write(reinterpret_cast<const char *>(trailer.data()), std::streamsize(trailer.size()));
  out.close();
  if (!out)
    userError("cannot append the digest to '", path, "'");
}

std::string findArtifactFileProblem(int descriptor, uint64_t fileBytes) {
  uint8_t magic[SELFMAG];
  if (fileBytes < SELFMAG || !readAt(descriptor, 0, magic, SELFMAG) ||
      std::memcmp(magic, ELFMAG, SELFMAG) != 0)
    return "it is not an ELF file";
  // The trailer decides how much of the file the ELF checks and the digest cover; a file without
  // one is still checked as ELF first, so a truncated file says which part it lost.
  uint8_t trailer[kDigestTrailerBytes];
  bool hasTrailer = fileBytes >= kDigestTrailerBytes &&
                    readAt(descriptor, fileBytes - kDigestTrailerBytes, trailer, sizeof trailer) &&
                    std::memcmp(trailer + 24, kDigestTrailerMagic, 8) == 0;
  uint64_t elfBytes = hasTrailer ? fileBytes - kDigestTrailerBytes : fileBytes;
  std::string problem = findElfProblem(descriptor, elfBytes);
  if (!problem.empty())
    return problem;
  if (!hasTrailer)
    return "it has no sinter digest trailer (truncated, or not written by `sinter compile` of "
           "this version)";
  uint64_t recorded = loadLittle64(trailer), covered = loadLittle64(trailer + 8);
  uint32_t version = loadLittle32(trailer + 16), algorithm = loadLittle32(trailer + 20);
  if (version != kDigestTrailerVersion || algorithm != kDigestAlgorithmXxh64)
    return detail::concat("its digest trailer has version ", version, " and algorithm ",
                          algorithm, " (this runtime reads version 1, algorithm 1 = XXH64)");
  if (covered != elfBytes)
    return detail::concat("its digest trailer covers ", covered, " bytes but ", elfBytes,
                          " precede it (truncated or extended)");
  Xxh64 hash;
  std::vector<uint8_t> buffer(std::min<uint64_t>(elfBytes, uint64_t(1) << 20));
  for (uint64_t offset = 0; offset < elfBytes;) {
    size_t chunk = size_t(std::min<uint64_t>(buffer.size(), elfBytes - offset));
    if (!readAt(descriptor, offset, buffer.data(), chunk))
      return detail::concat("it cannot be read at byte ", offset, " (did it shrink?)");
    hash.update(std::span<const uint8_t>(buffer.data(), chunk));
    offset += chunk;
  }
  uint64_t actual = hash.digest();
  if (actual != recorded)
    return detail::concat("its checksum does not match: XXH64 of its first ", elfBytes,
                          " bytes is ", hexText(actual), " but the trailer records ",
                          hexText(recorded), " (the file is damaged)");
  return "";
}

} // namespace sinter::package
