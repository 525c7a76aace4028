// The model behind the example server: one compiled artifact, a pool of sessions on it, and the
// KServe v2 inference protocol's JSON bodies (metadata and infer) turned into runs of the pool and
// back. Nothing here knows HTTP: each call returns a status code and a body, so every request's
// checks are plain code. Thread-safe: infer() may run on any number of threads at once.
#pragma once

#include "sinter/runtime.hpp"

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


class InferenceModel {
public:
  /// Loads the artifact, makes a pool of at most `maxSessions` sessions (`threadsPerSession` CPU
  /// threads each) and runs it once on zeros, so a model the device cannot run fails here;
  /// throws sinter::rt::Error.
  InferenceModel(const std::string &artifact, std::string name, int maxSessions,
                 int threadsPerSession);

  const std::string &name() const { return name_; }
  /// GET /v2/models/NAME: name, versions, platform, inputs and outputs (name, datatype, shape).
  Reply metadata() const;
  /// POST /v2/models/NAME/infer: checks the body against the signature (400 with a message for
  /// anything wrong), runs it on a free session of the pool, returns the outputs.
  Reply infer(std::string_view body) const;
  /// The largest body a valid request can need, with room for formatting (for the body limit).
  size_t largestRequestBytes() const;

private:
  std::string name_;
  sinter::rt::Model model_;
  std::vector<sinter_tensor_info> inputs_, outputs_;
  sinter_pool_options poolOptions_;
  sinter::rt::Pool pool_;
};

} // namespace sinter::serving
