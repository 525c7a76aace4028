// sinter_loadgen: drives a v2-protocol server (sinter_server) with concurrent clients and checks
// every response. It loads the same artifact locally, makes --inputs distinct input sets
// (deterministic, from the signature), computes each set's outputs with a local session, and
// then --concurrency client threads (each with its own keep-alive connection) send --requests
// infer requests in all, set i % --inputs for request i. A response is right when it is HTTP 200
// and every output's datatype, shape and data equal the local outputs bit for bit; wrong
// otherwise; lost when no response came (connection error). It prints requests/s and latency
// percentiles, and exits 0 only when every response was right.
//
// The local outputs are each input set run alone, on a session of its own, in the artifact's plan
// 0 (for a bucketed artifact: its smallest batch, the requests' batch). A batching server runs the
// same rows inside a larger bucket, padded or next to other requests' rows; bit-identical answers
// show that batching changes no number (the CPU kernels compute each row the same way whatever the
// batch: no reduction runs along the batch dim).
//
//   sinter_loadgen MODEL.so --port N [--host 127.0.0.1] [--name NAME] [--concurrency 8]
//                  [--requests 1000] [--inputs 16] [--warmup 20] [--json]
#include "json.h"
#include "tensor_json.h"

#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace sinter::serving;
using Clock = std::chrono::steady_clock;

struct Options {
  std::string model, host = "127.0.0.1", name;
  int port = 0, concurrency = 8, requests = 1000, inputs = 16, warmup = 20;
  bool json = false;
};

/// One input set: its request body and the outputs the model gives for it.
struct Case {
  std::string body;
  std::vector<std::vector<uint8_t>> outputs;
};

std::vector<uint8_t> makeInput(const sinter_tensor_info &info, std::mt19937_64 &random) {
  size_t count = sinter::rt::elementCount(info), size = sinter::rt::dtypeSize(info.dtype);
  std::vector<uint8_t> bytes(count * size);
  std::uniform_real_distribution<float> real(-1.0f, 1.0f);
  std::uniform_int_distribution<int> small(0, 1); // safe as token ids, masks and indices
  for (size_t i = 0; i < count; ++i) {
    uint8_t *at = bytes.data() + i * size;
    auto store = [&](auto value) { std::memcpy(at, &value, sizeof(value)); };
    switch (info.dtype) {
    case SINTER_FLOAT32: store(real(random)); break;
    case SINTER_FLOAT64: store(double(real(random))); break;
    case SINTER_FLOAT16: store(floatToHalf(real(random))); break;
    case SINTER_BOOL: case SINTER_UINT8: case SINTER_INT8: store(uint8_t(small(random))); break;
    case SINTER_INT16: case SINTER_UINT16: store(uint16_t(small(random))); break;
    case SINTER_INT32: case SINTER_UINT32: store(uint32_t(small(random))); break;
    case SINTER_INT64: case SINTER_UINT64: store(uint64_t(small(random))); break;
    default: break;
    }
  }
  return bytes;
}

std::vector<Case> makeCases(const Options &options) {
  sinter::rt::Model model(options.model);
  sinter_session_options sessionOptions;
  sinter_session_options_init(&sessionOptions);
  sessionOptions.threads = 1;
  sinter::rt::Session session(model, &sessionOptions);
  std::vector<sinter_tensor_info> inputs = model.inputs(), outputs = model.outputs();
  std::vector<Case> cases;
  for (int k = 0; k < options.inputs; ++k) {
    std::mt19937_64 random(0x5E41E + uint64_t(k));
    std::vector<std::vector<uint8_t>> inputBytes;
    std::vector<sinter_tensor> inputTensors, outputTensors;
    Case made;
    made.body = "{\"id\": \"" + std::to_string(k) + "\", \"inputs\": [";
    for (size_t i = 0; i < inputs.size(); ++i) {
      inputBytes.push_back(makeInput(inputs[i], random));
      made.body += std::string(i ? ", " : "") + "{\"name\": " + quoteJson(inputs[i].name) +
                   ", \"datatype\": \"" + protocolDatatype(inputs[i].dtype) +
                   "\", \"shape\": " + shapeJson(inputs[i]) + ", \"data\": ";
      appendTensorData(made.body, inputBytes.back().data(), inputs[i]);
      made.body += "}";
    }
    made.body += "]}";
    for (size_t i = 0; i < inputs.size(); ++i)
      inputTensors.push_back(sinter::rt::makeTensor(inputs[i], inputBytes[i].data()));
    made.outputs.resize(outputs.size());
    for (size_t i = 0; i < outputs.size(); ++i) {
      made.outputs[i].resize(sinter::rt::elementCount(outputs[i]) *
                             sinter::rt::dtypeSize(outputs[i].dtype));
      outputTensors.push_back(sinter::rt::makeTensor(outputs[i], made.outputs[i].data()));
    }
    session.runHost(inputTensors, outputTensors);
    cases.push_back(std::move(made));
  }
  return cases;
}

/// "" when the response carries exactly the expected outputs; else what differs.
std::string checkResponse(const std::string &body, const Case &expected,
                          const std::vector<sinter_tensor_info> &outputs, const std::string &id) {
  try {
    Json response = parseJson(body);
    const Json *idJson = response.find("id");
    if (!idJson || !idJson->isString() || idJson->text != id)
      return "the response's id is not the request's (" + id + ")";
    const Json *list = response.find("outputs");
    if (!list || !list->isArray() || list->items.size() != outputs.size())
      return "the response does not have the model's outputs";
    for (size_t i = 0; i < outputs.size(); ++i) {
      const Json &tensor = list->items[i];
      const Json *name = tensor.find("name"), *datatype = tensor.find("datatype");
      const Json *shape = tensor.find("shape"), *data = tensor.find("data");
      if (!name || name->text != outputs[i].name)
        return "output " + std::to_string(i) + " is not '" + outputs[i].name + "'";
      if (!datatype || datatype->text != protocolDatatype(outputs[i].dtype))
        return "output '" + name->text + "' has another datatype";
      std::vector<int64_t> dims;
      for (size_t axis = 0; shape && axis < shape->items.size(); ++axis)
        dims.push_back(decodeInteger<int64_t>(shape->items[axis], "shape", axis));
      if (!shape || shapeText(dims.data(), dims.size()) != shapeJson(outputs[i]))
        return "output '" + name->text + "' has another shape";
      if (!data || decodeTensorData(*data, outputs[i], name->text) != expected.outputs[i])
        return "output '" + name->text + "' differs from the local run";
    }
    return "";
  } catch (const std::exception &error) {
    return std::string("unreadable response: ") + error.what();
  }
}

double percentile(const std::vector<double> &sorted, double p) {
  if (sorted.empty())
    return 0;
  double position = p / 100.0 * double(sorted.size() - 1);
  size_t below = size_t(std::floor(position));
  size_t above = std::min(below + 1, sorted.size() - 1);
  return sorted[below] + (sorted[above] - sorted[below]) * (position - double(below));
}

int usage(const char *problem) {
  std::fprintf(stderr,
               "sinter_loadgen: %s\nusage: sinter_loadgen MODEL.so --port N [--host HOST] "
               "[--name NAME] [--concurrency N] [--requests N] [--inputs N] [--warmup N] "
               "[--json]\n",
               problem);
  return 2;
}

} // namespace

int main(int argc, char **argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (flag == "--json") {
      options.json = true;
      continue;
    }
    if (flag.rfind("--", 0) != 0) {
      options.model = flag;
      continue;
    }
    if (i + 1 >= argc)
      return usage(("missing the value of " + flag).c_str());
    std::string value = argv[++i];
    int number = std::atoi(value.c_str());
    if (flag == "--host")
      options.host = value;
    else if (flag == "--name")
      options.name = value;
    else if (flag == "--port" && number > 0)
      options.port = number;
    else if (flag == "--concurrency" && number >= 1)
      options.concurrency = number;
    else if (flag == "--requests" && number >= 1)
      options.requests = number;
    else if (flag == "--inputs" && number >= 1)
      options.inputs = number;
    else if (flag == "--warmup" && number >= 0)
      options.warmup = number;
    else
      return usage(("bad option or value: " + flag + " " + value).c_str());
  }
  if (options.model.empty() || options.port == 0)
    return usage("a model and --port are needed");
  if (options.name.empty()) {
    std::string base = options.model.substr(options.model.find_last_of('/') + 1);
    options.name = base.size() > 3 && base.substr(base.size() - 3) == ".so"
                       ? base.substr(0, base.size() - 3)
                       : base;
  }

  std::vector<Case> cases;
  std::unique_ptr<sinter::rt::Model> model; // outlives `outputs`, whose names point into it
  std::vector<sinter_tensor_info> outputs;
  try {
    cases = makeCases(options);
    model = std::make_unique<sinter::rt::Model>(options.model);
    outputs = model->outputs();
  } catch (const sinter::rt::Error &error) {
    std::fprintf(stderr, "sinter_loadgen: %s\n", error.what());
    return 1;
  }
  std::string path = "/v2/models/" + options.name + "/infer";

  std::atomic<int> next{0}, wrong{0}, lost{0};
  std::atomic<bool> started{false};
  std::vector<std::vector<double>> latencies(size_t(options.concurrency));
  std::vector<std::string> firstProblem(size_t(options.concurrency));
  std::atomic<int> warmedUp{0};
  Clock::time_point start;
  std::vector<std::thread> clients;
  for (int c = 0; c < options.concurrency; ++c)
    clients.emplace_back([&, c] {
      httplib::Client client(options.host, options.port);
      client.set_keep_alive(true);
      client.set_tcp_nodelay(true);
      client.set_read_timeout(60, 0);
      client.set_write_timeout(60, 0);
      for (int w = 0; w < options.warmup; ++w)
        client.Post(path.c_str(), cases[size_t(w) % cases.size()].body, "application/json");
      if (++warmedUp == options.concurrency) {
        start = Clock::now();
        started = true;
      }
      while (!started.load())
        std::this_thread::yield();
      for (int i = next++; i < options.requests; i = next++) {
        const Case &request = cases[size_t(i) % cases.size()];
        Clock::time_point sent = Clock::now();
        httplib::Result result = client.Post(path.c_str(), request.body, "application/json");
        double ms = std::chrono::duration<double, std::milli>(Clock::now() - sent).count();
        std::string problem;
        if (!result) {
          ++lost;
          problem = "no response (" + httplib::to_string(result.error()) + ")";
        } else if (result->status != 200) {
          ++wrong;
          problem = "HTTP " + std::to_string(result->status) + ": " + result->body;
        } else {
          latencies[size_t(c)].push_back(ms);
          problem = checkResponse(result->body, request, outputs,
                                  std::to_string(size_t(i) % cases.size()));
          if (!problem.empty())
            ++wrong;
        }
        if (!problem.empty() && firstProblem[size_t(c)].empty())
          firstProblem[size_t(c)] = "request " + std::to_string(i) + ": " + problem;
      }
    });
  for (std::thread &client : clients)
    client.join();
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();

  std::vector<double> all;
  for (const std::vector<double> &each : latencies)
    all.insert(all.end(), each.begin(), each.end());
  std::sort(all.begin(), all.end());
  double rate = seconds > 0 ? double(options.requests) / seconds : 0;
  double mean = all.empty() ? 0 : std::accumulate(all.begin(), all.end(), 0.0) / double(all.size());
  if (options.json) {
    std::printf("{\"concurrency\": %d, \"requests\": %d, \"right\": %d, \"wrong\": %d, "
                "\"lost\": %d, \"seconds\": %.4f, \"requests_per_s\": %.1f, \"latency_ms\": "
                "{\"p50\": %.4f, \"p90\": %.4f, \"p99\": %.4f, \"mean\": %.4f, \"max\": %.4f}}\n",
                options.concurrency, options.requests, options.requests - wrong.load() - lost.load(),
                wrong.load(), lost.load(), seconds, rate, percentile(all, 50), percentile(all, 90),
                percentile(all, 99), mean, all.empty() ? 0.0 : all.back());
  } else {
    std::printf("%d requests from %d clients in %.3f s: %.1f requests/s; %d wrong, %d lost\n",
                options.requests, options.concurrency, seconds, rate, wrong.load(), lost.load());
    std::printf("latency (ms): p50 %.3f  p90 %.3f  p99 %.3f  mean %.3f  max %.3f\n",
                percentile(all, 50), percentile(all, 90), percentile(all, 99), mean,
                all.empty() ? 0.0 : all.back());
  }
  for (const std::string &problem : firstProblem)
    if (!problem.empty())
      std::fprintf(stderr, "sinter_loadgen: %s\n", problem.c_str());
  return wrong.load() == 0 && lost.load() == 0 ? 0 : 1;
}
