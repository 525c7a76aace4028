// Every model of the suite in models/ imports, and its IR prints, parses back, and prints to the
// same text: the importer's output is within what the text form can say, losslessly.
#include "sinter/frontend/onnx.h"
#include "sinter/ir/graph.h"
#include "sinter/ir/parser.h"
#include "sinter/ir/printer.h"
#include "sinter/support/error.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

namespace fs = std::filesystem;
using namespace sinter;

namespace {

std::vector<fs::path> suiteModels() {
  std::vector<fs::path> models;
  fs::path root = fs::path(SINTER_SOURCE_DIR) / "models";
  if (!fs::exists(root))
    return models;
  for (const auto &entry : fs::recursive_directory_iterator(root))
    if (entry.is_regular_file() && entry.path().extension() == ".onnx")
      models.push_back(entry.path());
  std::sort(models.begin(), models.end());
  return models;
}

} // namespace

TEST(ModelRoundTrip, EveryModelImportsPrintsAndParsesBack) {
  std::vector<fs::path> models = suiteModels();
  ASSERT_FALSE(models.empty()) << "no *.onnx model found under " << SINTER_SOURCE_DIR
                               << "/models; the model suite is missing";
  for (const fs::path &model : models) {
    SCOPED_TRACE(model.string());
    std::unique_ptr<Graph> graph;
    try {
      graph = sinter::onnx::importModel(model.string());
    } catch (const std::exception &error) {
      ADD_FAILURE() << "import failed: " << error.what();
      continue;
    }
    std::string text = printGraph(*graph);
    std::unique_ptr<Graph> parsed;
    try {
      parsed = parseGraph(text);
    } catch (const std::exception &error) {
      ADD_FAILURE() << "the printed IR does not parse: " << error.what();
      continue;
    }
    std::string again = printGraph(*parsed);
    if (again != text) {
      // Point at the first line that differs rather than dumping two whole graphs.
      size_t at =
          std::mismatch(text.begin(), text.end(), again.begin(), again.end()).first - text.begin();
      size_t line = text.rfind('\n', at);
      line = line == std::string::npos ? 0 : line + 1;
      ADD_FAILURE() << "the text changes after parsing; first difference near:\n  printed: "
                    << text.substr(line, text.find('\n', at) - line)
                    << "\n  reprinted: " << again.substr(line, again.find('\n', at) - line);
    }
    EXPECT_EQ(parsed->inputs().size(), graph->inputs().size());
    EXPECT_EQ(parsed->outputs().size(), graph->outputs().size());
  }
}
