// LLD as a library. lldMain runs the ELF driver under crash recovery and resets LLD's global
// state afterwards, so it can run again; it is not thread-safe, hence the mutex. Everything that
// would make the output depend on the machine or the moment is switched off: no build-id, no
// .symtab (whose STT_FILE entries would carry source paths), no soname.
#include "linker.h"

#include "sinter/support/error.h"

#include <lld/Common/Driver.h>
#include <llvm/Support/raw_ostream.h>

#include <filesystem>
#include <fstream>
#include <mutex>

LLD_HAS_DRIVER(elf)

namespace sinter::package {
namespace {

std::mutex linkerMutex;
bool linkerBroken = false; // set when LLD says its state can no longer be trusted

/// The C library and libm of this machine (real ELF files, not the linker scripts beside them).
std::vector<std::string> findSystemLibraries() {
  static const char *directories[] = {"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu",
                                      "/lib64", "/usr/lib64"};
  for (const char *directory : directories) {
    std::filesystem::path libm = std::filesystem::path(directory) / "libm.so.6";
    std::filesystem::path libc = std::filesystem::path(directory) / "libc.so.6";
    std::error_code error;
    if (std::filesystem::is_regular_file(libm, error) &&
        std::filesystem::is_regular_file(libc, error))
      return {libm.string(), libc.string()};
  }
  return {};
}

void writeVersionScript(const LinkRequest &request) {
  std::ofstream script(request.versionScriptPath, std::ios::binary | std::ios::trunc);
  script << "{\n  global:\n";
  for (const std::string &name : request.exports)
    script << "    " << name << ";\n";
  script << "  local: *;\n};\n";
  script.close();
  if (!script)
    userError("cannot write '", request.versionScriptPath, "'");
}

} // namespace

void linkSharedObject(const LinkRequest &request) {
  writeVersionScript(request);
  std::vector<std::string> args = {
      "ld.lld", "-shared", "-m", "elf_x86_64", "--build-id=none", "--hash-style=both",
      "--eh-frame-hdr", "-z", "noexecstack", "-z", "relro", "-z", "now", "--strip-all",
      "--version-script=" + request.versionScriptPath, "-o", request.output};
  args.insert(args.end(), request.objects.begin(), request.objects.end());
  if (request.linkLibc) {
    std::vector<std::string> libraries = findSystemLibraries();
    if (!libraries.empty()) {
      // Every undefined symbol must then come from libc or libm; only those used are NEEDED.
      args.insert(args.end(), {"-z", "defs", "--as-needed"});
      args.insert(args.end(), libraries.begin(), libraries.end());
    }
  }
  std::vector<const char *> argv;
  for (const std::string &arg : args)
    argv.push_back(arg.c_str());

  std::string messages;
  llvm::raw_string_ostream messageStream(messages);
  lld::Result result;
  {
    std::lock_guard<std::mutex> lock(linkerMutex);
    SINTER_ASSERT(!linkerBroken, "an earlier link crashed LLD; restart the process");
    result = lld::lldMain(argv, messageStream, messageStream, {{lld::Gnu, &lld::elf::link}});
    if (!result.canRunAgain)
      linkerBroken = true;
  }
  messageStream.flush();
  if (result.retCode != 0)
    userError("linking failed:\n", messages);
}

} // namespace sinter::package
