// The blob object, written byte by byte as an ELF64 x86-64 relocatable object (the System V
// gABI and its x86-64 supplement): the serialized manifest and the weights as one read-only
// section, and the 26 bytes of machine code of the function that returns them. Nothing in it
// depends on where or when it was made.
//
// It used to be an LLVM module emitted by the x86-64 backend. That copied the weights three
// times before they reached the file (into a uniqued ConstantDataArray, which also hashes every
// byte, into the assembler's fragment, into the stream's buffer): for ResNet-50's 97 MiB, about
// a second of the compile's write phase. Here the weights go from the manifest to the file in
// one write.
//
// Layout: ELF header | .text | .sinter_artifact (page-aligned) | .rela.text | .symtab | .strtab |
// .shstrtab | .note.GNU-stack (empty) | section header table.
#include "blob_object.h"

#include "elf_writing.h"

#include "sinter/package/manifest.h"
#include "sinter/support/error.h"

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

// Section indices, in file order.
enum Section : uint16_t { kNull, kText, kBlob, kRelaText, kSymtab, kStrtab, kShstrtab, kStack, kSections };
// Symbol indices: the null symbol, the blob's section symbol (local), the accessor (global).
enum Symbol : uint32_t { kNullSymbol, kBlobSymbol, kAccessorSymbol, kSymbols };

} // namespace

void emitBlobObject(std::span<const uint8_t> head, WeightPieces weights,
                    const std::string &path) {
  uint64_t blobBytes = head.size();
  for (std::span<const uint8_t> piece : weights)
    blobBytes += piece.size();
  uint64_t leaDisplacementOffset = 0;
  const std::vector<uint8_t> code = elf::accessorCode(blobBytes, leaDisplacementOffset);

  std::string sectionNames(1, '\0'), symbolNames(1, '\0');
  const uint32_t textName = addName(sectionNames, ".text");
  const uint32_t blobName = addName(sectionNames, ".sinter_artifact");
  const uint32_t relaName = addName(sectionNames, ".rela.text");
  const uint32_t symtabName = addName(sectionNames, ".symtab");
  const uint32_t strtabName = addName(sectionNames, ".strtab");
  const uint32_t shstrtabName = addName(sectionNames, ".shstrtab");
  const uint32_t stackName = addName(sectionNames, ".note.GNU-stack");
  const uint32_t accessorName = addName(symbolNames, "sinter_artifact");

  // The lea's displacement: blob - (address after the displacement) = blob + 0 - 4 from it.
  std::vector<uint8_t> relocations;
  Elf64_Rela rela{};
  rela.r_offset = leaDisplacementOffset;
  rela.r_info = ELF64_R_INFO(kBlobSymbol, R_X86_64_PC32);
  rela.r_addend = -4;
  appendBytes(relocations, rela);

  std::vector<uint8_t> symbols;
  Elf64_Sym symbol{};
  appendBytes(symbols, symbol); // kNullSymbol
  symbol.st_info = ELF64_ST_INFO(STB_LOCAL, STT_SECTION);
  symbol.st_shndx = kBlob;
  appendBytes(symbols, symbol); // kBlobSymbol
  symbol = {};
  symbol.st_name = accessorName;
  symbol.st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC);
  symbol.st_other = STV_DEFAULT;
  symbol.st_shndx = kText;
  symbol.st_size = code.size();
  appendBytes(symbols, symbol); // kAccessorSymbol

  // File offsets.
  const uint64_t textOffset = sizeof(Elf64_Ehdr);
  const uint64_t blobOffset = alignUp(textOffset + code.size(), kBlobAlignment);
  const uint64_t relaOffset = alignUp(blobOffset + blobBytes, 8);
  const uint64_t symtabOffset = relaOffset + relocations.size();
  const uint64_t strtabOffset = symtabOffset + symbols.size();
  const uint64_t shstrtabOffset = strtabOffset + symbolNames.size();
  const uint64_t sectionHeadersOffset = alignUp(shstrtabOffset + sectionNames.size(), 8);

  Elf64_Shdr sections[kSections] = {};
  auto describe = [&](Section index, uint32_t name, uint32_t type, uint64_t flags, uint64_t offset,
                      uint64_t size, uint64_t alignment) {
    Elf64_Shdr &header = sections[index];
    header.sh_name = name;
    header.sh_type = type;
    header.sh_flags = flags;
    header.sh_offset = offset;
    header.sh_size = size;
    header.sh_addralign = alignment;
    return &header;
  };
  describe(kText, textName, SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, textOffset, code.size(), 16);
  describe(kBlob, blobName, SHT_PROGBITS, SHF_ALLOC, blobOffset, blobBytes, kBlobAlignment);
  Elf64_Shdr *relaHeader =
      describe(kRelaText, relaName, SHT_RELA, SHF_INFO_LINK, relaOffset, relocations.size(), 8);
  relaHeader->sh_link = kSymtab;
  relaHeader->sh_info = kText;
  relaHeader->sh_entsize = sizeof(Elf64_Rela);
  Elf64_Shdr *symtabHeader = describe(kSymtab, symtabName, SHT_SYMTAB, 0, symtabOffset, symbols.size(), 8);
  symtabHeader->sh_link = kStrtab;
  symtabHeader->sh_info = kAccessorSymbol; // the first global symbol
  symtabHeader->sh_entsize = sizeof(Elf64_Sym);
  describe(kStrtab, strtabName, SHT_STRTAB, 0, strtabOffset, symbolNames.size(), 1);
  describe(kShstrtab, shstrtabName, SHT_STRTAB, 0, shstrtabOffset, sectionNames.size(), 1);
  describe(kStack, stackName, SHT_PROGBITS, 0, sectionHeadersOffset, 0, 1);

  const Elf64_Ehdr header = elf::fileHeader(ET_REL, kSections, kShstrtab, sectionHeadersOffset);

  elf::OutputFile out(path, /*hashing=*/false);
  out.write(&header, sizeof header);
  out.write(code);
  out.padTo(blobOffset);
  out.write(head);
  for (std::span<const uint8_t> piece : weights)
    out.write(piece);
  out.padTo(relaOffset);
  out.write(relocations);
  out.write(symbols);
  out.write(symbolNames.data(), symbolNames.size());
  out.write(sectionNames.data(), sectionNames.size());
  out.padTo(sectionHeadersOffset);
  out.write(sections, sizeof sections);
  out.close();
}

} // namespace sinter::package
