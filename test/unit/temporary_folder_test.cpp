// TemporaryFolder: a new private folder per object, in the first base that takes one, removed
// with its contents when it goes; nothing that was there before is touched.
#include "sinter/support/error.h"
#include "sinter/support/temporary_folder.h"
#include "temp_dir.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <optional>
#include <unistd.h>

namespace sinter {
namespace {

namespace fs = std::filesystem;

/// Sets an environment variable for the test's scope (unset: nullopt), restoring it after.
class ScopedEnvironment {
public:
  ScopedEnvironment(const char *name, std::optional<std::string> value) : name_(name) {
    if (const char *old = std::getenv(name))
      old_ = old;
    value ? setenv(name, value->c_str(), 1) : unsetenv(name);
  }
  ~ScopedEnvironment() { old_ ? setenv(name_, old_->c_str(), 1) : unsetenv(name_); }

private:
  const char *name_;
  std::optional<std::string> old_;
};

TEST(TemporaryFolder, IsNewPerObjectAndRemovedWithItsContents) {
  testing::TempDir base;
  fs::path first, second;
  {
    TemporaryFolder a("work", {base.path()}), b("work", {base.path()});
    first = a.path();
    second = b.path();
    EXPECT_NE(first, second);
    EXPECT_EQ(first.parent_path(), base.path());
    EXPECT_EQ(first.filename().string().rfind("work-", 0), 0u) << first;
    EXPECT_TRUE(fs::is_directory(first));
    std::ofstream(first / "file") << "x";
    fs::create_directories(first / "nested" / "deeper");
  }
  EXPECT_FALSE(fs::exists(first));
  EXPECT_FALSE(fs::exists(second));
}

TEST(TemporaryFolder, LeavesWhatWasThereBefore) {
  testing::TempDir base;
  // Folders named as an earlier design named them (stem-pid) and files of the user stay.
  fs::create_directories(base.path() / ("work-" + std::to_string(::getpid())));
  std::ofstream(base.path() / "work-keep") << "mine";
  { TemporaryFolder folder("work", {base.path()}); }
  EXPECT_TRUE(fs::is_directory(base.path() / ("work-" + std::to_string(::getpid()))));
  EXPECT_TRUE(fs::exists(base.path() / "work-keep"));
}

TEST(TemporaryFolder, FallsBackToTheNextBaseAndNamesTheLastWhenNoneTakesOne) {
  testing::TempDir base;
  fs::path missing = base.path() / "missing";
  TemporaryFolder folder("work", {missing, base.path()});
  EXPECT_EQ(folder.path().parent_path(), base.path());
  try {
    TemporaryFolder none("work", {base.path() / "missing", base.path() / "also-missing"});
    FAIL() << "a folder in a missing base";
  } catch (const UserError &error) {
    EXPECT_NE(std::string(error.what()).find("also-missing"), std::string::npos) << error.what();
  }
}

TEST(TemporaryFolder, GoesInTmpdirAndNamesAMissingOne) {
  testing::TempDir base;
  {
    ScopedEnvironment tmpdir("TMPDIR", base.path().string());
    EXPECT_EQ(temporaryDirectory(), base.path());
    TemporaryFolder folder("work");
    EXPECT_EQ(folder.path().parent_path(), base.path());
  }
  {
    ScopedEnvironment tmpdir("TMPDIR", (base.path() / "gone").string());
    try {
      temporaryDirectory();
      FAIL() << "a missing TMPDIR";
    } catch (const UserError &error) {
      std::string message = error.what();
      EXPECT_NE(message.find("TMPDIR"), std::string::npos) << message;
      EXPECT_NE(message.find("gone"), std::string::npos) << message;
    }
  }
  {
    ScopedEnvironment tmpdir("TMPDIR", std::nullopt);
    EXPECT_EQ(temporaryDirectory(), fs::path("/tmp"));
  }
}

} // namespace
} // namespace sinter
