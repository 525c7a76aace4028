// The model behind the example server: one compiled artifact, a pool of sessions on it, and the
// KServe v2 inference protocol's JSON bodies (metadata and infer) turned into runs of the pool and
// back. Nothing here knows HTTP: each call returns a status code and a body, so every request's
// checks are plain code. Thread-safe: infer() may run on any number of threads at once.
//
// An artifact with a batch symbol (every input and output leads with it; `--dim batch=1,2,4,8`)
// takes requests of any batch the artifact runs (sinter/batching.hpp): from 1 to the largest bucket
// when the dim is paddable, and then concurrent requests are batched (batcher.h); exactly a bucket
// otherwise, each request run alone. Every other dim must be plan 0's.
#pragma once

#include "batcher.h"

#include "sinter/batching.hpp"
#include "sinter/runtime.hpp"

#include <memory>

#include <string>
#include <string_view>
#include <vector>

namespace sinter::serving {

struct Reply {
  int status = 200;
  std::string body; ///< JSON
};

/// {"error": message}, as the v2 protocol spells an error.
std::string errorBody(std::string_view message);


struct ServingOptions {
  int maxSessions = 1;       ///< the pool's sessions (and the batcher's workers)
  int threadsPerSession = 1; ///< CPU threads of each session
  int64_t maxBatch = 0;      ///< the most rows a batched run gathers; 0: the largest bucket
  int64_t maxQueueDelayUs = 0;   ///< how long a batched run waits for more requests (0: not)
};

class InferenceModel {
public:
  /// Loads the artifact, makes a pool of sessions (and a batcher, where the artifact's batch dim
  /// is paddable and options.maxBatch is not 1) and runs it once on zeros, so a model the device
  /// cannot run fails here; throws sinter::rt::Error.
  InferenceModel(const std::string &artifact, std::string name, const ServingOptions &options);

  const std::string &name() const { return name_; }
  /// GET /v2/models/NAME: name, versions, platform, inputs and outputs (name, datatype, shape).
  Reply metadata() const;
  /// POST /v2/models/NAME/infer: checks the body against the signature (400 with a message for
  /// anything wrong), runs it on a free session of the pool, returns the outputs.
  Reply infer(std::string_view body) const;
  /// The largest body a valid request can need, with room for formatting (for the body limit).
  size_t largestRequestBytes() const;
  /// GET /v2/models/NAME/stats: how many requests and runs, and the runs by rows and by requests.
  Reply stats() const;
  /// Whether concurrent requests are batched, and up to how many rows.
  bool batching() const { return batcher_ != nullptr; }
  int64_t maxBatchRows() const { return maxBatchRows_; }

private:
  /// The shape in metadata and messages: the batch dim a request chooses is -1.
  std::string metadataShape(const sinter_tensor_info &info) const;

  std::string name_;
  sinter::rt::Model model_;
  std::vector<sinter_tensor_info> inputs_, outputs_;
  sinter_pool_options poolOptions_;
  sinter::rt::Pool pool_;
  sinter::rt::BatchShapes batchShapes_; ///< bucketed = false: no batch symbol
  bool outputsLead_ = false;            ///< every output leads with the batch symbol too
  int64_t maxBatchRows_ = 1;
  std::unique_ptr<Batcher> batcher_;    ///< null: each request runs alone
};

} // namespace sinter::serving
