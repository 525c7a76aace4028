// The opset adapters against onnxruntime: onnx_old_opsets.py writes models in older op forms
// (Softmax's 2-D coercion, Upsample, Resize-10, attributes that later became inputs, ...) with
// onnxruntime's outputs; each is imported, run on the reference evaluator, and compared.
#include "onnx_test_util.h"

#include "sinter/ir/graph.h"
#include "sinter/reference/evaluator.h"

#include <cmath>
#include <cstdlib>

using namespace sinter;
using namespace sinter::onnx_test;

namespace {

// Compares element by element; integers exactly, floats to a small tolerance.
std::string compare(const Tensor &got, const Tensor &want) {
  if (got.dtype() != want.dtype() || got.dims() != want.dims())
    return "type " + got.type().str() + ", expected " + want.type().str();
  for (int64_t i = 0; i < want.elementCount(); ++i) {
    double a = got.getDouble(i), b = want.getDouble(i);
    if ((std::isnan(a) && std::isnan(b)) || a == b)
      continue;
    if (!isFloat(want.dtype()) || !(std::fabs(a - b) <= 1e-5 + 1e-4 * std::fabs(b)))
      return "element " + std::to_string(i) + " is " + std::to_string(a) + ", expected " +
             std::to_string(b);
  }
  return "";
}

} // namespace

TEST(OnnxOldOpsets, AdaptedModelsMatchOnnxRuntime) {
  fs::path source(SINTER_SOURCE_DIR);
  fs::path python = source / ".venv/bin/python";
  ASSERT_TRUE(fs::exists(python)) << python << " is missing (run scripts/setup)";
  TempDir dir;
  std::string command = python.string() + " " + (source / "test/unit/onnx_old_opsets.py").string() +
                        " " + dir.path().string() + " > " + dir.file("count.txt");
  ASSERT_EQ(std::system(command.c_str()), 0) << command;

  int cases = 0;
  for (const auto &entry : fs::directory_iterator(dir.path())) {
    if (!entry.is_directory())
      continue;
    ++cases;
    std::string name = entry.path().filename().string();
    SCOPED_TRACE(name);
    fs::path data = entry.path() / "test_data_set_0";
    try {
      auto graph = sinter::onnx::importModel((entry.path() / "model.onnx").string());
      std::vector<Tensor> inputs;
      for (size_t i = 0; i < graph->inputs().size(); ++i)
        inputs.push_back(sinter::onnx::readTensorProtoFile(
            (data / ("input_" + std::to_string(i) + ".pb")).string()));
      std::vector<Tensor> outputs = reference::evaluate(*graph, inputs);
      for (size_t i = 0; i < outputs.size(); ++i) {
        Tensor want = sinter::onnx::readTensorProtoFile(
            (data / ("output_" + std::to_string(i) + ".pb")).string());
        std::string difference = compare(outputs[i], want);
        EXPECT_EQ(difference, "") << "output " << i;
      }
    } catch (const std::exception &error) {
      ADD_FAILURE() << error.what();
    }
  }
  EXPECT_GE(cases, 100) << "the case generator wrote too few models";
}
