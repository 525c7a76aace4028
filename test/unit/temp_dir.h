// A fresh folder per test under the system's temp folder, removed when the test ends.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

namespace sinter::testing {

namespace fs = std::filesystem;

/// A fresh folder under the system's temp folder, removed when the test ends.
class TempDir {
public:
  TempDir() {
    static int counter = 0;
    const auto *test = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = fs::temp_directory_path() /
            ("sinter_test_" + std::to_string(getpid()) + "_" + std::to_string(counter++) + "_" +
             (test ? std::string(test->name()) : std::string("test")));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  const fs::path &path() const { return path_; }
  std::string file(const std::string &name) const { return (path_ / name).string(); }
  std::string write(const std::string &name, const std::string &bytes) const {
    std::string full = file(name);
    fs::create_directories(fs::path(full).parent_path());
    std::ofstream(full, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
    return full;
  }

private:
  fs::path path_;
};

} // namespace sinter::testing
