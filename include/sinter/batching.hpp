// How requests with a batch dim become runs of an artifact: the rule the Triton backend
// (backends/triton) and the example server (examples/server) share. Header-only, over the C ABI of
// runtime.h, so it is installed with runtime.hpp.
//
// A request has a batch dim of some number of rows. The artifact runs the batch sizes of its shape
// buckets (docs/runtime.md, "Shape buckets"), or its one batch B. The rule:
//
//   * when the compiler proved the batch dim independent (the artifact's batch symbol is
//     paddable), the rows of all requests, in order, are gathered into runs of at most the largest
//     bucket; a run of rows between buckets runs in the next bucket up, padded by the runtime, and
//     each request's rows are scattered back (a request may span two runs);
//   * otherwise rows may mix, so each request runs on its own: a request of n rows runs as one run
//     when n is a bucket, and (an artifact of one batch B) as n / B runs of B consecutive rows when
//     n is a multiple of B; anything else is refused, with a message.
#pragma once

#include "sinter/runtime.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace sinter::rt {

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

/// The first bucketed symbol that is every input's first dim, and with `outputsToo` every
/// output's as well, or -1.
inline int32_t leadingSymbol(const sinter_model *model, bool outputsToo) {
  for (int32_t s = 0; s < sinter_model_symbol_count(model); ++s) {
    sinter_symbol_info info{};
    if (sinter_model_symbol_info(model, s, &info) != SINTER_OK)
      continue;
    bool leads = true;
    for (int32_t kind = 0; kind < (outputsToo ? 2 : 1); ++kind) {
      int32_t count = kind ? sinter_model_output_count(model) : sinter_model_input_count(model);
      for (int32_t i = 0; i < count; ++i) {
        const char *symbol = sinter_model_dim_symbol(model, kind, i, 0);
        leads = leads && symbol && std::string(symbol) == info.name;
      }
    }
    if (leads)
      return s;
  }
  return -1;
}

/// The bucketed symbol that is every input's and output's first dim (the batch of a bucketed
/// artifact), or -1.
inline int32_t batchSymbol(const sinter_model *model) { return leadingSymbol(model, true); }

/// The buckets of the artifact's batch symbol (batchSymbol), bucketed = true; an artifact without
/// one gives an empty BatchShapes (bucketed = false), which the caller fills with its fixed batch.
inline BatchShapes bucketedBatchShapes(const sinter_model *model) {
  BatchShapes shapes;
  int32_t batch = batchSymbol(model);
  sinter_symbol_info symbol{};
  if (batch >= 0 && sinter_model_symbol_info(model, batch, &symbol) == SINTER_OK) {
    shapes.buckets.assign(symbol.buckets, symbol.buckets + symbol.bucket_count);
    shapes.paddable = symbol.paddable != 0;
    shapes.bucketed = true;
  }
  return shapes;
}

namespace detail {

inline std::string sizesText(const std::vector<int64_t> &sizes) {
  std::string text;
  for (int64_t size : sizes)
    text += (text.empty() ? "" : ", ") + std::to_string(size);
  return text;
}

/// Every planned request's rows, in order, cut into runs of at most `largest` rows.
inline void gatherAll(const std::vector<int64_t> &requestRows, int64_t largest, BatchPlan &plan) {
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

} // namespace detail

/// Plans requests of `requestRows[i]` rows each (0: the request failed already, plan nothing).
inline BatchPlan planBatches(const std::vector<int64_t> &requestRows, const BatchShapes &shapes) {
  BatchPlan plan;
  plan.rejected.resize(requestRows.size());
  std::vector<int64_t> planned = requestRows;
  for (size_t request = 0; request < requestRows.size(); ++request)
    if (requestRows[request] < 0) {
      plan.rejected[request] = "the request's batch dim is negative";
      planned[request] = 0;
    }
  if (shapes.paddable) {
    detail::gatherAll(planned, shapes.buckets.back(), plan);
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
                  " but the artifact runs batches of exactly " + detail::sizesText(buckets) +
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

} // namespace sinter::rt
