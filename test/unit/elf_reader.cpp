#include "elf_reader.h"

#include <algorithm>
#include <cstring>
#include <elf.h>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace sinter::testing {
namespace {

template <typename T> T readAt(const std::vector<char> &file, uint64_t offset) {
  if (offset > file.size() || sizeof(T) > file.size() - offset)
    throw std::runtime_error("ELF structure past the end of the file");
  T value;
  std::memcpy(&value, file.data() + offset, sizeof(T));
  return value;
}

std::string stringAt(const std::vector<char> &file, const Elf64_Shdr &table, uint64_t index) {
  if (index >= table.sh_size || table.sh_offset + table.sh_size > file.size())
    throw std::runtime_error("ELF string index out of range");
  const char *begin = file.data() + table.sh_offset + index;
  return std::string(begin, strnlen(begin, table.sh_size - index));
}

} // namespace

ElfDynamicInfo readElfDynamicInfo(const std::string &path) {
  std::ifstream stream(path, std::ios::binary);
  if (!stream)
    throw std::runtime_error("cannot open " + path);
  std::vector<char> file((std::istreambuf_iterator<char>(stream)), std::istreambuf_iterator<char>());
  auto header = readAt<Elf64_Ehdr>(file, 0);
  if (std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 || header.e_ident[EI_CLASS] != ELFCLASS64 ||
      header.e_ident[EI_DATA] != ELFDATA2LSB)
    throw std::runtime_error(path + " is not a little-endian ELF64 file");
  std::vector<Elf64_Shdr> sections;
  for (uint16_t i = 0; i < header.e_shnum; ++i)
    sections.push_back(readAt<Elf64_Shdr>(file, header.e_shoff + uint64_t(i) * header.e_shentsize));
  auto linked = [&](const Elf64_Shdr &section) -> const Elf64_Shdr & {
    if (section.sh_link >= sections.size())
      throw std::runtime_error("ELF section link out of range");
    return sections[section.sh_link];
  };

  ElfDynamicInfo info;
  for (const Elf64_Shdr &section : sections) {
    if (section.sh_type == SHT_DYNAMIC) {
      for (uint64_t at = 0; at + sizeof(Elf64_Dyn) <= section.sh_size; at += sizeof(Elf64_Dyn)) {
        auto entry = readAt<Elf64_Dyn>(file, section.sh_offset + at);
        if (entry.d_tag == DT_NULL)
          break;
        if (entry.d_tag == DT_NEEDED)
          info.needed.push_back(stringAt(file, linked(section), entry.d_un.d_val));
      }
    } else if (section.sh_type == SHT_DYNSYM) {
      for (uint64_t at = sizeof(Elf64_Sym); at + sizeof(Elf64_Sym) <= section.sh_size;
           at += sizeof(Elf64_Sym)) {
        auto symbol = readAt<Elf64_Sym>(file, section.sh_offset + at);
        unsigned binding = ELF64_ST_BIND(symbol.st_info);
        if (symbol.st_shndx != SHN_UNDEF && (binding == STB_GLOBAL || binding == STB_WEAK))
          info.exported.push_back(stringAt(file, linked(section), symbol.st_name));
      }
    }
  }
  std::sort(info.exported.begin(), info.exported.end());
  return info;
}

} // namespace sinter::testing
