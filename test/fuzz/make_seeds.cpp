// Writes the fuzz seed corpora from models/: the small ONNX models as they are, each one's IR in
// text form (for the parser), and .npy / .npz files of its constants (for the readers; the first
// byte of each is the target's mode byte). Usage: sinter_fuzz_seeds MODELS_DIR OUTPUT_DIR.
#include "sinter/frontend/onnx.h"
#include "sinter/ir/graph.h"
#include "sinter/ir/printer.h"
#include "sinter/io/npy.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>

namespace fs = std::filesystem;

namespace {

void write(const fs::path &path, const std::string &bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 3) {
    std::cerr << "usage: sinter_fuzz_seeds MODELS_DIR OUTPUT_DIR\n";
    return 1;
  }
  fs::path models = argv[1], out = argv[2];
  for (const char *corpus : {"onnx_import", "ir_parser", "npy"})
    fs::create_directories(out / corpus);
  std::vector<fs::path> files;
  for (const auto &entry : fs::directory_iterator(models))
    if (entry.path().extension() == ".onnx" && entry.file_size() < 64 * 1024)
      files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  for (const fs::path &file : files) {
    std::string stem = file.stem().string();
    fs::copy_file(file, out / "onnx_import" / (stem + ".onnx"), fs::copy_options::overwrite_existing);
    std::unique_ptr<sinter::Graph> graph = sinter::onnx::importModel(file.string());
    write(out / "ir_parser" / (stem + ".sir"), sinter::printGraph(*graph));
    std::vector<sinter::io::NamedTensor> constants;
    for (const sinter::Value *value : graph->constants()) {
      if (constants.size() == 3)
        break;
      constants.emplace_back(value->name(), value->constant());
    }
    if (constants.empty())
      continue;
    write(out / "npy" / (stem + ".npy"), std::string(1, '\0') + sinter::io::serializeNpy(constants[0].second));
    write(out / "npy" / (stem + ".npz"), std::string(1, '\1') + sinter::io::serializeNpz(constants));
  }
  std::cout << files.size() << " models\n";
  return 0;
}
