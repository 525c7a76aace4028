// model.so without a linker, for artifacts that hold no CPU kernels: an ELF64 x86-64 shared
// object (the System V gABI, its x86-64 supplement, and the GNU hash section as glibc reads it)
// whose only contents are the blob and the 26 bytes of `sinter_artifact`.
//
// Linking blob_object.cpp's object with LLD cost ResNet-50's warm compile about 0.3 of its 0.95
// seconds: the weights written to the scratch object, read back and copied into LLD's output
// buffer, then read a third time for the digest. Here they are written once, from where they are,
// and hashed on the way.
//
// File layout (addresses equal file offsets in the first segment; the later segments sit one and
// two pages higher in memory than in the file, as LLD places them, so that the file has no padding
// and no page is both writable and executable):
//
//   ELF header | program headers | .dynsym | .gnu.hash | .hash | .dynstr      PT_LOAD R
//   .sinter_artifact (4096-aligned)                                           (same PT_LOAD)
//   .text                                                                     PT_LOAD R+X
//   .dynamic                                                                  PT_LOAD R+W, RELRO
//   .shstrtab | section headers | digest trailer                              not loaded
#include "shared_object.h"

#include "elf_writing.h"

#include "sinter/package/file_digest.h"

#include <array>
#include <cstdint>
#include <cstring>
#include <elf.h>
#include <string>
#include <vector>

namespace sinter::package {
namespace {

using elf::addName;
using elf::alignUp;
using elf::appendBytes;
using elf::kBlobAlignment;

constexpr uint64_t kPage = 4096;
constexpr char kAccessorName[] = "sinter_artifact";

// Section indices, in file order.
enum Section : uint16_t {
  kNull, kDynsym, kGnuHash, kHash, kDynstr, kBlob, kText, kDynamic, kShstrtab, kSections
};
// Program headers, in order.
enum Segment { kPhdr, kLoadRead, kLoadCode, kLoadData, kDynamicSegment, kRelro, kStack, kSegments };

/// The GNU hash of a symbol name (h = h * 33 + c from 5381, 32 bits).
uint32_t gnuHash(const char *name) {
  uint32_t hash = 5381;
  for (; *name; ++name)
    hash = hash * 33 + uint8_t(*name);
  return hash;
}

/// .gnu.hash for the one exported symbol (dynamic symbol 1): one bucket, a one-word Bloom filter.
std::vector<uint8_t> gnuHashSection(const char *name) {
  const uint32_t hash = gnuHash(name);
  constexpr uint32_t kBloomShift = 6;
  std::vector<uint8_t> out;
  appendBytes(out, uint32_t(1));           // buckets
  appendBytes(out, uint32_t(1));           // the first symbol the table covers
  appendBytes(out, uint32_t(1));           // Bloom words (64 bits each in ELF64)
  appendBytes(out, kBloomShift);
  appendBytes(out, (uint64_t(1) << (hash % 64)) | (uint64_t(1) << ((hash >> kBloomShift) % 64)));
  appendBytes(out, uint32_t(1));           // bucket 0 starts at symbol 1
  appendBytes(out, uint32_t(hash | 1));    // its chain: the hash, low bit set = the chain's end
  return out;
}

/// .hash (System V) for dynamic symbols 0 and 1: one bucket holding symbol 1, chains ending there.
std::vector<uint8_t> sysvHashSection() {
  std::vector<uint8_t> out;
  for (uint32_t word : {1u /* buckets */, 2u /* chains = symbols */, 1u /* bucket 0 */,
                        0u /* chain of 0 */, 0u /* chain of 1 */})
    appendBytes(out, word);
  return out;
}

} // namespace

void writeBlobSharedObject(std::span<const uint8_t> head, WeightPieces weights,
                           const std::string &path) {
  uint64_t blobBytes = head.size();
  for (std::span<const uint8_t> piece : weights)
    blobBytes += piece.size();
  uint64_t leaDisplacementOffset = 0;
  std::vector<uint8_t> code = elf::accessorCode(blobBytes, leaDisplacementOffset);

  std::string sectionNames(1, '\0'), dynamicNames(1, '\0');
  const uint32_t dynsymName = addName(sectionNames, ".dynsym");
  const uint32_t gnuHashName = addName(sectionNames, ".gnu.hash");
  const uint32_t hashName = addName(sectionNames, ".hash");
  const uint32_t dynstrName = addName(sectionNames, ".dynstr");
  const uint32_t blobName = addName(sectionNames, ".sinter_artifact");
  const uint32_t textName = addName(sectionNames, ".text");
  const uint32_t dynamicName = addName(sectionNames, ".dynamic");
  const uint32_t shstrtabName = addName(sectionNames, ".shstrtab");
  const uint32_t accessorName = addName(dynamicNames, kAccessorName);

  const std::vector<uint8_t> gnuHashBytes = gnuHashSection(kAccessorName);
  const std::vector<uint8_t> hashBytes = sysvHashSection();
  constexpr uint64_t kDynamicEntries = 9;

  // File offsets, and the distance from each segment's file offset to its address.
  const uint64_t phdrOffset = sizeof(Elf64_Ehdr);
  const uint64_t dynsymOffset = alignUp(phdrOffset + kSegments * sizeof(Elf64_Phdr), 8);
  const uint64_t gnuHashOffset = alignUp(dynsymOffset + 2 * sizeof(Elf64_Sym), 8);
  const uint64_t hashOffset = alignUp(gnuHashOffset + gnuHashBytes.size(), 4);
  const uint64_t dynstrOffset = hashOffset + hashBytes.size();
  const uint64_t blobOffset = alignUp(dynstrOffset + dynamicNames.size(), kBlobAlignment);
  const uint64_t readEnd = blobOffset + blobBytes;
  const uint64_t textOffset = alignUp(readEnd, 16);
  const uint64_t textShift = kPage; // .text's address - its offset
  const uint64_t dynamicOffset = alignUp(textOffset + code.size(), 8);
  const uint64_t dynamicShift = 2 * kPage;
  const uint64_t dynamicBytes = kDynamicEntries * sizeof(Elf64_Dyn);
  const uint64_t shstrtabOffset = dynamicOffset + dynamicBytes;
  const uint64_t sectionHeadersOffset = alignUp(shstrtabOffset + sectionNames.size(), 8);
  const uint64_t textAddress = textOffset + textShift;
  const uint64_t dynamicAddress = dynamicOffset + dynamicShift;
  // RELRO is made read-only in whole pages after loading, so its segment runs to a page's end.
  const uint64_t dataMemoryBytes = alignUp(dynamicAddress + dynamicBytes, kPage) - dynamicAddress;

  // The lea: blob - (address of the byte after the displacement).
  const int64_t displacement =
      int64_t(blobOffset) - int64_t(textAddress + leaDisplacementOffset + 4);
  SINTER_ASSERT(displacement >= INT32_MIN, "the blob is too large for a 32-bit displacement");
  const int32_t displacement32 = int32_t(displacement);
  std::memcpy(code.data() + leaDisplacementOffset, &displacement32, 4);

  std::vector<uint8_t> symbols;
  Elf64_Sym symbol{};
  appendBytes(symbols, symbol); // the null symbol
  symbol.st_name = accessorName;
  symbol.st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC);
  symbol.st_other = STV_DEFAULT;
  symbol.st_shndx = kText;
  symbol.st_value = textAddress;
  symbol.st_size = code.size();
  appendBytes(symbols, symbol);

  std::vector<uint8_t> dynamic;
  auto entry = [&](int64_t tag, uint64_t value) {
    Elf64_Dyn item{};
    item.d_tag = tag;
    item.d_un.d_val = value;
    appendBytes(dynamic, item);
  };
  entry(DT_FLAGS, DF_BIND_NOW);
  entry(DT_FLAGS_1, DF_1_NOW);
  entry(DT_SYMTAB, dynsymOffset);
  entry(DT_SYMENT, sizeof(Elf64_Sym));
  entry(DT_STRTAB, dynstrOffset);
  entry(DT_STRSZ, dynamicNames.size());
  entry(DT_GNU_HASH, gnuHashOffset);
  entry(DT_HASH, hashOffset);
  entry(DT_NULL, 0);
  SINTER_ASSERT(dynamic.size() == dynamicBytes, "the dynamic section has ", dynamic.size(), " bytes");

  Elf64_Phdr segments[kSegments] = {};
  auto place = [&](Segment index, uint32_t type, uint32_t flags, uint64_t offset, uint64_t address,
                   uint64_t fileBytes, uint64_t memoryBytes, uint64_t alignment) {
    Elf64_Phdr &segment = segments[index];
    segment.p_type = type;
    segment.p_flags = flags;
    segment.p_offset = offset;
    segment.p_vaddr = segment.p_paddr = address;
    segment.p_filesz = fileBytes;
    segment.p_memsz = memoryBytes;
    segment.p_align = alignment;
  };
  const uint64_t phdrBytes = kSegments * sizeof(Elf64_Phdr);
  place(kPhdr, PT_PHDR, PF_R, phdrOffset, phdrOffset, phdrBytes, phdrBytes, 8);
  place(kLoadRead, PT_LOAD, PF_R, 0, 0, readEnd, readEnd, kPage);
  place(kLoadCode, PT_LOAD, PF_R | PF_X, textOffset, textAddress, code.size(), code.size(), kPage);
  place(kLoadData, PT_LOAD, PF_R | PF_W, dynamicOffset, dynamicAddress, dynamicBytes,
        dataMemoryBytes, kPage);
  place(kDynamicSegment, PT_DYNAMIC, PF_R | PF_W, dynamicOffset, dynamicAddress, dynamicBytes,
        dynamicBytes, 8);
  place(kRelro, PT_GNU_RELRO, PF_R, dynamicOffset, dynamicAddress, dynamicBytes, dataMemoryBytes, 1);
  place(kStack, PT_GNU_STACK, PF_R | PF_W, 0, 0, 0, 0, 0);

  Elf64_Shdr sections[kSections] = {};
  auto describe = [&](Section index, uint32_t name, uint32_t type, uint64_t flags, uint64_t offset,
                      uint64_t address, uint64_t size, uint64_t alignment, uint32_t link,
                      uint32_t info, uint64_t entrySize) {
    Elf64_Shdr &header = sections[index];
    header.sh_name = name;
    header.sh_type = type;
    header.sh_flags = flags;
    header.sh_offset = offset;
    header.sh_addr = address;
    header.sh_size = size;
    header.sh_addralign = alignment;
    header.sh_link = link;
    header.sh_info = info;
    header.sh_entsize = entrySize;
  };
  describe(kDynsym, dynsymName, SHT_DYNSYM, SHF_ALLOC, dynsymOffset, dynsymOffset, symbols.size(),
           8, kDynstr, /*first global=*/1, sizeof(Elf64_Sym));
  describe(kGnuHash, gnuHashName, SHT_GNU_HASH, SHF_ALLOC, gnuHashOffset, gnuHashOffset,
           gnuHashBytes.size(), 8, kDynsym, 0, 0);
  describe(kHash, hashName, SHT_HASH, SHF_ALLOC, hashOffset, hashOffset, hashBytes.size(), 4,
           kDynsym, 0, 4);
  describe(kDynstr, dynstrName, SHT_STRTAB, SHF_ALLOC, dynstrOffset, dynstrOffset,
           dynamicNames.size(), 1, 0, 0, 0);
  describe(kBlob, blobName, SHT_PROGBITS, SHF_ALLOC, blobOffset, blobOffset, blobBytes,
           kBlobAlignment, 0, 0, 0);
  describe(kText, textName, SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, textOffset, textAddress,
           code.size(), 16, 0, 0, 0);
  describe(kDynamic, dynamicName, SHT_DYNAMIC, SHF_ALLOC | SHF_WRITE, dynamicOffset,
           dynamicAddress, dynamicBytes, 8, kDynstr, 0, sizeof(Elf64_Dyn));
  describe(kShstrtab, shstrtabName, SHT_STRTAB, 0, shstrtabOffset, 0, sectionNames.size(), 1, 0, 0,
           0);

  Elf64_Ehdr header = elf::fileHeader(ET_DYN, kSections, kShstrtab, sectionHeadersOffset);
  header.e_phoff = phdrOffset;
  header.e_phentsize = sizeof(Elf64_Phdr);
  header.e_phnum = kSegments;

  elf::OutputFile out(path, /*hashing=*/true);
  out.write(&header, sizeof header);
  out.write(segments, sizeof segments);
  out.padTo(dynsymOffset);
  out.write(symbols);
  out.padTo(gnuHashOffset);
  out.write(gnuHashBytes);
  out.padTo(hashOffset);
  out.write(hashBytes);
  out.write(dynamicNames);
  out.padTo(blobOffset);
  out.write(head);
  for (std::span<const uint8_t> piece : weights)
    out.write(piece);
  out.padTo(textOffset);
  out.write(code);
  out.padTo(dynamicOffset);
  out.write(dynamic);
  out.write(sectionNames);
  out.padTo(sectionHeadersOffset);
  out.write(sections, sizeof sections);
  const uint64_t covered = out.offset();
  const std::array<uint8_t, kDigestTrailerBytes> trailer = digestTrailer(covered, out.digest());
  out.write(trailer.data(), trailer.size());
  out.close();
}

} // namespace sinter::package
