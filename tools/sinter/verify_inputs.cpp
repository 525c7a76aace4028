#include "verify_inputs.h"

#include "options.h"

#include "sinter/frontend/onnx.h"
#include "sinter/support/error.h"

#include <algorithm>
#include <filesystem>

namespace sinter::cli {
namespace {

namespace fs = std::filesystem;

/// splitmix64 (Steele, Lea and Flood): a tiny generator whose output is fixed by its definition.
struct SplitMix64 {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  /// Uniform in [0, 1) with 53 bits.
  double unit() { return double(next() >> 11) * 0x1.0p-53; }
};

bool passesIndices(OpKind kind) {
  switch (kind) {
  case OpKind::Cast:
  case OpKind::Identity:
  case OpKind::Reshape:
  case OpKind::Flatten:
  case OpKind::Squeeze:
  case OpKind::Unsqueeze:
  case OpKind::Expand:
  case OpKind::Transpose:
    return true;
  default:
    return false;
  }
}

std::optional<int64_t> boundFromUses(const Value &value, int depth) {
  std::optional<int64_t> bound;
  for (const Use &use : value.uses()) {
    const Node &node = *use.user;
    std::optional<int64_t> found;
    if ((node.kind() == OpKind::Gather || node.kind() == OpKind::GatherElements) && use.index == 1) {
      const Value *data = node.input(0);
      int64_t axis = node.attrInt("axis", 0);
      if (data && axis < 0)
        axis += data->rank();
      if (data && axis >= 0 && axis < data->rank() && data->shape()[axis].isStatic())
        found = data->shape()[axis].value();
    } else if (passesIndices(node.kind()) && use.index == 0 && depth < 8) {
      found = boundFromUses(*node.output(0), depth + 1);
    }
    if (found)
      bound = bound ? std::min(*bound, *found) : *found;
  }
  return bound;
}

int64_t dataSetNumber(const std::string &name) {
  std::string digits = name.substr(std::string("test_data_set_").size());
  if (digits.empty() || digits.size() > 9 || !std::all_of(digits.begin(), digits.end(), ::isdigit))
    return -1;
  return std::stoll(digits);
}

} // namespace

std::optional<int64_t> indexBound(const Value &input) { return boundFromUses(input, 0); }

Tensor randomTensor(DType dtype, const std::vector<int64_t> &dims, uint64_t seed, uint64_t caseIndex,
                    uint64_t inputIndex, int64_t integerHigh, const std::string &what) {
  if (isLowPrecision(dtype))
    userError(what, " has dtype ", dtypeName(dtype), ", which --random does not generate; give it with --input NAME=FILE");
  // One stream per (seed, case, input): each seeds the next, so streams do not overlap in practice.
  SplitMix64 mix{seed};
  mix.state = mix.next() ^ caseIndex;
  mix.state = mix.next() ^ inputIndex;
  SplitMix64 random{mix.next()};
  Tensor tensor(dtype, dims);
  uint64_t high = uint64_t(std::max<int64_t>(integerHigh, 1));
  for (int64_t i = 0; i < tensor.elementCount(); ++i) {
    uint64_t bits = random.next();
    if (dtype == DType::Bool)
      tensor.setInt(i, int64_t(bits >> 63));
    else if (isInteger(dtype))
      tensor.setInt(i, int64_t(bits % high));
    else {
      double magnitude = 0.1 + 0.9 * double(bits >> 11) * 0x1.0p-53;
      tensor.setDouble(i, (random.next() >> 63) ? -magnitude : magnitude);
    }
  }
  return tensor;
}

std::vector<VerifyCase> readTestDataSets(const std::string &folder, size_t inputCount, size_t outputCount) {
  std::error_code error;
  if (!fs::is_directory(folder, error))
    userError("--test-data '", folder, "' is not a folder (it should hold test_data_set_N/input_K.pb)");
  std::vector<std::pair<int64_t, fs::path>> sets;
  if (fs::exists(fs::path(folder) / "input_0.pb", error) || inputCount == 0) {
    sets.emplace_back(0, fs::path(folder));
  } else {
    for (const fs::directory_entry &entry : fs::directory_iterator(folder, error)) {
      std::string name = entry.path().filename().string();
      if (entry.is_directory() && name.rfind("test_data_set_", 0) == 0 && dataSetNumber(name) >= 0)
        sets.emplace_back(dataSetNumber(name), entry.path());
    }
    std::sort(sets.begin(), sets.end());
  }
  if (sets.empty())
    userError("--test-data '", folder, "' holds no test_data_set_N folders and no input_0.pb");
  std::vector<VerifyCase> cases;
  for (const auto &[number, path] : sets) {
    VerifyCase data;
    data.name = path.filename().string();
    for (size_t k = 0; k < inputCount; ++k) {
      fs::path file = path / ("input_" + std::to_string(k) + ".pb");
      if (!fs::exists(file, error))
        userError("test data set '", path.string(), "' lacks ", file.filename().string(), " (the model has ",
                  inputCount, " input", inputCount == 1 ? "" : "s", ")");
      data.inputs.push_back(onnx::readTensorProtoFile(file.string()));
    }
    size_t present = 0;
    for (size_t k = 0; k < outputCount; ++k)
      present += fs::exists(path / ("output_" + std::to_string(k) + ".pb"), error);
    if (present != 0 && present != outputCount)
      userError("test data set '", path.string(), "' has ", present, " of the model's ", outputCount,
                " output_K.pb files; give all or none");
    for (size_t k = 0; present && k < outputCount; ++k)
      data.outputs.push_back(onnx::readTensorProtoFile((path / ("output_" + std::to_string(k) + ".pb")).string()));
    cases.push_back(std::move(data));
  }
  return cases;
}

} // namespace sinter::cli
