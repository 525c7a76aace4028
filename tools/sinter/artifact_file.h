// Reading a compiled artifact's manifest without loading it: `sinter inspect` maps model.so
// read-only, finds the `.sinter_artifact` section through the ELF section headers and parses the
// manifest from it. No code of the file runs (dlopen would run its initialisers), and artifacts
// the host cannot execute (another CPU level) can still be inspected.
#pragma once

#include "sinter/package/format.h"

#include <cstdint>
#include <memory>
#include <string>

namespace sinter::cli {

/// A mapped artifact and its parsed manifest; `view.weights` points into the mapping.
class ArtifactFile {
public:
  ~ArtifactFile();
  ArtifactFile(const ArtifactFile &) = delete;
  ArtifactFile &operator=(const ArtifactFile &) = delete;

  const package::ArtifactView &view() const { return view_; }
  const package::Manifest &manifest() const { return view_.manifest; }
  /// Size of the whole file.
  uint64_t fileBytes() const { return fileBytes_; }
  /// Bytes of the serialized manifest (header, metadata, padding, weights).
  uint64_t blobBytes() const { return blobBytes_; }

private:
  friend std::unique_ptr<ArtifactFile> readArtifactFile(const std::string &path);
  ArtifactFile() = default;

  void *mapping_ = nullptr;
  uint64_t fileBytes_ = 0;
  uint64_t blobBytes_ = 0;
  package::ArtifactView view_;
};

/// Maps `path` and parses its manifest (checking both checksums). Throws UserError when the file
/// is not a 64-bit little-endian ELF, has no `.sinter_artifact` section, or its manifest is
/// truncated, corrupt or of another ABI version.
std::unique_ptr<ArtifactFile> readArtifactFile(const std::string &path);

} // namespace sinter::cli
