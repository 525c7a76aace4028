// A stand-in for libFuzzer's main, linked with a fuzz target by the normal build (any compiler, no
// coverage instrumentation): it calls LLVMFuzzerInitialize when the target has one, then
// LLVMFuzzerTestOneInput once on every file named on the command line or found under a folder
// named there. ctest's fuzz.replay.* entries run it over the seed corpora and the committed
// regression inputs (test/fuzz/regressions/), so a crash libFuzzer once found stays fixed in
// every build, without clang. A crash, a hang (ctest's timeout) or an exception is a failure.
//   fuzz_replay_TARGET PATH...
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
extern "C" __attribute__((weak)) int LLVMFuzzerInitialize(int *argc, char ***argv);

namespace fs = std::filesystem;

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s FILE_OR_FOLDER...\n", argv[0]);
    return 2;
  }
  std::vector<fs::path> inputs;
  for (int i = 1; i < argc; ++i) {
    fs::path path = argv[i];
    if (fs::is_directory(path)) {
      for (const auto &entry : fs::recursive_directory_iterator(path))
        if (entry.is_regular_file() && entry.path().filename() != "README.md")
          inputs.push_back(entry.path());
    } else if (fs::is_regular_file(path)) {
      inputs.push_back(path);
    } else {
      std::fprintf(stderr, "%s: no such file or folder\n", path.c_str());
      return 2;
    }
  }
  std::sort(inputs.begin(), inputs.end()); // the same order on every run
  if (LLVMFuzzerInitialize)
    LLVMFuzzerInitialize(&argc, &argv);
  for (const fs::path &path : inputs) {
    std::ifstream in(path, std::ios::binary);
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::fprintf(stderr, "replaying %s (%zu bytes)\n", path.c_str(), bytes.size());
    // A copy the size of the input, so reading past it is a read past the allocation (as under
    // libFuzzer), not into a larger buffer.
    std::vector<uint8_t> exact(bytes);
    LLVMFuzzerTestOneInput(exact.data(), exact.size());
  }
  std::printf("%zu inputs replayed, no crash\n", inputs.size());
  return 0;
}
