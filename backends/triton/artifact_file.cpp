#include "artifact_file.h"

#include "sinter/support/error.h"

#include <elf.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <sys/stat.h>
#include <vector>

namespace sinter::triton {

void checkArtifactLayout(const std::string &path) {
  struct stat info;
  if (stat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode))
    return; // missing or not a file: sinter_model_load says so
  uint64_t size = static_cast<uint64_t>(info.st_size);
  std::unique_ptr<FILE, int (*)(FILE *)> file(std::fopen(path.c_str(), "rb"), std::fclose);
  if (!file)
    return;
  Elf64_Ehdr header;
  if (std::fread(&header, sizeof header, 1, file.get()) != 1 ||
      std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 || header.e_ident[EI_CLASS] != ELFCLASS64 ||
      header.e_ident[EI_DATA] != ELFDATA2LSB)
    userError("it is not a sinter artifact (not a 64-bit ELF shared object)");
  auto within = [&](uint64_t offset, uint64_t count, uint64_t entry) {
    return entry != 0 && count <= size / entry && offset <= size && count * entry <= size - offset;
  };
  if (header.e_phentsize != sizeof(Elf64_Phdr) ||
      !within(header.e_phoff, header.e_phnum, sizeof(Elf64_Phdr)))
    userError("the file is truncated or corrupt: its program headers lie outside its ", size,
              " bytes");
  if (header.e_shnum > 0 && !within(header.e_shoff, header.e_shnum, header.e_shentsize))
    userError("the file is truncated or corrupt: its section headers lie outside its ", size,
              " bytes");
  std::vector<Elf64_Phdr> segments(header.e_phnum);
  if (std::fseek(file.get(), static_cast<long>(header.e_phoff), SEEK_SET) != 0 ||
      std::fread(segments.data(), sizeof(Elf64_Phdr), segments.size(), file.get()) !=
          segments.size())
    userError("the file could not be read");
  for (const Elf64_Phdr &segment : segments)
    if (segment.p_type == PT_LOAD &&
        (segment.p_offset > size || segment.p_filesz > size - segment.p_offset))
      userError("the file is truncated: a loadable segment ends at byte ",
                segment.p_offset + segment.p_filesz, " but the file has ", size,
                " (an incomplete copy?); copy it again");
}

} // namespace sinter::triton
