// The sinter Triton backend driven by a stand-in for the server: this program defines the
// TRITONSERVER_* / TRITONBACKEND_* functions the backend calls (exported, so the dlopen'ed backend
// binds to them as it binds to tritonserver's), then calls the backend's entry points directly. It
// reaches what the real server's front ends never send (test/python/test_triton_backend.py drives
// the real server): an input in several buffers, requests that break the artifact's rules where
// Triton's own checks let them through, inputs in GPU memory, and a server of another API version.
// The truth for outputs is the same artifact run directly through libsinter_rt.

#include "../../backends/triton/triton_api.h"

#include "sinter/runtime.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <deque>
#include <dlfcn.h>
#include <filesystem>
#include <memory>
#include <string>
#include <unistd.h>
#include <vector>

namespace fs = std::filesystem;

// --- the stand-in server's objects ---

struct TRITONSERVER_Error {
  TRITONSERVER_Error_Code code;
  std::string message;
};
struct TRITONSERVER_Message {
  std::string json;
};
struct TRITONBACKEND_Model {
  std::string name, repository, config;
  uint64_t version = 1;
  bool autoComplete = true;
  void *state = nullptr;
};
struct TRITONBACKEND_ModelInstance {
  std::string name;
  TRITONBACKEND_Model *model = nullptr;
  TRITONSERVER_InstanceGroupKind kind = TRITONSERVER_INSTANCEGROUPKIND_CPU;
  int32_t device = 0;
  void *state = nullptr;
};
struct TRITONBACKEND_Input {
  std::string name;
  TRITONSERVER_DataType type = TRITONSERVER_TYPE_FP32;
  std::vector<int64_t> shape;
  std::vector<std::vector<unsigned char>> buffers;
  TRITONSERVER_MemoryType memory = TRITONSERVER_MEMORY_CPU;
};
struct TRITONBACKEND_Output {
  std::string name;
  TRITONSERVER_DataType type;
  std::vector<int64_t> shape;
  std::vector<unsigned char> data;
};
struct TRITONBACKEND_Response {
  TRITONBACKEND_Request *request;
  std::deque<TRITONBACKEND_Output> outputs;
};
struct TRITONBACKEND_Request {
  std::deque<TRITONBACKEND_Input> inputs;
  std::vector<std::string> requestedOutputs;
  int responses = 0;
  bool released = false;
  bool ok = false;
  std::string error;
  std::deque<TRITONBACKEND_Output> outputs;
};

namespace {
uint32_t hostApiMajor = 1, hostApiMinor = 19;
TRITONSERVER_Error *error(TRITONSERVER_Error_Code code, const std::string &message) {
  return new TRITONSERVER_Error{code, message};
}
} // namespace

extern "C" {
TRITONSERVER_Error *TRITONSERVER_ErrorNew(TRITONSERVER_Error_Code code, const char *message) {
  return error(code, message ? message : "");
}
void TRITONSERVER_ErrorDelete(TRITONSERVER_Error *e) { delete e; }
const char *TRITONSERVER_ErrorMessage(TRITONSERVER_Error *e) { return e->message.c_str(); }
TRITONSERVER_Error_Code TRITONSERVER_ErrorCode(TRITONSERVER_Error *e) { return e->code; }
bool TRITONSERVER_LogIsEnabled(TRITONSERVER_LogLevel) { return true; }
TRITONSERVER_Error *TRITONSERVER_LogMessage(TRITONSERVER_LogLevel, const char *, int,
                                            const char *) {
  return nullptr;
}
TRITONSERVER_Error *TRITONSERVER_MessageNewFromSerializedJson(TRITONSERVER_Message **m,
                                                              const char *base, size_t size) {
  *m = new TRITONSERVER_Message{std::string(base, size)};
  return nullptr;
}
TRITONSERVER_Error *TRITONSERVER_MessageSerializeToJson(TRITONSERVER_Message *m, const char **base,
                                                        size_t *size) {
  *base = m->json.data();
  *size = m->json.size();
  return nullptr;
}
TRITONSERVER_Error *TRITONSERVER_MessageDelete(TRITONSERVER_Message *m) {
  delete m;
  return nullptr;
}

TRITONSERVER_Error *TRITONBACKEND_ApiVersion(uint32_t *major, uint32_t *minor) {
  *major = hostApiMajor;
  *minor = hostApiMinor;
  return nullptr;
}
TRITONSERVER_Error *TRITONBACKEND_BackendName(TRITONBACKEND_Backend *, const char **name) {
  *name = "sinter";
  return nullptr;
}
TRITONSERVER_Error *TRITONBACKEND_ModelName(TRITONBACKEND_Model *m, const char **name) {
  *name = m->name.c_str();
  return nullptr;
}
TRITONSERVER_Error *TRITONBACKEND_ModelVersion(TRITONBACKEND_Model *m, uint64_t *version) {
  *version = m->version;
  return nullptr;
}
TRITONSERVER_Error *TRITONBACKEND_ModelRepository(TRITONBACKEND_Model *m,
                                                  TRITONBACKEND_ArtifactType *type,
                                                  const char **location) {
  *type = TRITONBACKEND_ARTIFACT_FILESYSTEM;
  *location = m->repository.c_str();
  return nullptr;
}
TRITONSERVER_Error *TRITONBACKEND_ModelConfig(TRITONBACKEND_Model *m, uint32_t,
                                              TRITONSERVER_Message **config) {
  *config = new TRITONSERVER_Message{m->config};
  return nullptr;
}
TRITONSERVER_Error *TRITONBACKEND_ModelAutoCompleteConfig(TRITONBACKEND_Model *m, bool *wanted) {
  *wanted = m->autoComplete;
  return nullptr;
}
TRITONSERVER_Error *TRITONBACKEND_ModelSetConfig(TRITONBACKEND_Model *m, uint32_t,
                                                 TRITONSERVER_Message *config) {
  m->config = config->json;
  return nullptr;
}
TRITONSERVER_Error *TRITONBACKEND_ModelState(TRITONBACKEND_Model *m, void **state) {
  *state = m->state;
  return nullptr;
}
TRITONSERVER_Error *TRITONBACKEND_ModelSetState(TRITONBACKEND_Model *m, void *state) {
  m->state = state;
  return nullptr;
}
TRITONSERVER_Error *TRITONBACKEND_ModelInstanceName(TRITONBACKEND_ModelInstance *i,
                                                    const char **name) {
  *name = i->name.c_str();
  return nullptr;
}
TRITONSERVER_Error *TRITONBACKEND_ModelInstanceKind(TRITONBACKEND_ModelInstance *i,
                                                    TRITONSERVER_InstanceGroupKind *k) {
  *k = i->kind;
  return nullptr;
}
TRITONSERVER_Error *TRITONBACKEND_ModelInstanceDeviceId(TRITONBACKEND_ModelInstance *i,
                                                        int32_t *device) {
  *device = i->device;
  return nullptr;
}
TRITONSERVER_Error *TRITONBACKEND_ModelInstanceModel(TRITONBACKEND_ModelInstance *i,
                                                     TRITONBACKEND_Model **m) {
  *m = i->model;
  return nullptr;
}
TRITONSERVER_Error *TRITONBACKEND_ModelInstanceState(TRITONBACKEND_ModelInstance *i, void **state) {
  *state = i->state;
  return nullptr;
}
TRITONSERVER_Error *TRITONBACKEND_ModelInstanceSetState(TRITONBACKEND_ModelInstance *i,
                                                        void *state) {
  i->state = state;
  return nullptr;
}
TRITONSERVER_Error *TRITONBACKEND_ModelInstanceReportStatistics(TRITONBACKEND_ModelInstance *,
                                                                TRITONBACKEND_Request *, bool,
                                                                uint64_t, uint64_t, uint64_t,
                                                                uint64_t) {
  return nullptr;
}
TRITONSERVER_Error *TRITONBACKEND_ModelInstanceReportBatchStatistics(TRITONBACKEND_ModelInstance *,
                                                                     uint64_t, uint64_t, uint64_t,
                                                                     uint64_t, uint64_t) {
  return nullptr;
}
TRITONSERVER_Error *TRITONBACKEND_RequestInputCount(TRITONBACKEND_Request *r, uint32_t *count) {
  *count = static_cast<uint32_t>(r->inputs.size());
  return nullptr;
}
TRITONSERVER_Error *TRITONBACKEND_RequestInputName(TRITONBACKEND_Request *r, uint32_t index,
                                                   const char **name) {
  if (index >= r->inputs.size())
    return error(TRITONSERVER_ERROR_INVALID_ARG, "input index out of range");
  *name = r->inputs[index].name.c_str();
  return nullptr;
}
TRITONSERVER_Error *TRITONBACKEND_RequestInput(TRITONBACKEND_Request *r, const char *name,
                                               TRITONBACKEND_Input **input) {
  for (TRITONBACKEND_Input &candidate : r->inputs)
    if (candidate.name == name) {
      *input = &candidate;
      return nullptr;
    }
  return error(TRITONSERVER_ERROR_INVALID_ARG, "no such input");
}
TRITONSERVER_Error *TRITONBACKEND_RequestOutputCount(TRITONBACKEND_Request *r, uint32_t *count) {
  *count = static_cast<uint32_t>(r->requestedOutputs.size());
  return nullptr;
}
TRITONSERVER_Error *TRITONBACKEND_RequestOutputName(TRITONBACKEND_Request *r, uint32_t index,
                                                    const char **name) {
  *name = r->requestedOutputs.at(index).c_str();
  return nullptr;
}
TRITONSERVER_Error *TRITONBACKEND_RequestRelease(TRITONBACKEND_Request *r, uint32_t) {
  r->released = true;
  return nullptr;
}
TRITONSERVER_Error *TRITONBACKEND_InputProperties(TRITONBACKEND_Input *input, const char **name,
                                                  TRITONSERVER_DataType *type,
                                                  const int64_t **shape, uint32_t *rank,
                                                  uint64_t *byteSize, uint32_t *bufferCount) {
  if (name)
    *name = input->name.c_str();
  *type = input->type;
  *shape = input->shape.data();
  *rank = static_cast<uint32_t>(input->shape.size());
  uint64_t total = 0;
  for (const auto &buffer : input->buffers)
    total += buffer.size();
  *byteSize = total;
  *bufferCount = static_cast<uint32_t>(input->buffers.size());
  return nullptr;
}
TRITONSERVER_Error *TRITONBACKEND_InputBuffer(TRITONBACKEND_Input *input, uint32_t index,
                                              const void **buffer, uint64_t *size,
                                              TRITONSERVER_MemoryType *memory, int64_t *memoryId) {
  *buffer = input->buffers.at(index).data();
  *size = input->buffers[index].size();
  *memory = input->memory;
  *memoryId = 0;
  return nullptr;
}
TRITONSERVER_Error *TRITONBACKEND_ResponseNew(TRITONBACKEND_Response **response,
                                              TRITONBACKEND_Request *r) {
  *response = new TRITONBACKEND_Response{r, {}};
  return nullptr;
}
TRITONSERVER_Error *TRITONBACKEND_ResponseDelete(TRITONBACKEND_Response *response) {
  delete response;
  return nullptr;
}
TRITONSERVER_Error *TRITONBACKEND_ResponseOutput(TRITONBACKEND_Response *response,
                                                 TRITONBACKEND_Output **output, const char *name,
                                                 TRITONSERVER_DataType type, const int64_t *shape,
                                                 uint32_t rank) {
  response->outputs.push_back({name, type, std::vector<int64_t>(shape, shape + rank), {}});
  *output = &response->outputs.back();
  return nullptr;
}
TRITONSERVER_Error *TRITONBACKEND_OutputBuffer(TRITONBACKEND_Output *output, void **buffer,
                                               uint64_t size, TRITONSERVER_MemoryType *memory,
                                               int64_t *memoryId) {
  output->data.assign(size, 0xAB); // not zero: an output the backend forgot to write shows
  *buffer = output->data.data();
  *memory = TRITONSERVER_MEMORY_CPU;
  *memoryId = 0;
  return nullptr;
}
TRITONSERVER_Error *TRITONBACKEND_ResponseSend(TRITONBACKEND_Response *response, uint32_t,
                                               TRITONSERVER_Error *e) {
  TRITONBACKEND_Request *r = response->request;
  ++r->responses;
  r->ok = e == nullptr;
  r->error = e ? e->message : "";
  if (!e)
    r->outputs = std::move(response->outputs);
  delete response;
  return nullptr;
}
} // extern "C"

namespace {

using EntryInit = TRITONSERVER_Error *(*)(TRITONBACKEND_Backend *);
using EntryModel = TRITONSERVER_Error *(*)(TRITONBACKEND_Model *);
using EntryInstance = TRITONSERVER_Error *(*)(TRITONBACKEND_ModelInstance *);
using EntryExecute = TRITONSERVER_Error *(*)(TRITONBACKEND_ModelInstance *,
                                             TRITONBACKEND_Request **, uint32_t);

struct Backend {
  void *library = nullptr;
  EntryInit initialize;
  EntryModel modelInitialize, modelFinalize;
  EntryInstance instanceInitialize, instanceFinalize;
  EntryExecute execute;
};

const Backend &backend() {
  static Backend loaded = [] {
    Backend b;
    std::string path = SINTER_BINARY_DIR "/backends/sinter/libtriton_sinter.so";
    b.library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!b.library)
      throw std::runtime_error(std::string("dlopen: ") + dlerror());
    auto symbol = [&](const char *name) {
      void *address = dlsym(b.library, name);
      if (!address)
        throw std::runtime_error(std::string("missing entry point ") + name);
      return address;
    };
    b.initialize = reinterpret_cast<EntryInit>(symbol("TRITONBACKEND_Initialize"));
    b.modelInitialize = reinterpret_cast<EntryModel>(symbol("TRITONBACKEND_ModelInitialize"));
    b.modelFinalize = reinterpret_cast<EntryModel>(symbol("TRITONBACKEND_ModelFinalize"));
    b.instanceInitialize =
        reinterpret_cast<EntryInstance>(symbol("TRITONBACKEND_ModelInstanceInitialize"));
    b.instanceFinalize =
        reinterpret_cast<EntryInstance>(symbol("TRITONBACKEND_ModelInstanceFinalize"));
    b.execute = reinterpret_cast<EntryExecute>(symbol("TRITONBACKEND_ModelInstanceExecute"));
    return b;
  }();
  return loaded;
}

/// A message from an entry point's error, consuming it; "" for success.
std::string take(TRITONSERVER_Error *e) {
  if (!e)
    return "";
  std::string message = e->message;
  delete e;
  return message;
}

/// The test's scratch folder, removed when the program ends.
const fs::path &scratch() {
  static struct Folder {
    fs::path path = fs::temp_directory_path() / ("sinter_triton_host_" + std::to_string(getpid()));
    Folder() { fs::create_directories(path); }
    ~Folder() {
      std::error_code ignored;
      fs::remove_all(path, ignored);
    }
  } folder;
  return folder.path;
}

/// models/NAME.onnx compiled once for the CPU target with `flags`, as scratch()/STEM.so.
fs::path compiled(const std::string &name, const std::string &flags, const std::string &stem) {
  fs::path out = scratch() / (stem + ".so");
  if (fs::exists(out))
    return out;
  std::string command = std::string(SINTER_BINARY_DIR "/bin/sinter compile ") + SINTER_SOURCE_DIR +
                        "/models/" + name + ".onnx " +
                        (flags.find("--target") == std::string::npos ? "--target cpu " : "") +
                        flags + " -o " + out.string() + " > /dev/null 2>&1";
  if (std::system(command.c_str()) != 0)
    throw std::runtime_error("could not compile models/" + name + ".onnx: " + command);
  return out;
}

/// tiny_mlp: features f32[1,64] -> scores f32[1,8].
const fs::path &mlpArtifact() {
  static fs::path path = compiled("tiny_mlp", "", "tiny_mlp");
  return path;
}

/// tiny_dynamic at batch 2: x f32[2,16] -> y f32[2,4].
const fs::path &pairArtifact() {
  static fs::path path = compiled("tiny_dynamic", "--dim batch=2", "tiny_dynamic_b2");
  return path;
}

/// tiny_mlp for the CUDA target (compiles without a GPU; this machine cannot run it).
const fs::path &cudaArtifact() {
  static fs::path path = compiled("tiny_mlp", "--target cuda", "tiny_mlp_cuda");
  return path;
}

/// A model repository folder holding the artifact as VERSION/model.so, and a loaded instance.
struct Served {
  TRITONBACKEND_Model model;
  TRITONBACKEND_ModelInstance instance;
  std::string loadError, instanceError;

  explicit Served(const std::string &config, bool autoComplete = true,
                  const fs::path &artifact = mlpArtifact(),
                  TRITONSERVER_InstanceGroupKind kind = TRITONSERVER_INSTANCEGROUPKIND_CPU) {
    fs::path repository = scratch() / ("model_" + std::to_string(counter()++));
    fs::create_directories(repository / "1");
    fs::copy_file(artifact, repository / "1" / "model.so", fs::copy_options::overwrite_existing);
    instance.kind = kind;
    model.name = "mlp";
    model.repository = repository.string();
    model.config = config;
    model.autoComplete = autoComplete;
    EXPECT_EQ(take(backend().initialize(nullptr)), "");
    loadError = take(backend().modelInitialize(&model));
    if (!loadError.empty())
      return;
    instance.name = "mlp_0";
    instance.model = &model;
    instanceError = take(backend().instanceInitialize(&instance));
  }
  ~Served() {
    if (instance.state)
      take(backend().instanceFinalize(&instance));
    if (model.state)
      take(backend().modelFinalize(&model));
  }
  static int &counter() {
    static int value = 0;
    return value;
  }
  void execute(std::vector<TRITONBACKEND_Request *> requests) {
    ASSERT_EQ(
        take(backend().execute(&instance, requests.data(), static_cast<uint32_t>(requests.size()))),
        "");
    for (TRITONBACKEND_Request *r : requests) {
      EXPECT_EQ(r->responses, 1) << "every request gets exactly one response";
      EXPECT_TRUE(r->released);
    }
  }
};

const std::string kBatching = R"({"name":"mlp","backend":"sinter","max_batch_size":4})";

std::vector<float> features(size_t rows, int seed, size_t width = 64) {
  std::vector<float> values(rows * width);
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = static_cast<float>(((i * 7 + seed * 13) % 29) - 14) / 14.0f;
  return values;
}

/// A request whose 'features' bytes are cut into buffers of the given sizes (the rest in the last).
TRITONBACKEND_Request request(const std::vector<float> &values, std::vector<int64_t> shape,
                              std::vector<size_t> cuts = {}, const char *name = "features") {
  TRITONBACKEND_Request r;
  TRITONBACKEND_Input input;
  input.name = name;
  input.shape = std::move(shape);
  const unsigned char *bytes = reinterpret_cast<const unsigned char *>(values.data());
  size_t total = values.size() * sizeof(float), at = 0;
  for (size_t cut : cuts) {
    input.buffers.emplace_back(bytes + at, bytes + at + cut);
    at += cut;
  }
  input.buffers.emplace_back(bytes + at, bytes + total);
  r.inputs.push_back(std::move(input));
  return r;
}

/// The artifact's own answer, through libsinter_rt directly: `values` run as consecutive groups of
/// the artifact's batch rows (its one input and one output are f32).
std::vector<float> direct(const std::vector<float> &values,
                          const fs::path &artifact = mlpArtifact()) {
  sinter_model *model = nullptr;
  sinter_session *session = nullptr;
  EXPECT_EQ(sinter_model_load(artifact.c_str(), &model), SINTER_OK) << sinter_last_error();
  EXPECT_EQ(sinter_session_create(model, nullptr, &session), SINTER_OK) << sinter_last_error();
  sinter_tensor_info in, out;
  sinter_model_input_info(model, 0, &in);
  sinter_model_output_info(model, 0, &out);
  size_t inCount = 1, outCount = 1;
  for (int d = 0; d < in.rank; ++d)
    inCount *= static_cast<size_t>(in.dims[d]);
  for (int d = 0; d < out.rank; ++d)
    outCount *= static_cast<size_t>(out.dims[d]);
  std::vector<float> result(values.size() / inCount * outCount);
  for (size_t run = 0; run < values.size() / inCount; ++run) {
    sinter_tensor input{const_cast<float *>(values.data() + run * inCount),
                        inCount * sizeof(float),
                        SINTER_FLOAT32,
                        in.rank,
                        {}};
    sinter_tensor output{
        result.data() + run * outCount, outCount * sizeof(float), SINTER_FLOAT32, out.rank, {}};
    std::copy(in.dims, in.dims + in.rank, input.dims);
    std::copy(out.dims, out.dims + out.rank, output.dims);
    EXPECT_EQ(sinter_session_run(session, &input, 1, &output, 1, nullptr), SINTER_OK)
        << sinter_last_error();
  }
  sinter_session_destroy(session);
  sinter_model_free(model);
  return result;
}

std::vector<float> scores(const TRITONBACKEND_Request &r, const char *name = "scores") {
  for (const TRITONBACKEND_Output &output : r.outputs)
    if (output.name == name) {
      std::vector<float> values(output.data.size() / sizeof(float));
      std::memcpy(values.data(), output.data.data(), output.data.size());
      return values;
    }
  return {};
}

TEST(TritonBackendHost, RefusesAServerOfAnotherApiVersion) {
  for (auto [major, minor] : {std::pair{1u, 18u}, std::pair{2u, 19u}, std::pair{0u, 30u}}) {
    hostApiMajor = major;
    hostApiMinor = minor;
    std::string message = take(backend().initialize(nullptr));
    EXPECT_NE(message.find("backend API is version " + std::to_string(major) + "." +
                           std::to_string(minor)),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("written for 1.19"), std::string::npos) << message;
  }
  hostApiMajor = 1;
  hostApiMinor = 20; // a newer minor adds only what this backend need not know
  EXPECT_EQ(take(backend().initialize(nullptr)), "");
  hostApiMinor = 19;
}

TEST(TritonBackendHost, CompletesTheConfigurationFromTheSignature) {
  Served served(kBatching);
  ASSERT_EQ(served.loadError, "");
  const std::string &config = served.model.config;
  EXPECT_NE(config.find(R"("input":[{"name":"features","data_type":"TYPE_FP32","dims":[64]}])"),
            std::string::npos)
      << config;
  EXPECT_NE(config.find(R"("output":[{"name":"scores","data_type":"TYPE_FP32","dims":[8]}])"),
            std::string::npos)
      << config;
  EXPECT_NE(config.find(R"("max_batch_size":4)"), std::string::npos) << config;
}

TEST(TritonBackendHost, WithoutAutoCompleteTheTensorsMustBeListed) {
  Served served(kBatching, /*autoComplete=*/false);
  EXPECT_NE(served.loadError.find("leaves out input 'features'"), std::string::npos)
      << served.loadError;
}

TEST(TritonBackendHost, GathersAnInputSplitAcrossBuffers) {
  Served served(kBatching);
  ASSERT_EQ(served.loadError + served.instanceError, "");
  std::vector<float> three = features(3, 1), two = features(2, 2);
  // Cuts inside a float, on a row boundary (256 bytes), and a one-byte buffer.
  TRITONBACKEND_Request a = request(three, {3, 64}, {3, 253, 1, 300});
  TRITONBACKEND_Request b = request(two, {2, 64}, {256});
  served.execute({&a, &b});
  ASSERT_TRUE(a.ok) << a.error;
  ASSERT_TRUE(b.ok) << b.error;
  EXPECT_EQ(scores(a), direct(three));
  EXPECT_EQ(scores(b), direct(two));
  ASSERT_EQ(a.outputs.size(), 1u);
  EXPECT_EQ(a.outputs[0].shape, (std::vector<int64_t>{3, 8}));
}

TEST(TritonBackendHost, BadRequestsGetTheirOwnErrorsAndTheOthersAnswers) {
  Served served(kBatching);
  ASSERT_EQ(served.loadError + served.instanceError, "");
  std::vector<float> one = features(1, 3), five = features(5, 4);
  TRITONBACKEND_Request good = request(one, {1, 64});
  TRITONBACKEND_Request wrongType = request(one, {1, 64});
  wrongType.inputs[0].type = TRITONSERVER_TYPE_INT32;
  TRITONBACKEND_Request wrongShape = request(one, {2, 32});
  TRITONBACKEND_Request tooMany = request(five, {5, 64});
  TRITONBACKEND_Request shortBytes = request(one, {1, 64});
  shortBytes.inputs[0].buffers[0].resize(100);
  TRITONBACKEND_Request onGpu = request(one, {1, 64});
  onGpu.inputs[0].memory = TRITONSERVER_MEMORY_GPU;
  TRITONBACKEND_Request missing;
  TRITONBACKEND_Request unknown = request(one, {1, 64});
  unknown.inputs.push_back(request(one, {1, 64}).inputs[0]);
  unknown.inputs.back().name = "extra";
  TRITONBACKEND_Request unknownOutput = request(one, {1, 64});
  unknownOutput.requestedOutputs = {"logits"};
  TRITONBACKEND_Request good2 = request(one, {1, 64});
  served.execute({&wrongType, &good, &wrongShape, &tooMany, &shortBytes, &onGpu, &missing, &unknown,
                  &unknownOutput, &good2});
  auto expectError = [](const TRITONBACKEND_Request &r, const std::string &phrase) {
    EXPECT_FALSE(r.ok);
    EXPECT_NE(r.error.find("sinter backend, model 'mlp': "), std::string::npos) << r.error;
    EXPECT_NE(r.error.find(phrase), std::string::npos) << r.error;
  };
  expectError(wrongType, "input 'features' has data type INT32 but the model expects FP32");
  expectError(wrongShape, "input 'features' has shape [2,32] but the model expects [batch,64]");
  expectError(tooMany, "has batch 5 but the model's max_batch_size is 4");
  expectError(shortBytes,
              "input 'features' carries 100 bytes but its shape [1,64] of FP32 takes 256");
  expectError(onGpu, "is in GPU memory");
  expectError(missing, "the request is missing input 'features'");
  expectError(unknown, "the request has input 'extra', which the model does not have");
  expectError(unknownOutput, "asks for output 'logits', which the model does not have");
  ASSERT_TRUE(good.ok) << good.error;
  ASSERT_TRUE(good2.ok) << good2.error;
  EXPECT_EQ(scores(good), direct(one));
  EXPECT_EQ(scores(good2), direct(one));
}

TEST(TritonBackendHost, RunsABatchTwoArtifactOnWholeMultiplesOnly) {
  const std::string config = R"({"name":"mlp","backend":"sinter","max_batch_size":4})";
  Served served(config, true, pairArtifact());
  ASSERT_EQ(served.loadError + served.instanceError, "");
  std::vector<float> two = features(2, 5, 16), four = features(4, 6, 16),
                     three = features(3, 7, 16);
  TRITONBACKEND_Request a = request(two, {2, 16}, {}, "x");
  TRITONBACKEND_Request b = request(four, {4, 16}, {40}, "x");
  TRITONBACKEND_Request c = request(three, {3, 16}, {}, "x");
  served.execute({&a, &b, &c});
  ASSERT_TRUE(a.ok) << a.error;
  ASSERT_TRUE(b.ok) << b.error;
  EXPECT_EQ(scores(a, "y"), direct(two, pairArtifact()));
  EXPECT_EQ(scores(b, "y"), direct(four, pairArtifact())); // two runs of two rows
  EXPECT_FALSE(c.ok);
  EXPECT_NE(c.error.find("batch dim is 3 but the artifact was compiled for batch 2"),
            std::string::npos)
      << c.error;
}

TEST(TritonBackendHost, RefusesAMaxBatchSizeBelowTheArtifactsBatch) {
  Served served(R"({"name":"mlp","backend":"sinter","max_batch_size":1})", true, pairArtifact());
  EXPECT_NE(served.loadError.find("max_batch_size is 1 but the artifact"), std::string::npos)
      << served.loadError;
  EXPECT_NE(served.loadError.find("was compiled for batch 2"), std::string::npos)
      << served.loadError;
}

TEST(TritonBackendHost, RefusesAGpuInstanceForACpuArtifact) {
  Served served(kBatching, true, mlpArtifact(), TRITONSERVER_INSTANCEGROUPKIND_GPU);
  ASSERT_EQ(served.loadError, "");
  EXPECT_NE(served.instanceError.find(
                "compiled for the CPU target; give the model an instance_group of kind: "
                "KIND_CPU"),
            std::string::npos)
      << served.instanceError;
}

TEST(TritonBackendHost, ACudaArtifactNeedsAGpuInstanceAndReportsItsDevice) {
  {
    Served served(kBatching, true, cudaArtifact(), TRITONSERVER_INSTANCEGROUPKIND_CPU);
    ASSERT_EQ(served.loadError, "");
    EXPECT_NE(
        served.instanceError.find("was compiled for CUDA; give the model an instance_group of "
                                  "kind: KIND_GPU"),
        std::string::npos)
        << served.instanceError;
  }
  // On a GPU instance the session is made on Triton's device: device 3 here, which this machine
  // (no driver, or fewer GPUs) does not have; the instance fails with the runtime's reason.
  TRITONBACKEND_Model model;
  fs::path repository = scratch() / "cuda_model";
  fs::create_directories(repository / "1");
  fs::copy_file(cudaArtifact(), repository / "1" / "model.so",
                fs::copy_options::overwrite_existing);
  model.name = "mlp";
  model.repository = repository.string();
  model.config = kBatching;
  ASSERT_EQ(take(backend().modelInitialize(&model)), "");
  TRITONBACKEND_ModelInstance instance;
  instance.name = "mlp_gpu";
  instance.model = &model;
  instance.kind = TRITONSERVER_INSTANCEGROUPKIND_GPU;
  instance.device = 3;
  std::string message = take(backend().instanceInitialize(&instance));
  if (message.empty()) { // a machine with four GPUs: the session exists; nothing more to check
    take(backend().instanceFinalize(&instance));
  } else {
    EXPECT_NE(message.find("cannot create a sinter session on CUDA device 3: "), std::string::npos)
        << message;
  }
  take(backend().modelFinalize(&model));
}

TEST(TritonBackendHost, RefusesAnArtifactNameOutsideTheVersionFolder) {
  Served served(
      R"({"name":"mlp","parameters":{"artifact":{"string_value":"../../elsewhere.so"}}})");
  EXPECT_NE(served.loadError.find("must name a file in the model's version folder"),
            std::string::npos)
      << served.loadError;
}

TEST(TritonBackendHost, RefusesAConfigurationThatIsNotJson) {
  Served served(R"({"name":"mlp", "max_batch_size": )");
  EXPECT_NE(served.loadError.find("not valid JSON"), std::string::npos) << served.loadError;
}

} // namespace
