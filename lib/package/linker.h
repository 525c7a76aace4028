// Links model.so in-process with LLD (writer.cpp decides what goes in).
#pragma once

#include <string>
#include <vector>

namespace sinter::package {

struct LinkRequest {
  std::string output;                   ///< the shared object to write
  std::vector<std::string> objects;     ///< relocatable objects, in link order
  /// The only symbols left in the dynamic symbol table; each must be defined by the objects (LLD
  /// rejects a version script that names an undefined symbol).
  std::vector<std::string> exports;
  bool linkLibc = false;                ///< resolve against libc.so.6 and libm.so.6 (as needed)
  std::string versionScriptPath;        ///< where to write the export list (a scratch file)
};

/// Runs LLD's ELF driver as a library (one link at a time: LLD keeps global state). The output
/// has no build-id and no symbol table beyond the dynamic one, so it depends on its inputs only.
/// Throws UserError with LLD's messages when the link fails.
void linkSharedObject(const LinkRequest &request);

} // namespace sinter::package
