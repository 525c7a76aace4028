// How the requests of one execute call become runs of the artifact.
//
// Triton's dynamic batcher hands the backend several requests at once; each request has a batch
// dim of some number of rows (1 for a model that does not batch). An artifact has one fixed shape
// today, with batch B. Gathering the rows of several requests into one run, and padding a run that
// is short of B, are correct only when the model's rows are independent of each other, which
// sinter cannot prove yet. So the rule today is:
//
//   * each request runs on its own: never two requests in one run, and never a padded run;
//   * a request of n rows runs as n / B runs of B consecutive rows (an artifact compiled for
//     batch 1 serves any n by looping); n that is not a multiple of B is refused, with a message.
//
// The plan says which rows of which request fill each run, so an artifact with several shape
// buckets (the serving issue) slots in here: pick a bucket per run, let a run gather slices of
// several requests, and pad where the compiler proved the batch dim independent.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace sinter::triton {

/// Rows [firstRow, firstRow + rows) of request `request`.
struct Slice {
  size_t request;
  int64_t firstRow;
  int64_t rows;
};

/// One call of the artifact: its slices fill its rows in order, then `paddingRows` rows of zeros.
struct Run {
  std::vector<Slice> slices;
  int64_t paddingRows = 0;
};

struct BatchPlan {
  std::vector<Run> runs;
  /// Per request: empty when it is planned, else why it cannot run (and nothing of it runs).
  std::vector<std::string> rejected;
};

/// Plans requests of `requestRows[i]` rows each on an artifact of batch `artifactBatch` (B >= 1).
BatchPlan planBatches(const std::vector<int64_t> &requestRows, int64_t artifactBatch);

} // namespace sinter::triton
