// Answering the requests of one execute call: read and check every request, plan the runs
// (sinter/batching.hpp), run them, and send each request exactly one response (its outputs, or an
// error that says what was wrong) before releasing it. Nothing a client sends can take the server down:
// every failure is caught here and becomes that request's error response.

#include "sinter/batching.hpp"
#include "state.h"

#include <chrono>
#include <cstring>
#include <optional>

namespace sinter::triton {
namespace {

uint64_t nowNs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

/// A buffer of a request's input or output: host memory, or (a KIND_GPU instance) GPU memory of
/// the instance's device.
struct Piece {
  const unsigned char *base = nullptr;
  size_t size = 0;
  bool device = false;
};

/// One input of one request: its bytes, in one or more buffers.
struct InputData {
  std::vector<Piece> buffers;
};

/// One request in flight.
struct Work {
  TRITONBACKEND_Request *request = nullptr;
  int64_t rows = 1;
  std::vector<InputData> inputs;        ///< in the signature's order
  std::vector<unsigned char *> outputs; ///< per signature output; null when not requested
  std::vector<bool> outputsOnDevice;    ///< per signature output: the server gave GPU memory
  TRITONBACKEND_Response *response = nullptr;
  std::optional<Failure> failure;
};

/// Reads the request's inputs and checks them against the signature. GPU buffers are taken when
/// the instance runs on a GPU (`gpu`): the runtime reads them on the device.
void readRequest(const ModelState &model, Work &work, bool gpu) {
  TRITONBACKEND_Request *request = work.request;
  uint32_t count = 0;
  check(TRITONBACKEND_RequestInputCount(request, &count), "counting the request's inputs");
  for (uint32_t i = 0; i < count; ++i) {
    const char *name = nullptr;
    check(TRITONBACKEND_RequestInputName(request, i, &name), "reading an input name");
    bool known = false;
    for (const TensorSpec &spec : model.inputs)
      known = known || spec.name == name;
    if (!known)
      fail(TRITONSERVER_ERROR_INVALID_ARG, "the request has input '", name,
           "', which the model does not have");
  }
  std::optional<int64_t> rows;
  work.inputs.resize(model.inputs.size());
  for (size_t index = 0; index < model.inputs.size(); ++index) {
    const TensorSpec &spec = model.inputs[index];
    TRITONBACKEND_Input *input = nullptr;
    if (TRITONSERVER_Error *error =
            TRITONBACKEND_RequestInput(request, spec.name.c_str(), &input)) {
      TRITONSERVER_ErrorDelete(error);
      fail(TRITONSERVER_ERROR_INVALID_ARG, "the request is missing input '", spec.name, "'");
    }
    TRITONSERVER_DataType type;
    const int64_t *shape = nullptr;
    uint32_t rank = 0, bufferCount = 0;
    uint64_t byteSize = 0;
    check(TRITONBACKEND_InputProperties(input, nullptr, &type, &shape, &rank, &byteSize,
                                        &bufferCount),
          "reading an input's properties");
    if (type != spec.tritonType)
      fail(TRITONSERVER_ERROR_INVALID_ARG, "input '", spec.name, "' has data type ",
           protocolTypeName(type), " but the model expects ", protocolTypeName(spec.tritonType));
    std::string got = dimsText(shape, rank);
    if (model.batching()) {
      bool same = rank == spec.dims.size() && rank >= 1 &&
                  std::equal(spec.dims.begin() + 1, spec.dims.end(), shape + 1);
      if (!same) {
        std::string expected = "[batch";
        for (size_t d = 1; d < spec.dims.size(); ++d)
          expected += "," + std::to_string(spec.dims[d]);
        fail(TRITONSERVER_ERROR_INVALID_ARG, "input '", spec.name, "' has shape ", got,
             " but the model expects ", expected, "] with batch at most ",
             model.config.maxBatchSize);
      }
      if (shape[0] < 1 || shape[0] > model.config.maxBatchSize)
        fail(TRITONSERVER_ERROR_INVALID_ARG, "input '", spec.name, "' has batch ", shape[0],
             " but the model's max_batch_size is ", model.config.maxBatchSize);
      if (rows && *rows != shape[0])
        fail(TRITONSERVER_ERROR_INVALID_ARG, "input '", spec.name, "' has batch ", shape[0],
             " but an earlier input has batch ", *rows);
      rows = shape[0];
    } else if (rank != spec.dims.size() || !std::equal(spec.dims.begin(), spec.dims.end(), shape)) {
      fail(TRITONSERVER_ERROR_INVALID_ARG, "input '", spec.name, "' has shape ", got,
           " but the model expects ", dimsText(spec.dims));
    }
    uint64_t expected = static_cast<uint64_t>(rows.value_or(1)) * model.rowBytes(spec);
    if (byteSize != expected)
      fail(TRITONSERVER_ERROR_INVALID_ARG, "input '", spec.name, "' carries ", byteSize,
           " bytes but its shape ", got, " of ", protocolTypeName(type), " takes ", expected);
    uint64_t total = 0;
    for (uint32_t b = 0; b < bufferCount; ++b) {
      const void *base = nullptr;
      uint64_t size = 0;
      TRITONSERVER_MemoryType memory = TRITONSERVER_MEMORY_CPU;
      int64_t memoryId = 0;
      check(TRITONBACKEND_InputBuffer(input, b, &base, &size, &memory, &memoryId),
            "reading an input buffer");
      if (memory == TRITONSERVER_MEMORY_GPU && !gpu)
        fail(TRITONSERVER_ERROR_UNSUPPORTED, "input '", spec.name,
             "' is in GPU memory (CUDA shared memory), but this is a KIND_CPU instance, which "
             "reads inputs from host memory");
      if (size > 0 && !base)
        fail(TRITONSERVER_ERROR_INTERNAL, "input '", spec.name, "' has a null buffer");
      work.inputs[index].buffers.push_back(
          Piece{static_cast<const unsigned char *>(base), size, memory == TRITONSERVER_MEMORY_GPU});
      total += size;
    }
    if (total != byteSize)
      fail(TRITONSERVER_ERROR_INVALID_ARG, "input '", spec.name, "' has ", total,
           " bytes in its buffers but ", byteSize, " by its properties");
    if (bufferCount > 1 && TRITONSERVER_LogIsEnabled(TRITONSERVER_LOG_VERBOSE))
      logMessage(TRITONSERVER_LOG_VERBOSE,
                 detail::concat("sinter backend, model '", model.name, "': input '", spec.name,
                                "' arrived in ", bufferCount, " buffers; gathered"));
  }
  work.rows = rows.value_or(1);
}

/// Creates the response and a buffer for each requested output (host memory preferred; GPU memory
/// is taken from the server on a GPU instance, `gpu`).
void prepareResponse(const ModelState &model, Work &work, bool gpu) {
  check(TRITONBACKEND_ResponseNew(&work.response, work.request), "creating the response");
  work.outputs.assign(model.outputs.size(), nullptr);
  work.outputsOnDevice.assign(model.outputs.size(), false);
  uint32_t requested = 0;
  check(TRITONBACKEND_RequestOutputCount(work.request, &requested),
        "counting the requested outputs");
  std::vector<size_t> wanted;
  for (uint32_t i = 0; i < requested; ++i) {
    const char *name = nullptr;
    check(TRITONBACKEND_RequestOutputName(work.request, i, &name),
          "reading a requested output's name");
    size_t index = 0;
    while (index < model.outputs.size() && model.outputs[index].name != name)
      ++index;
    if (index == model.outputs.size())
      fail(TRITONSERVER_ERROR_INVALID_ARG, "the request asks for output '", name,
           "', which the model does not have");
    wanted.push_back(index);
  }
  if (requested == 0) // none named: all of them
    for (size_t index = 0; index < model.outputs.size(); ++index)
      wanted.push_back(index);
  for (size_t index : wanted) {
    const TensorSpec &spec = model.outputs[index];
    std::vector<int64_t> shape = spec.dims;
    if (model.batching())
      shape[0] = work.rows;
    uint64_t bytes = static_cast<uint64_t>(work.rows) * model.rowBytes(spec);
    TRITONBACKEND_Output *output = nullptr;
    check(TRITONBACKEND_ResponseOutput(work.response, &output, spec.name.c_str(), spec.tritonType,
                                       shape.data(), static_cast<uint32_t>(shape.size())),
          "creating an output");
    void *buffer = nullptr;
    TRITONSERVER_MemoryType memory = TRITONSERVER_MEMORY_CPU;
    int64_t memoryId = 0;
    check(TRITONBACKEND_OutputBuffer(output, &buffer, bytes, &memory, &memoryId),
          "allocating an output");
    if (memory == TRITONSERVER_MEMORY_GPU && !gpu)
      fail(TRITONSERVER_ERROR_UNSUPPORTED, "the server gave output '", spec.name,
           "' a GPU buffer, but this is a KIND_CPU instance, which writes host memory");
    if (bytes > 0 && !buffer)
      fail(TRITONSERVER_ERROR_INTERNAL, "the server gave output '", spec.name, "' a null buffer");
    work.outputs[index] = static_cast<unsigned char *>(buffer);
    work.outputsOnDevice[index] = memory == TRITONSERVER_MEMORY_GPU;
  }
}

/// Copies between host and the session's device memory through the runtime (the backend links no
/// CUDA of its own).
void copyMemory(sinter_session *session, void *destination, bool destinationOnDevice,
                const void *source, bool sourceOnDevice, size_t bytes) {
  if (!destinationOnDevice && !sourceOnDevice) {
    std::memcpy(destination, source, bytes);
    return;
  }
  if (sinter_status status = sinter_session_copy(
          session, destination, destinationOnDevice ? SINTER_MEMORY_DEVICE : SINTER_MEMORY_HOST,
          source, sourceOnDevice ? SINTER_MEMORY_DEVICE : SINTER_MEMORY_HOST, bytes))
    fail(codeOf(status), "copying a tensor between host and GPU memory failed: ",
         sinter_last_error());
}

/// Copies bytes [offset, offset + size) of an input spread over buffers into host `destination`.
void gather(sinter_session *session, const InputData &input, size_t offset, size_t size,
            unsigned char *destination) {
  for (const Piece &piece : input.buffers) {
    const unsigned char *base = piece.base;
    size_t length = piece.size;
    if (size == 0)
      return;
    if (offset >= length) {
      offset -= length;
      continue;
    }
    size_t take = std::min(length - offset, size);
    copyMemory(session, destination, false, base + offset, piece.device, take);
    destination += take;
    size -= take;
    offset = 0;
  }
}

/// Bytes [offset, offset + size) where one buffer holds all of them (base null otherwise).
Piece inPlace(const InputData &input, size_t offset, size_t size) {
  for (const Piece &piece : input.buffers) {
    if (offset < piece.size)
      return offset + size <= piece.size ? Piece{piece.base + offset, size, piece.device} : Piece{};
    offset -= piece.size;
  }
  return Piece{};
}

/// A tensor of `rows` batch rows of `spec` (its own dims when the model does not batch).
sinter_tensor tensorFor(const ModelState &model, const TensorSpec &spec, void *data, int64_t rows) {
  sinter_tensor tensor{};
  tensor.data = data;
  tensor.dtype = spec.dtype;
  tensor.rank = static_cast<int32_t>(spec.dims.size());
  std::copy(spec.dims.begin(), spec.dims.end(), tensor.dims);
  if (!model.batching())
    rows = model.artifactBatch;
  else
    tensor.dims[0] = rows;
  tensor.byte_size = static_cast<size_t>(rows) * model.rowBytes(spec);
  return tensor;
}

/// One run of the artifact over the slices of `run` (its rows: a bucket, or a size the runtime
/// pads to the next one up): inputs read in place when one slice lies in one buffer, else gathered
/// into staging; outputs written in place when the run is one slice of a requested output, else
/// staged and scattered.
void executeRun(InstanceState &instance, std::vector<Work> &works, const Run &run) {
  const ModelState &model = *instance.model;
  bool single = run.slices.size() == 1;
  const int64_t rows = run.rows();
  std::vector<sinter_tensor> inputs, outputs;
  std::vector<int32_t> inputMemory, outputMemory;
  for (size_t i = 0; i < model.inputs.size(); ++i) {
    const TensorSpec &spec = model.inputs[i];
    size_t rowBytes = model.rowBytes(spec);
    Piece found;
    if (single) {
      const Slice &slice = run.slices[0];
      found =
          inPlace(works[slice.request].inputs[i], slice.firstRow * rowBytes, slice.rows * rowBytes);
    }
    const unsigned char *data = found.base;
    inputMemory.push_back(found.base && found.device ? SINTER_MEMORY_DEVICE : SINTER_MEMORY_HOST);
    if (!data) {
      std::vector<unsigned char> &staging = instance.inputStaging[i];
      staging.resize(static_cast<size_t>(rows) * rowBytes);
      size_t at = 0;
      for (const Slice &slice : run.slices) {
        gather(instance.session, works[slice.request].inputs[i], slice.firstRow * rowBytes,
               slice.rows * rowBytes, staging.data() + at);
        at += slice.rows * rowBytes;
      }
      data = staging.data();
    }
    inputs.push_back(tensorFor(model, spec, const_cast<unsigned char *>(data),
                               rows)); // the runtime only reads inputs
  }
  std::vector<bool> staged(model.outputs.size(), false);
  for (size_t o = 0; o < model.outputs.size(); ++o) {
    const TensorSpec &spec = model.outputs[o];
    unsigned char *data = nullptr;
    bool onDevice = false;
    if (single && works[run.slices[0].request].outputs[o]) {
      data =
          works[run.slices[0].request].outputs[o] + run.slices[0].firstRow * model.rowBytes(spec);
      onDevice = works[run.slices[0].request].outputsOnDevice[o];
    }
    outputMemory.push_back(onDevice ? SINTER_MEMORY_DEVICE : SINTER_MEMORY_HOST);
    if (!data) {
      instance.outputStaging[o].resize(static_cast<size_t>(rows) * model.rowBytes(spec));
      data = instance.outputStaging[o].data();
      staged[o] = true;
    }
    outputs.push_back(tensorFor(model, spec, data, rows));
  }
  // A GPU instance: each buffer where it is (host, or the GPU memory the server gave), copied in and
  // out by the runtime on the instance's device; it returns when the outputs are written.
  sinter_status status =
      instance.cuda
          ? sinter_session_run_memory(instance.session, inputs.data(), inputMemory.data(),
                                      int32_t(inputs.size()), outputs.data(), outputMemory.data(),
                                      int32_t(outputs.size()))
          : sinter_session_run(instance.session, inputs.data(), int32_t(inputs.size()),
                               outputs.data(), int32_t(outputs.size()), nullptr);
  if (status != SINTER_OK)
    fail(codeOf(status), "the sinter run failed: ", sinter_last_error());
  for (size_t o = 0; o < model.outputs.size(); ++o) {
    if (!staged[o])
      continue;
    size_t rowBytes = model.rowBytes(model.outputs[o]);
    size_t at = 0;
    for (const Slice &slice : run.slices) {
      if (unsigned char *destination = works[slice.request].outputs[o])
        copyMemory(instance.session, destination + slice.firstRow * rowBytes,
                   works[slice.request].outputsOnDevice[o], instance.outputStaging[o].data() + at,
                   false, slice.rows * rowBytes);
      at += slice.rows * rowBytes;
    }
  }
}

/// Runs `body` for one request; a failure becomes that request's failure.
template <typename Body> void forRequest(Work &work, Body &&body) {
  if (work.failure)
    return;
  try {
    body();
  } catch (const Failure &failure) {
    work.failure = failure;
  } catch (const UserError &error) {
    work.failure = Failure{TRITONSERVER_ERROR_INVALID_ARG, error.what()};
  } catch (const std::bad_alloc &) {
    work.failure = Failure{TRITONSERVER_ERROR_UNAVAILABLE, "out of host memory"};
  } catch (const std::exception &error) {
    work.failure =
        Failure{TRITONSERVER_ERROR_INTERNAL, std::string("internal error: ") + error.what()};
  } catch (...) {
    work.failure = Failure{TRITONSERVER_ERROR_INTERNAL, "internal error"};
  }
}

void respond(TRITONBACKEND_ModelInstance *instance, const ModelState &model, Work &work,
             uint64_t execStart, uint64_t computeStart, uint64_t computeEnd) {
  TRITONSERVER_Error *error = nullptr;
  if (work.failure) {
    error = TRITONSERVER_ErrorNew(
        work.failure->code,
        ("sinter backend, model '" + model.name + "': " + work.failure->message).c_str());
    if (!work.response) {
      if (TRITONSERVER_Error *e = TRITONBACKEND_ResponseNew(&work.response, work.request)) {
        logMessage(TRITONSERVER_LOG_ERROR,
                   std::string("sinter backend: cannot create an error response: ") +
                       TRITONSERVER_ErrorMessage(e));
        TRITONSERVER_ErrorDelete(e);
        work.response = nullptr;
      }
    }
  }
  if (work.response) {
    if (TRITONSERVER_Error *e = TRITONBACKEND_ResponseSend(
            work.response, TRITONSERVER_RESPONSE_COMPLETE_FINAL, error)) {
      logMessage(TRITONSERVER_LOG_ERROR, std::string("sinter backend: cannot send a response: ") +
                                             TRITONSERVER_ErrorMessage(e));
      TRITONSERVER_ErrorDelete(e);
    }
  }
  if (error)
    TRITONSERVER_ErrorDelete(error);
  if (TRITONSERVER_Error *e = TRITONBACKEND_ModelInstanceReportStatistics(
          instance, work.request, !work.failure, execStart, computeStart, computeEnd, nowNs()))
    TRITONSERVER_ErrorDelete(e);
  if (TRITONSERVER_Error *e =
          TRITONBACKEND_RequestRelease(work.request, TRITONSERVER_REQUEST_RELEASE_ALL)) {
    logMessage(TRITONSERVER_LOG_ERROR, std::string("sinter backend: cannot release a request: ") +
                                           TRITONSERVER_ErrorMessage(e));
    TRITONSERVER_ErrorDelete(e);
  }
}

} // namespace

void executeRequests(TRITONBACKEND_ModelInstance *instance, InstanceState &state,
                     TRITONBACKEND_Request **requests, uint32_t count) {
  const ModelState &model = *state.model;
  uint64_t execStart = nowNs();
  std::vector<Work> works(count);
  for (uint32_t i = 0; i < count; ++i) {
    works[i].request = requests[i];
    forRequest(works[i], [&] {
      if (!requests[i])
        fail(TRITONSERVER_ERROR_INTERNAL, "the server passed a null request");
      readRequest(model, works[i], state.cuda);
    });
  }
  // Plan the requests that read well (the others keep a planned row count of 0, and no run).
  std::vector<int64_t> rows(count, 0);
  for (uint32_t i = 0; i < count; ++i)
    if (!works[i].failure)
      rows[i] = works[i].rows;
  BatchPlan plan = planBatches(rows, state.model->batchShapes);
  for (uint32_t i = 0; i < count; ++i)
    if (!works[i].failure && !plan.rejected[i].empty())
      works[i].failure = Failure{TRITONSERVER_ERROR_INVALID_ARG, plan.rejected[i]};
  for (Work &work : works)
    forRequest(work, [&] { prepareResponse(model, work, state.cuda); });

  uint64_t computeStart = nowNs();
  for (const Run &run : plan.runs) {
    bool live = true;
    for (const Slice &slice : run.slices)
      live = live && !works[slice.request].failure;
    if (!live)
      continue; // a request of this run already failed: it gets its error, not a partial answer
    std::optional<Failure> failure;
    try {
      executeRun(state, works, run);
    } catch (const Failure &caught) {
      failure = caught;
    } catch (const std::bad_alloc &) {
      failure = Failure{TRITONSERVER_ERROR_UNAVAILABLE, "out of host memory"};
    } catch (const std::exception &error) {
      failure =
          Failure{TRITONSERVER_ERROR_INTERNAL, std::string("internal error: ") + error.what()};
    }
    if (failure)
      for (const Slice &slice : run.slices)
        works[slice.request].failure = failure;
  }
  uint64_t computeEnd = nowNs();

  uint64_t batchRows = 0;
  for (Work &work : works) {
    if (!work.failure)
      batchRows += static_cast<uint64_t>(work.rows);
    if (work.request)
      respond(instance, model, work, execStart, computeStart, computeEnd);
  }
  if (batchRows > 0)
    if (TRITONSERVER_Error *e = TRITONBACKEND_ModelInstanceReportBatchStatistics(
            instance, batchRows, execStart, computeStart, computeEnd, nowNs()))
      TRITONSERVER_ErrorDelete(e);
}

} // namespace sinter::triton
