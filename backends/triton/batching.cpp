#include "batching.h"

#include <algorithm>

namespace sinter::triton {
namespace {

std::string sizesText(const std::vector<int64_t> &sizes) {
  std::string text;
  for (int64_t size : sizes)
    text += (text.empty() ? "" : ", ") + std::to_string(size);
  return text;
}

/// Every planned request's rows, in order, cut into runs of at most `largest` rows.
void gatherAll(const std::vector<int64_t> &requestRows, int64_t largest, BatchPlan &plan) {
  Run run;
  for (size_t request = 0; request < requestRows.size(); ++request)
    for (int64_t first = 0; first < requestRows[request];) {
      int64_t take = std::min(requestRows[request] - first, largest - run.rows());
      run.slices.push_back(Slice{request, first, take});
      first += take;
      if (run.rows() == largest) {
        plan.runs.push_back(std::move(run));
        run = Run{};
      }
    }
  if (!run.slices.empty())
    plan.runs.push_back(std::move(run));
}

} // namespace

BatchPlan planBatches(const std::vector<int64_t> &requestRows, const BatchShapes &shapes) {
  BatchPlan plan;
  plan.rejected.resize(requestRows.size());
  std::vector<int64_t> planned = requestRows;
  for (size_t request = 0; request < requestRows.size(); ++request)
    if (requestRows[request] < 0) {
      plan.rejected[request] = "the request's batch dim is negative";
      planned[request] = 0;
    }
  if (shapes.paddable) {
    gatherAll(planned, shapes.buckets.back(), plan);
    return plan;
  }
  for (size_t request = 0; request < planned.size(); ++request) {
    int64_t rows = planned[request];
    if (rows == 0)
      continue;
    const std::vector<int64_t> &buckets = shapes.buckets;
    if (std::find(buckets.begin(), buckets.end(), rows) != buckets.end()) {
      plan.runs.push_back(Run{{Slice{request, 0, rows}}});
      continue;
    }
    if (!shapes.bucketed && rows % buckets[0] == 0) {
      for (int64_t first = 0; first < rows; first += buckets[0])
        plan.runs.push_back(Run{{Slice{request, first, buckets[0]}}});
      continue;
    }
    plan.rejected[request] =
        shapes.bucketed
            ? "the request's batch dim is " + std::to_string(rows) +
                  " but the artifact runs batches of exactly " + sizesText(buckets) +
                  " (the compiler could not prove the model's rows independent, so it neither "
                  "pads nor splits a request); send one of those batch sizes"
            : "the request's batch dim is " + std::to_string(rows) +
                  " but the artifact was compiled for batch " + std::to_string(buckets[0]) +
                  ", and it runs only whole multiples of that (it cannot prove the model's rows "
                  "independent, so it does not pad); send a batch that is a multiple of " +
                  std::to_string(buckets[0]) + ", or compile the model with batch buckets "
                  "(--dim batch=1,2,4,8)";
  }
  return plan;
}

} // namespace sinter::triton
