// How the requests of one execute call become runs of the artifact.
//
// Triton's dynamic batcher hands the backend several requests at once; each request has a batch
// dim of some number of rows (1 for a model that does not batch). The artifact runs the batch
// sizes of its shape buckets (docs/runtime.md, "Shape buckets"), or its one batch B. The rule:
//
//   * when the compiler proved the batch dim independent (the artifact's batch symbol is
//     paddable), the rows of all requests, in order, are gathered into runs of at most the largest
//     bucket; a run of rows between buckets runs in the next bucket up, padded by the runtime, and
//     each request's rows are scattered back (a request may span two runs);
//   * otherwise rows may mix, so each request runs on its own: a request of n rows runs as one run
//     when n is a bucket, and (an artifact of one batch B) as n / B runs of B consecutive rows when
//     n is a multiple of B; anything else is refused, with a message.
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

/// One call of the artifact: its slices fill its rows in order.
struct Run {
  std::vector<Slice> slices;
  int64_t rows() const {
    int64_t total = 0;
    for (const Slice &slice : slices)
      total += slice.rows;
    return total;
  }
};

struct BatchPlan {
  std::vector<Run> runs;
  /// Per request: empty when it is planned, else why it cannot run (and nothing of it runs).
  std::vector<std::string> rejected;
};

/// The batch sizes an artifact runs.
struct BatchShapes {
  std::vector<int64_t> buckets; ///< ascending; one entry, B, for an artifact of one shape
  bool paddable = false;        ///< the batch dim is proved independent: gather and pad
  bool bucketed = false;        ///< the sizes are shape buckets (else one fixed batch)
};

/// Plans requests of `requestRows[i]` rows each (0: the request failed already, plan nothing).
BatchPlan planBatches(const std::vector<int64_t> &requestRows, const BatchShapes &shapes);

} // namespace sinter::triton
