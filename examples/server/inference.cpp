#include "inference.h"

#include "json.h"
#include "tensor_json.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>

namespace sinter::serving {
namespace {

/// A request the server refuses: the HTTP status (4xx) and what is wrong.
struct RequestError {
  int status;
  std::string message;
};

[[noreturn]] void refuse(std::string message) { throw RequestError{400, std::move(message)}; }

/// The tensor codec's refusals are the request's.
template <typename Body> auto decoding(Body body) {
  try {
    return body();
  } catch (const TensorJsonError &error) {
    refuse(error.what());
  }
}

sinter_pool_options poolOptions(int threadsPerSession) {
  sinter_pool_options options;
  sinter_pool_options_init(&options);
  options.session.threads = threadsPerSession;
  return options;
}

/// The batch sizes requests may have: those of the symbol that leads every input and output
/// (sinter/batching.hpp), or else of one that leads every input only (an output whose first dim
/// the compiler could not tie to the symbol, as behind a Softmax along the batch): such an
/// artifact takes exact buckets only, each request alone, its outputs' shapes from the runtime.
sinter::rt::BatchShapes requestBatchShapes(const sinter_model *model) {
  sinter::rt::BatchShapes shapes = sinter::rt::bucketedBatchShapes(model);
  if (shapes.bucketed)
    return shapes;
  sinter_symbol_info info{};
  int32_t symbol = sinter::rt::leadingSymbol(model, false);
  if (symbol >= 0 && sinter_model_symbol_info(model, symbol, &info) == SINTER_OK) {
    shapes.buckets.assign(info.buckets, info.buckets + info.bucket_count);
    shapes.bucketed = true; // not paddable: the outputs do not follow the rows
  }
  return shapes;
}

const Json &member(const Json &object, const char *key, const std::string &where) {
  const Json *found = object.find(key);
  if (!found)
    refuse(where + " has no '" + key + "'");
  return *found;
}

} // namespace

std::string InferenceModel::metadataShape(const sinter_tensor_info &info) const {
  std::string shape = shapeJson(info);
  if (batchShapes_.bucketed) // the request chooses the batch: -1, as the v2 protocol writes it
    shape = "[-1" + shape.substr(shape.find_first_of(",]"));
  return shape;
}

std::string errorBody(std::string_view message) {
  return "{\"error\": " + quoteJson(message) + "}";
}

InferenceModel::InferenceModel(const std::string &artifact, std::string name,
                               const ServingOptions &options)
    : name_(std::move(name)), model_(artifact), inputs_(model_.inputs()),
      outputs_(model_.outputs()), poolOptions_(poolOptions(options.threadsPerSession)),
      pool_(model_, options.maxSessions, &poolOptions_),
      batchShapes_(requestBatchShapes(model_.get())),
      outputsLead_(sinter::rt::batchSymbol(model_.get()) >= 0) {
  for (const auto *list : {&inputs_, &outputs_})
    for (const sinter_tensor_info &info : *list)
      if (!*protocolDatatype(info.dtype))
        throw sinter::rt::Error(SINTER_ERROR_UNSUPPORTED,
                                std::string("tensor '") + info.name +
                                    "' has a datatype the v2 JSON protocol cannot carry");
  // One run on zeros before the server says it is ready: it makes the pool's first session (on
  // CUDA: loads the kernels and uploads the weights) and fails here, not at the first request,
  // when the device cannot run the model.
  std::vector<std::vector<uint8_t>> inputBytes, outputBytes;
  std::vector<sinter_tensor> inputTensors, outputTensors;
  for (const sinter_tensor_info &info : inputs_) {
    inputBytes.emplace_back(sinter::rt::elementCount(info) * sinter::rt::dtypeSize(info.dtype));
    inputTensors.push_back(sinter::rt::makeTensor(info, inputBytes.back().data()));
  }
  for (const sinter_tensor_info &info : outputs_) {
    outputBytes.emplace_back(sinter::rt::elementCount(info) * sinter::rt::dtypeSize(info.dtype));
    outputTensors.push_back(sinter::rt::makeTensor(info, outputBytes.back().data()));
  }
  pool_.runHost(inputTensors, outputTensors);

  if (batchShapes_.paddable && outputsLead_) {
    int64_t largest = batchShapes_.buckets.back();
    maxBatchRows_ = options.maxBatch > 0 ? std::min(options.maxBatch, largest) : largest;
    if (maxBatchRows_ > 1) {
      Batcher::Options batching;
      batching.maxBatchRows = maxBatchRows_;
      batching.maxDelay = std::chrono::microseconds(std::max<int64_t>(0, options.maxQueueDelayUs));
      batching.workers = options.maxSessions;
      batcher_ = std::make_unique<Batcher>(pool_, inputs_, outputs_, batchShapes_, batching);
    }
  }
}

size_t InferenceModel::largestRequestBytes() const {
  size_t elements = 0;
  for (const sinter_tensor_info &info : inputs_)
    elements += batchShapes_.bucketed ? sinter::rt::elementCount(info) / size_t(info.dims[0]) *
                                            size_t(batchShapes_.buckets.back())
                                      : sinter::rt::elementCount(info);
  // 32 bytes covers the longest spelling of any element (a float64 or int64) and its comma.
  return 64 * 1024 + 32 * elements;
}

Reply InferenceModel::metadata() const {
  auto list = [&](const std::vector<sinter_tensor_info> &infos) {
    std::string out = "[";
    for (size_t i = 0; i < infos.size(); ++i) {
      std::string shape = metadataShape(infos[i]);
      out += std::string(i ? ", " : "") + "{\"name\": " + quoteJson(infos[i].name) +
             ", \"datatype\": \"" + protocolDatatype(infos[i].dtype) +
             "\", \"shape\": " + shape + "}";
    }
    return out + "]";
  };
  return {200, "{\"name\": " + quoteJson(name_) +
                   ", \"versions\": [\"1\"], \"platform\": \"sinter\", \"inputs\": " +
                   list(inputs_) + ", \"outputs\": " + list(outputs_) + "}"};
}

Reply InferenceModel::stats() const {
  BatchStats stats = batcher_ ? batcher_->stats() : BatchStats{};
  auto histogram = [](const auto &counts) {
    std::string out = "{";
    for (const auto &[size, runs] : counts)
      out += std::string(out.size() > 1 ? ", " : "") + "\"" + std::to_string(size) +
             "\": " + std::to_string(runs);
    return out + "}";
  };
  std::string buckets = "[";
  for (int64_t bucket : batchShapes_.buckets)
    buckets += (buckets.size() > 1 ? ", " : "") + std::to_string(bucket);
  buckets += "]";
  return {200, "{\"name\": " + quoteJson(name_) + ", \"batching\": " +
                   (batcher_ ? "true" : "false") + ", \"buckets\": " + buckets +
                   ", \"paddable\": " + (batchShapes_.paddable ? "true" : "false") +
                   ", \"max_batch_rows\": " + std::to_string(maxBatchRows_) +
                   ", \"batched_requests\": " + std::to_string(stats.requests) +
                   ", \"runs\": " + std::to_string(stats.runs) +
                   ", \"requests_in_shared_runs\": " + std::to_string(stats.requestsInSharedRuns) +
                   ", \"runs_by_rows\": " + histogram(stats.runsByRows) +
                   ", \"runs_by_requests\": " + histogram(stats.runsByRequests) + "}"};
}

Reply InferenceModel::infer(std::string_view body) const {
  try {
    Json request;
    try {
      request = parseJson(body);
    } catch (const JsonError &error) {
      refuse(error.what());
    }
    if (!request.isObject())
      refuse("the request body must be a JSON object");
    const Json &inputList = member(request, "inputs", "the request");
    if (!inputList.isArray())
      refuse("'inputs' must be an array");

    // Each model input from exactly one request input, checked against the signature.
    std::vector<std::vector<uint8_t>> inputBytes(inputs_.size());
    std::vector<bool> given(inputs_.size(), false);
    // The request's batch (the first input's batch dim; the others must agree), when the artifact
    // has a batch symbol; -1 until an input sets it.
    int64_t rows = -1;
    std::string rowsFrom;
    for (const Json &tensor : inputList.items) {
      if (!tensor.isObject())
        refuse("each of 'inputs' must be an object");
      const Json &nameJson = member(tensor, "name", "an input");
      if (!nameJson.isString())
        refuse("an input's 'name' must be a string");
      const std::string &name = nameJson.text;
      std::string where = "input '" + name + "'";
      size_t index = 0;
      while (index < inputs_.size() && name != inputs_[index].name)
        ++index;
      if (index == inputs_.size())
        refuse(where + ": the model has no such input");
      if (given[index])
        refuse(where + " is given twice");
      given[index] = true;
      const sinter_tensor_info &info = inputs_[index];
      const Json &datatype = member(tensor, "datatype", where);
      if (!datatype.isString() || datatype.text != protocolDatatype(info.dtype))
        refuse(where + ": datatype is " + (datatype.isString() ? datatype.text : "not a string") +
               " but the model expects " + protocolDatatype(info.dtype));
      const Json &shape = member(tensor, "shape", where);
      if (!shape.isArray())
        refuse(where + ": 'shape' must be an array of integers");
      std::vector<int64_t> dims;
      for (size_t axis = 0; axis < shape.items.size(); ++axis) {
        if (axis >= SINTER_MAX_RANK)
          refuse(where + ": 'shape' has more dims than any model takes");
        dims.push_back(decoding([&] {
          return decodeInteger<int64_t>(shape.items[axis], where + "'s shape", axis);
        }));
      }
      bool matches = dims.size() == size_t(info.rank);
      // A batch symbol's dim is the request's to choose (checked below); every other dim is fixed.
      for (size_t axis = batchShapes_.bucketed ? 1 : 0; matches && axis < dims.size(); ++axis)
        matches = dims[axis] == info.dims[axis];
      if (!matches)
        refuse(where + ": shape is " + shapeText(dims.data(), dims.size()) +
               " but the model expects " + metadataShape(info));
      sinter_tensor_info requestInfo = info;
      if (batchShapes_.bucketed) {
        if (dims[0] < 1)
          refuse(where + ": the batch dim is " + std::to_string(dims[0]) + "; it must be >= 1");
        if (rows >= 0 && dims[0] != rows)
          refuse(where + ": the batch dim is " + std::to_string(dims[0]) + " but " + rowsFrom +
                 "'s is " + std::to_string(rows) + "; every input must have the same batch");
        if (rows < 0) {
          rows = dims[0];
          rowsFrom = where;
        }
        if (batchShapes_.paddable && rows > batchShapes_.buckets.back())
          refuse(where + ": the batch dim is " + std::to_string(rows) +
                 " but the artifact's largest batch is " +
                 std::to_string(batchShapes_.buckets.back()));
        requestInfo.dims[0] = rows;
      }
      const Json &data = member(tensor, "data", where);
      inputBytes[index] = decoding([&] { return decodeTensorData(data, requestInfo, where); });
    }
    for (size_t i = 0; i < inputs_.size(); ++i)
      if (!given[i])
        refuse(std::string("input '") + inputs_[i].name + "' is missing");
    if (batchShapes_.bucketed && !batchShapes_.paddable) {
      std::string rejected = sinter::rt::planBatches({rows}, batchShapes_).rejected[0];
      if (!rejected.empty())
        refuse(rejected);
    }
    // The request's inputs, and its output infos: the model's, with the request's batch (or, where
    // the outputs do not lead with it, as the runtime gives them for these inputs).
    std::vector<sinter_tensor> inputTensors;
    for (size_t i = 0; i < inputs_.size(); ++i) {
      sinter_tensor_info info = inputs_[i];
      if (batchShapes_.bucketed)
        info.dims[0] = rows;
      inputTensors.push_back(sinter::rt::makeTensor(info, inputBytes[i].data()));
    }
    std::vector<sinter_tensor_info> outputs = outputs_;
    if (batchShapes_.bucketed && outputsLead_)
      for (sinter_tensor_info &info : outputs)
        info.dims[0] = rows;
    else if (batchShapes_.bucketed)
      outputs = model_.outputsFor(inputTensors);

    // Which outputs to return: those named in "outputs", else all.
    std::vector<size_t> wanted;
    if (const Json *outputList = request.find("outputs")) {
      if (!outputList->isArray())
        refuse("'outputs' must be an array");
      for (const Json &output : outputList->items) {
        const Json *name = output.isObject() ? output.find("name") : nullptr;
        if (!name || !name->isString())
          refuse("each of 'outputs' must be an object with a 'name'");
        size_t index = 0;
        while (index < outputs_.size() && name->text != outputs_[index].name)
          ++index;
        if (index == outputs_.size())
          refuse("output '" + name->text + "': the model has no such output");
        wanted.push_back(index);
      }
    } else {
      for (size_t i = 0; i < outputs_.size(); ++i)
        wanted.push_back(i);
    }

    std::vector<std::vector<uint8_t>> outputBytes(outputs_.size());
    if (batcher_) {
      outputBytes = batcher_->run(rows, std::move(inputBytes));
    } else {
      std::vector<sinter_tensor> outputTensors;
      for (size_t i = 0; i < outputs.size(); ++i) {
        outputBytes[i].resize(sinter::rt::elementCount(outputs[i]) *
                              sinter::rt::dtypeSize(outputs[i].dtype));
        outputTensors.push_back(sinter::rt::makeTensor(outputs[i], outputBytes[i].data()));
      }
      pool_.runHost(inputTensors, outputTensors);
    }

    std::string out = "{\"model_name\": " + quoteJson(name_) + ", \"model_version\": \"1\"";
    if (const Json *id = request.find("id"); id && id->isString())
      out += ", \"id\": " + quoteJson(id->text);
    out += ", \"outputs\": [";
    for (size_t k = 0; k < wanted.size(); ++k) {
      const sinter_tensor_info &info = outputs[wanted[k]];
      out += std::string(k ? ", " : "") + "{\"name\": " + quoteJson(info.name) +
             ", \"datatype\": \"" + protocolDatatype(info.dtype) +
             "\", \"shape\": " + shapeJson(info) + ", \"data\": ";
      appendTensorData(out, outputBytes[wanted[k]].data(), info);
      out += "}";
    }
    out += "]}";
    return {200, std::move(out)};
  } catch (const RequestError &error) {
    return {error.status, errorBody(error.message)};
  } catch (const sinter::rt::Error &error) {
    // The runtime refused the run (its own checks) or failed: the request, or the server.
    bool request = error.status() == SINTER_ERROR_INVALID_ARGUMENT;
    return {request ? 400 : 500, errorBody(std::string("run failed: ") + error.what())};
  }
}

} // namespace sinter::serving
