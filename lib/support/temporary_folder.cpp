#include "sinter/support/temporary_folder.h"

#include "sinter/support/error.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

namespace sinter {

namespace fs = std::filesystem;

fs::path temporaryDirectory() {
  const char *chosen = std::getenv("TMPDIR");
  bool fromEnvironment = chosen && *chosen;
  fs::path folder = fromEnvironment ? fs::path(chosen) : fs::path("/tmp");
  std::error_code error;
  if (!fs::is_directory(folder, error))
    userError("no temporary folder: '", folder.string(), "'", fromEnvironment ? " (TMPDIR)" : "",
              error ? " cannot be read: " + error.message() : std::string(" is not a folder"));
  return folder;
}

TemporaryFolder::TemporaryFolder(const std::string &stem) : TemporaryFolder(stem, {temporaryDirectory()}) {}

TemporaryFolder::TemporaryFolder(const std::string &stem, const std::vector<fs::path> &bases) {
  SINTER_ASSERT(!bases.empty(), "a temporary folder needs somewhere to go");
  for (const fs::path &base : bases) {
    std::string pattern = (base / (stem + "-XXXXXX")).string();
    if (mkdtemp(pattern.data())) {
      path_ = pattern;
      return;
    }
    if (&base == &bases.back())
      userError("cannot create a temporary folder in '", base.string(), "': ", std::strerror(errno));
  }
}

TemporaryFolder::~TemporaryFolder() {
  std::error_code ignored;
  fs::remove_all(path_, ignored);
}

} // namespace sinter
