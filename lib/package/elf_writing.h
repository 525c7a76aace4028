// What the two ELF writers of lib/package share (blob_object.cpp, the relocatable object LLD links
// with CPU kernels; shared_object.cpp, the whole model.so when there are none): the machine code
// of `sinter_artifact`, string tables, and a file written in order that can hash what it writes.
#pragma once

#include "sinter/package/file_digest.h"
#include "sinter/package/manifest.h"
#include "sinter/support/error.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <elf.h>
#include <span>
#include <string>
#include <vector>

namespace sinter::package::elf {

/// The blob is page-aligned, which keeps the weights (at a multiple of kWeightAlignment inside
/// it) aligned in memory once model.so is mapped.
constexpr uint64_t kBlobAlignment = 4096;
static_assert(kBlobAlignment % kWeightAlignment == 0);

constexpr uint64_t alignUp(uint64_t value, uint64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

/// `const void *sinter_artifact(uint64_t *size)`, 26 bytes:
///      test   %rdi, %rdi
///      je     1f
///      movabs $BYTES, %rax
///      mov    %rax, (%rdi)
///   1: lea    blob(%rip), %rax
///      ret
/// The lea's 32-bit displacement is left zero at `leaDisplacementOffset`: a relocation fills it
/// in an object file, the writer of a shared object stores it directly.
inline std::vector<uint8_t> accessorCode(uint64_t blobBytes, uint64_t &leaDisplacementOffset) {
  std::vector<uint8_t> code = {0x48, 0x85, 0xff, // test %rdi, %rdi
                               0x74, 0x0d,       // je +13 (past movabs and mov)
                               0x48, 0xb8};      // movabs $imm64, %rax
  for (int i = 0; i < 8; ++i)
    code.push_back(uint8_t(blobBytes >> (8 * i)));
  code.insert(code.end(), {0x48, 0x89, 0x07,  // mov %rax, (%rdi)
                           0x48, 0x8d, 0x05}); // lea disp32(%rip), %rax
  leaDisplacementOffset = code.size();
  code.insert(code.end(), {0, 0, 0, 0, 0xc3}); // disp32, ret
  return code;
}

/// The ELF64 little-endian x86-64 file header of a `type` file (ET_REL, ET_DYN) with `sections`
/// section headers at `sectionHeadersOffset`, section `names` holding their names; no program
/// headers (a shared object's writer sets e_phoff and e_phnum).
inline Elf64_Ehdr fileHeader(uint16_t type, uint16_t sections, uint16_t names,
                             uint64_t sectionHeadersOffset) {
  Elf64_Ehdr header{};
  std::memcpy(header.e_ident, ELFMAG, SELFMAG);
  header.e_ident[EI_CLASS] = ELFCLASS64;
  header.e_ident[EI_DATA] = ELFDATA2LSB;
  header.e_ident[EI_VERSION] = EV_CURRENT;
  header.e_ident[EI_OSABI] = ELFOSABI_NONE;
  header.e_type = type;
  header.e_machine = EM_X86_64;
  header.e_version = EV_CURRENT;
  header.e_shoff = sectionHeadersOffset;
  header.e_ehsize = sizeof(Elf64_Ehdr);
  header.e_shentsize = sizeof(Elf64_Shdr);
  header.e_shnum = sections;
  header.e_shstrndx = names;
  return header;
}

/// Appends a name to a string table and returns its offset.
inline uint32_t addName(std::string &table, const char *name) {
  uint32_t offset = uint32_t(table.size());
  table += name;
  table.push_back('\0');
  return offset;
}

template <typename T> void appendBytes(std::vector<uint8_t> &out, const T &value) {
  const auto *bytes = reinterpret_cast<const uint8_t *>(&value);
  out.insert(out.end(), bytes, bytes + sizeof value);
}

/// A file written front to back; with `hashing`, XXH64 of every byte written so far.
class OutputFile {
public:
  OutputFile(const std::string &path, bool hashing)
      : path_(path), file_(std::fopen(path.c_str(), "wb")), hashing_(hashing) {
    if (!file_)
      userError("cannot write '", path, "': ", std::strerror(errno));
  }
  ~OutputFile() {
    if (file_)
      std::fclose(file_);
  }
  OutputFile(const OutputFile &) = delete;
  OutputFile &operator=(const OutputFile &) = delete;

  void write(const void *bytes, uint64_t size) {
    if (size == 0)
      return;
    if (std::fwrite(bytes, 1, size, file_) != size)
      userError("cannot write '", path_, "': ", std::strerror(errno));
    if (hashing_)
      hash_.update(std::span<const uint8_t>(static_cast<const uint8_t *>(bytes), size));
    offset_ += size;
  }
  void write(std::span<const uint8_t> bytes) { write(bytes.data(), bytes.size()); }
  void write(const std::string &bytes) { write(bytes.data(), bytes.size()); }
  void padTo(uint64_t offset) {
    static const uint8_t zeros[4096] = {};
    SINTER_ASSERT(offset_ <= offset, "the ELF writer went past offset ", offset);
    while (offset_ < offset)
      write(zeros, std::min<uint64_t>(offset - offset_, sizeof zeros));
  }
  uint64_t offset() const { return offset_; }
  uint64_t digest() const { return hash_.digest(); }
  void close() {
    std::FILE *file = file_;
    file_ = nullptr;
    if (std::fclose(file) != 0)
      userError("cannot write '", path_, "': ", std::strerror(errno));
  }

private:
  std::string path_;
  std::FILE *file_;
  bool hashing_;
  Xxh64 hash_;
  uint64_t offset_ = 0;
};

} // namespace sinter::package::elf
