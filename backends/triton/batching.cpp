#include "batching.h"

namespace sinter::triton {

BatchPlan planBatches(const std::vector<int64_t> &requestRows, int64_t artifactBatch) {
  BatchPlan plan;
  plan.rejected.resize(requestRows.size());
  for (size_t request = 0; request < requestRows.size(); ++request) {
    int64_t rows = requestRows[request];
    if (rows < 1 || rows % artifactBatch != 0) {
      plan.rejected[request] =
          "the request's batch dim is " + std::to_string(rows) +
          " but the artifact was compiled for batch " + std::to_string(artifactBatch) +
          ", and it runs only whole multiples of that (it cannot prove the "
          "model's rows independent, so it does not pad); send a batch that is a multiple of " +
          std::to_string(artifactBatch) + ", or compile the model for batch 1";
      continue;
    }
    for (int64_t first = 0; first < rows; first += artifactBatch)
      plan.runs.push_back(Run{{Slice{request, first, artifactBatch}}, 0});
  }
  return plan;
}

} // namespace sinter::triton
