#include "model_config.h"

#include "sinter/support/error.h"

#include <algorithm>
#include <set>

namespace sinter::triton {
namespace {

/// One row per element type the backend carries: sinter's, Triton's, and their spellings.
struct TypeRow {
  sinter_dtype sinter;
  TRITONSERVER_DataType triton;
  const char *configName;
  const char *protocolName;
  size_t bytes;
};

constexpr TypeRow kTypes[] = {
    {SINTER_BOOL, TRITONSERVER_TYPE_BOOL, "TYPE_BOOL", "BOOL", 1},
    {SINTER_UINT8, TRITONSERVER_TYPE_UINT8, "TYPE_UINT8", "UINT8", 1},
    {SINTER_UINT16, TRITONSERVER_TYPE_UINT16, "TYPE_UINT16", "UINT16", 2},
    {SINTER_UINT32, TRITONSERVER_TYPE_UINT32, "TYPE_UINT32", "UINT32", 4},
    {SINTER_UINT64, TRITONSERVER_TYPE_UINT64, "TYPE_UINT64", "UINT64", 8},
    {SINTER_INT8, TRITONSERVER_TYPE_INT8, "TYPE_INT8", "INT8", 1},
    {SINTER_INT16, TRITONSERVER_TYPE_INT16, "TYPE_INT16", "INT16", 2},
    {SINTER_INT32, TRITONSERVER_TYPE_INT32, "TYPE_INT32", "INT32", 4},
    {SINTER_INT64, TRITONSERVER_TYPE_INT64, "TYPE_INT64", "INT64", 8},
    {SINTER_FLOAT16, TRITONSERVER_TYPE_FP16, "TYPE_FP16", "FP16", 2},
    {SINTER_FLOAT32, TRITONSERVER_TYPE_FP32, "TYPE_FP32", "FP32", 4},
    {SINTER_FLOAT64, TRITONSERVER_TYPE_FP64, "TYPE_FP64", "FP64", 8},
    {SINTER_BFLOAT16, TRITONSERVER_TYPE_BF16, "TYPE_BF16", "BF16", 2},
};

const TypeRow *rowOf(TRITONSERVER_DataType type) {
  for (const TypeRow &row : kTypes)
    if (row.triton == type)
      return &row;
  return nullptr;
}

std::vector<TensorSpec> signature(const sinter_model *model, bool inputs) {
  int32_t count = inputs ? sinter_model_input_count(model) : sinter_model_output_count(model);
  if (count < 0)
    userError("the artifact's signature could not be read: ", sinter_last_error());
  std::vector<TensorSpec> specs;
  for (int32_t i = 0; i < count; ++i) {
    sinter_tensor_info info;
    sinter_status status = inputs ? sinter_model_input_info(model, i, &info)
                                  : sinter_model_output_info(model, i, &info);
    if (status != SINTER_OK)
      userError("the artifact's signature could not be read: ", sinter_last_error());
    const TypeRow *row = nullptr;
    for (const TypeRow &candidate : kTypes)
      if (candidate.sinter == info.dtype)
        row = &candidate;
    if (!row)
      userError(inputs ? "input" : "output", " '", info.name, "' has element type ",
                int(info.dtype), " (ONNX numbering), which Triton has no data type for");
    specs.push_back({info.name, info.dtype, row->triton,
                     std::vector<int64_t>(info.dims, info.dims + info.rank), row->bytes});
  }
  return specs;
}

const char *kindName(bool input) { return input ? "input" : "output"; }

std::vector<int64_t> configDims(const JsonValue &tensor, const std::string &name) {
  const JsonValue *dims = tensor.find("dims");
  std::vector<int64_t> out;
  if (!dims)
    return out;
  if (!dims->isArray())
    userError("the configuration's tensor '", name, "' has 'dims' that is not a list");
  for (const JsonValue &dim : dims->items()) {
    std::optional<int64_t> value = dim.integer();
    if (!value)
      userError("the configuration's tensor '", name, "' has a dim that is not an integer");
    out.push_back(*value);
  }
  return out;
}

const std::vector<JsonValue> *tensorList(const JsonValue &config, const char *key) {
  const JsonValue *list = config.find(key);
  if (!list)
    return nullptr;
  if (!list->isArray())
    userError("the configuration's '", key, "' is not a list");
  return &list->items();
}

/// The artifact's dims as the configuration spells them: without the batch dim when batching.
std::vector<int64_t> expectedConfigDims(const TensorSpec &spec, const BackendConfig &backend) {
  if (backend.maxBatchSize == 0)
    return spec.dims;
  return std::vector<int64_t>(spec.dims.begin() + 1, spec.dims.end());
}

void checkTensors(const JsonValue &config, const char *key, bool input,
                  const BackendConfig &backend, const std::vector<TensorSpec> &specs,
                  const std::string &artifactPath) {
  const std::vector<JsonValue> *list = tensorList(config, key);
  static const std::vector<JsonValue> none;
  if (!list)
    list = &none;
  std::set<std::string> seen;
  for (const JsonValue &tensor : *list) {
    const JsonValue *nameValue = tensor.find("name");
    std::string name = nameValue ? nameValue->text() : "";
    auto spec = std::find_if(specs.begin(), specs.end(),
                             [&](const TensorSpec &s) { return s.name == name; });
    if (spec == specs.end()) {
      std::string known;
      for (const TensorSpec &s : specs)
        known += (known.empty() ? "'" : ", '") + s.name + "'";
      userError("the configuration names ", kindName(input), " '", name, "', which the artifact ",
                artifactPath, " does not have (its ", kindName(input), "s: ", known, ")");
    }
    if (!seen.insert(name).second)
      userError("the configuration lists ", kindName(input), " '", name, "' twice");
    const JsonValue *type = tensor.find("data_type");
    std::string typeName = type ? type->text() : "TYPE_INVALID";
    if (typeName != configTypeName(spec->tritonType))
      userError("the configuration gives ", kindName(input), " '", name, "' data_type ", typeName,
                " but the artifact ", artifactPath, " has ", configTypeName(spec->tritonType));
    std::vector<int64_t> dims = configDims(tensor, name);
    std::vector<int64_t> expected = expectedConfigDims(*spec, backend);
    if (dims != expected)
      userError("the configuration gives ", kindName(input), " '", name, "' dims ", dimsText(dims),
                " but the artifact ", artifactPath, " has ", dimsText(spec->dims),
                backend.maxBatchSize > 0 ? ", so with max_batch_size > 0 the dims are "
                                         : ", so the dims are ",
                dimsText(expected));
  }
  if (input && seen.size() != specs.size())
    for (const TensorSpec &spec : specs)
      if (!seen.count(spec.name))
        userError("the configuration leaves out input '", spec.name, "' of the artifact ",
                  artifactPath, "; list every input (or none, and let the backend fill them in)");
}

JsonValue tensorEntry(const TensorSpec &spec, const BackendConfig &backend) {
  JsonValue entry = JsonValue::object();
  entry.set("name", JsonValue::string(spec.name));
  entry.set("data_type", JsonValue::string(configTypeName(spec.tritonType)));
  JsonValue dims = JsonValue::array();
  for (int64_t dim : expectedConfigDims(spec, backend))
    dims.push(JsonValue::number(dim));
  entry.set("dims", std::move(dims));
  return entry;
}

} // namespace

size_t TensorSpec::byteSize() const {
  size_t count = 1;
  for (int64_t dim : dims)
    count *= static_cast<size_t>(dim);
  return count * elementBytes;
}

std::vector<TensorSpec> artifactInputs(const sinter_model *model) { return signature(model, true); }
std::vector<TensorSpec> artifactOutputs(const sinter_model *model) {
  return signature(model, false);
}

const char *configTypeName(TRITONSERVER_DataType type) {
  const TypeRow *row = rowOf(type);
  return row ? row->configName : "TYPE_INVALID";
}

const char *protocolTypeName(TRITONSERVER_DataType type) {
  if (type == TRITONSERVER_TYPE_BYTES)
    return "BYTES";
  const TypeRow *row = rowOf(type);
  return row ? row->protocolName : "INVALID";
}

std::string dimsText(const int64_t *dims, size_t count) {
  std::string text = "[";
  for (size_t i = 0; i < count; ++i)
    text += (i ? "," : "") + std::to_string(dims[i]);
  return text + "]";
}

BackendConfig readBackendConfig(const JsonValue &config) {
  BackendConfig backend;
  if (const JsonValue *max = config.find("max_batch_size")) {
    std::optional<int64_t> value = max->integer();
    if (!value || *value < 0)
      userError("max_batch_size must be a non-negative integer");
    backend.maxBatchSize = *value;
  }
  if (const JsonValue *name = config.find("default_model_filename"); name && !name->text().empty())
    backend.artifactFile = name->text();
  // parameters { key: "artifact" value { string_value: "resnet.so" } }, as JSON.
  auto parameter = [&](const char *key) -> const JsonValue * {
    const JsonValue *parameters = config.find("parameters");
    const JsonValue *entry = parameters ? parameters->find(key) : nullptr;
    return entry ? entry->find("string_value") : nullptr;
  };
  if (const JsonValue *artifact = parameter("artifact"))
    backend.artifactFile = artifact->text();
  if (backend.artifactFile.empty() || backend.artifactFile.find('/') != std::string::npos ||
      backend.artifactFile == "." || backend.artifactFile == "..")
    userError("the artifact file name '", backend.artifactFile,
              "' must name a file in the model's version folder (no '/')");
  if (const JsonValue *threads = parameter("threads")) {
    std::optional<int64_t> value = threads->integer();
    if (!value || *value < 0 || *value > 1024)
      userError("parameter 'threads' is '", threads->text(),
                "'; give a whole number of CPU worker threads per instance (0: one per core)");
    backend.cpuThreads = static_cast<int32_t>(*value);
  }
  return backend;
}

bool autoComplete(JsonValue &config, const BackendConfig &backend,
                  const std::vector<TensorSpec> &inputs, const std::vector<TensorSpec> &outputs) {
  bool changed = false;
  auto fill = [&](const char *key, const std::vector<TensorSpec> &specs) {
    const std::vector<JsonValue> *list = tensorList(config, key);
    if (list && !list->empty())
      return;
    // With batching, a tensor without dims left would be a scalar per row, which the signature
    // check rejects below all the same; fill what the artifact says.
    JsonValue filled = JsonValue::array();
    for (const TensorSpec &spec : specs)
      filled.push(tensorEntry(spec, backend));
    config.set(key, std::move(filled));
    changed = true;
  };
  fill("input", inputs);
  fill("output", outputs);
  return changed;
}

int64_t checkConfigAgainstArtifact(const JsonValue &config, const BackendConfig &backend,
                                   const std::vector<TensorSpec> &inputs,
                                   const std::vector<TensorSpec> &outputs,
                                   const std::string &artifactPath, bool bucketed) {
  int64_t batch = 1;
  if (backend.maxBatchSize > 0) {
    // The artifact's batch: the leading dim, which every tensor must share.
    std::string first;
    for (const auto *specs : {&inputs, &outputs})
      for (const TensorSpec &spec : *specs) {
        if (spec.dims.empty())
          userError("max_batch_size is ", backend.maxBatchSize, " but '", spec.name,
                    "' of the artifact ", artifactPath,
                    " is a scalar, with no batch dim; set max_batch_size: 0");
        if (first.empty()) {
          first = spec.name;
          batch = spec.dims[0];
        } else if (spec.dims[0] != batch) {
          userError("max_batch_size is ", backend.maxBatchSize, " but the artifact ", artifactPath,
                    " has no common batch dim: '", first, "' leads with ", batch, " and '",
                    spec.name, "' with ", spec.dims[0], "; set max_batch_size: 0");
        }
      }
    if (batch > backend.maxBatchSize && !bucketed)
      userError("max_batch_size is ", backend.maxBatchSize, " but the artifact ", artifactPath,
                " was compiled for batch ", batch, "; raise max_batch_size to a multiple of ",
                batch, " or compile the model for batch 1");
  }
  checkTensors(config, "input", true, backend, inputs, artifactPath);
  checkTensors(config, "output", false, backend, outputs, artifactPath);
  return batch;
}

} // namespace sinter::triton
