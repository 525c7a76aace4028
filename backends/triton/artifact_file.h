// A check of model.so's ELF layout before it reaches the dynamic loader: a file cut short (a
// partial copy into the model repository) would otherwise be mapped past its end by dlopen, and
// the first touch of a missing page kills the whole server with SIGBUS. The runtime is to check
// the layout and a digest of the whole file itself before dlopen (docs/serving.md); until it
// does, the backend checks the layout, so a bad file fails that model's load only.
#pragma once

#include <string>

namespace sinter::triton {

/// Fails (UserError, with a message about the file that does not repeat its path) when `path` is
/// not a 64-bit little-endian ELF file whose program headers, loadable segments and section headers
/// all lie inside the file. A missing file passes: the runtime reports it.
void checkArtifactLayout(const std::string &path);

} // namespace sinter::triton
