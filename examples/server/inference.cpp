#include "inference.h"

#include "json.h"
#include "tensor_json.h"

#include <charconv>
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

const Json &member(const Json &object, const char *key, const std::string &where) {
  const Json *found = object.find(key);
  if (!found)
    refuse(where + " has no '" + key + "'");
  return *found;
}

} // namespace

std::string errorBody(std::string_view message) {
  return "{\"error\": " + quoteJson(message) + "}";
}

InferenceModel::InferenceModel(const std::string &artifact, std::string name, int maxSessions,
                               int threadsPerSession)
    : name_(std::move(name)), model_(artifact), inputs_(model_.inputs()),
      outputs_(model_.outputs()), poolOptions_(poolOptions(threadsPerSession)),
      pool_(model_, maxSessions, &poolOptions_) {
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
}

size_t InferenceModel::largestRequestBytes() const {
  size_t elements = 0;
  for (const sinter_tensor_info &info : inputs_)
    elements += sinter::rt::elementCount(info);
  // 32 bytes covers the longest spelling of any element (a float64 or int64) and its comma.
  return 64 * 1024 + 32 * elements;
}

Reply InferenceModel::metadata() const {
  auto list = [](const std::vector<sinter_tensor_info> &infos) {
    std::string out = "[";
    for (size_t i = 0; i < infos.size(); ++i)
      out += std::string(i ? ", " : "") + "{\"name\": " + quoteJson(infos[i].name) +
             ", \"datatype\": \"" + protocolDatatype(infos[i].dtype) +
             "\", \"shape\": " + shapeJson(infos[i]) + "}";
    return out + "]";
  };
  return {200, "{\"name\": " + quoteJson(name_) +
                   ", \"versions\": [\"1\"], \"platform\": \"sinter\", \"inputs\": " +
                   list(inputs_) + ", \"outputs\": " + list(outputs_) + "}"};
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
      for (size_t axis = 0; matches && axis < dims.size(); ++axis)
        matches = dims[axis] == info.dims[axis];
      if (!matches)
        refuse(where + ": shape is " + shapeText(dims.data(), dims.size()) +
               " but the model expects " + shapeJson(info));
      const Json &data = member(tensor, "data", where);
      inputBytes[index] = decoding([&] { return decodeTensorData(data, info, where); });
    }
    for (size_t i = 0; i < inputs_.size(); ++i)
      if (!given[i])
        refuse(std::string("input '") + inputs_[i].name + "' is missing");

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

    std::vector<sinter_tensor> inputTensors, outputTensors;
    for (size_t i = 0; i < inputs_.size(); ++i)
      inputTensors.push_back(sinter::rt::makeTensor(inputs_[i], inputBytes[i].data()));
    std::vector<std::vector<uint8_t>> outputBytes(outputs_.size());
    for (size_t i = 0; i < outputs_.size(); ++i) {
      outputBytes[i].resize(sinter::rt::elementCount(outputs_[i]) *
                            sinter::rt::dtypeSize(outputs_[i].dtype));
      outputTensors.push_back(sinter::rt::makeTensor(outputs_[i], outputBytes[i].data()));
    }
    pool_.runHost(inputTensors, outputTensors);

    std::string out = "{\"model_name\": " + quoteJson(name_) + ", \"model_version\": \"1\"";
    if (const Json *id = request.find("id"); id && id->isString())
      out += ", \"id\": " + quoteJson(id->text);
    out += ", \"outputs\": [";
    for (size_t k = 0; k < wanted.size(); ++k) {
      const sinter_tensor_info &info = outputs_[wanted[k]];
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
