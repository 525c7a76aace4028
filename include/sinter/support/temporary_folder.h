// Private folders for work files, removed with everything in them when the object goes: the one
// way sinter makes temporary folders (the compile's work folder, the artifact writer's scratch
// object, verify's truth and bisection files).
//
// A folder is made by mkdtemp, so it is new and this process's alone: a file or folder that was
// there before, under any name, is never reused, emptied or removed.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace sinter {

/// The system's temporary folder: $TMPDIR when it is set and not empty, else /tmp. UserError
/// naming it (and TMPDIR, when that chose it) when it is not an existing folder.
std::filesystem::path temporaryDirectory();

class TemporaryFolder {
public:
  /// A new folder `<stem>-XXXXXX` in temporaryDirectory().
  explicit TemporaryFolder(const std::string &stem);
  /// A new folder `<stem>-XXXXXX` in the first of `bases` that takes one (a base may refuse:
  /// full, read-only, missing); UserError naming the last base and why when none does.
  TemporaryFolder(const std::string &stem, const std::vector<std::filesystem::path> &bases);
  ~TemporaryFolder();
  TemporaryFolder(const TemporaryFolder &) = delete;
  TemporaryFolder &operator=(const TemporaryFolder &) = delete;

  const std::filesystem::path &path() const { return path_; }

private:
  std::filesystem::path path_;
};

} // namespace sinter
