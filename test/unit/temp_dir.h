// A fresh folder per test under the system's temp folder, removed when the test ends.
#pragma once

#include "sinter/support/temporary_folder.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace sinter::testing {

namespace fs = std::filesystem;

/// A fresh folder under the system's temp folder, removed when the test ends.
class TempDir {
public:
  TempDir() : folder_(stem()) {}
  const fs::path &path() const { return folder_.path(); }
  std::string file(const std::string &name) const { return (path() / name).string(); }
  std::string write(const std::string &name, const std::string &bytes) const {
    std::string full = file(name);
    fs::create_directories(fs::path(full).parent_path());
    std::ofstream(full, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
    return full;
  }

private:
  static std::string stem() {
    const auto *test = ::testing::UnitTest::GetInstance()->current_test_info();
    return "sinter_test_" + (test ? std::string(test->name()) : std::string("test"));
  }
  TemporaryFolder folder_;
};

} // namespace sinter::testing
