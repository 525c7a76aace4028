#include "sinter/passes/pipeline.h"

#include "canonicalize.h"
#include "duplicate_shared_views.h"
#include "eliminate_common_subexpressions.h"
#include "eliminate_dead_code.h"
#include "fold_batch_norm.h"
#include "fold_constants.h"
#include "merge_sibling_matmuls.h"
#include "fuse_attention.h"
#include "move_row_views_before_products.h"
#include "move_scales_after_matmuls.h"
#include "permute_conv_weights.h"
#include "recognize_gelu.h"
#include "recognize_layer_normalization.h"
#include "reduce_precision.h"
#include "sinter/ir/graph.h"
#include "sinter/ir/printer.h"
#include "sinter/ir/verifier.h"
#include "sinter/support/error.h"

#include <ostream>
#include <sstream>
#include <utility>

namespace sinter {

template <typename P> static std::function<std::unique_ptr<Pass>(const PipelineOptions &)> make() {
  return [](const PipelineOptions &) { return std::make_unique<P>(); };
}

const std::vector<PipelineEntry> &defaultPipeline() {
  static const std::vector<PipelineEntry> kPipeline = {
      {"canonicalize",
       "removes no-op nodes, collapses view and transpose chains and turns CastLike into Cast, so "
       "folding sees the constants behind them and the passes after it one form of each pattern",
       make<Canonicalize>(), /*untilFixedPoint=*/true},
      {"fold-constants",
       "shapes are static after import, so shape arithmetic and weight transforms run once, here",
       make<FoldConstants>(), /*untilFixedPoint=*/true},
      {"eliminate-common-subexpressions",
       "after canonicalisation, equal computations (the same Shape of the same value, duplicated "
       "constants) have identical inputs and merge",
       make<EliminateCommonSubexpressions>(), /*untilFixedPoint=*/true},
      {"fold-batch-norm",
       "folds per-channel affine maps into the weights of the contraction before them; the new "
       "weights are constants, so it runs after folding and needs no folding after",
       make<FoldBatchNorm>(), /*untilFixedPoint=*/true},
      {"merge-sibling-matmuls",
       "matrices that multiply one value (query, key and value projections) become one wider "
       "product and slices of it: one launch and one read of the input instead of several; after "
       "CSE, which makes the siblings' inputs one value, and after fold-batch-norm, which needs "
       "each product's own weights",
       make<MergeSiblingMatMuls>(), /*untilFixedPoint=*/true},
      {"recognize-layer-normalization",
       "a decomposed layer norm is two reductions and five elementwise kernels; as one op it is "
       "one kernel. After canonicalisation and CSE, so Identity hops and duplicated means are gone",
       make<RecognizeLayerNormalization>()},
      {"recognize-gelu",
       "an exported GELU is up to eight elementwise nodes that fusion would split where x is read "
       "twice; as one op it is one accessor and fuses as an epilogue",
       make<RecognizeGelu>()},
      {"move-scales-after-matmuls",
       "attention's query and key scalings are kernels that copy whole operands; after the "
       "product they are its epilogue. After merge-sibling-matmuls and the recognisers (which "
       "match the exporters' forms), before reduce-precision (the scaling is then computed in f32)",
       make<MoveScalesAfterMatMuls>()},
      {"move-row-views-before-products",
       "views that move whole rows of a product's output (Reshapes and Transposes that keep the "
       "last axis) end its epilogue, so the elementwise node after them is a kernel copying the "
       "whole output; before the product they are its prologue and that node joins its epilogue "
       "(ViT's residual add after the attention's output projection). After the recognisers and "
       "move-scales-after-matmuls, which match the exported forms",
       make<MoveRowViewsBeforeProducts>()},
      {"fuse-attention",
       "attention written as Q.K^T, scalings, a mask, a softmax and P.V becomes one Attention "
       "node, which the CUDA backend runs as one kernel that never stores the scores; after "
       "move-scales-after-matmuls (the scalings are then the product's), before reduce-precision "
       "(which stores its Q, K and V in 16 bits). Only for the CUDA target at fp16 or bf16, "
       "where the kernel exists",
       [](const PipelineOptions &options) { return std::make_unique<FuseAttention>(options.fusedAttention); }},
      {"reduce-precision",
       "with --precision fp16|bf16, stores float32 weights and activations in 16 bits; after the "
       "rewrites that match float32 patterns and fold weights, so it converts final weights once, "
       "and before dead-code elimination, which removes the float32 constants it replaced",
       [](const PipelineOptions &options) {
         return std::make_unique<ReducePrecision>(options.precision, options.pinNormalizationInputs);
       }},
      {"permute-conv-weights",
       "convolutions whose groups have a multiple of eight channels reduce over (window position, "
       "input channel), channels innermost (conv_layout.h), so their constant weights are stored "
       "[Cout, window, Cin] and read through a Transpose, a view the convolution's kernel reads "
       "through: each weight row stays contiguous. After fold-constants, "
       "which would fold the Transpose back, and reduce-precision, so the final weights move once; "
       "before dead-code elimination, which removes the weights it replaced",
       make<PermuteConvWeights>()},
      {"eliminate-dead-code",
       "folding leaves the nodes and constants it replaced unused (weights before folding, merged "
       "constants)",
       make<EliminateDeadCode>()},
      {"duplicate-shared-views",
       "a view that only contractions read (through views and casts) is copied per reader, so "
       "each reads through it in its own kernel and the view is never stored; last, after "
       "reduce-precision has placed its casts, so the copies carry them",
       make<DuplicateSharedViews>()},
  };
  return kPipeline;
}

std::string canonicalPassName(std::string_view name) {
  // Pass names are spelled as the code is (canonicalize, normalization); these two were
  // spelled "recognise-" once, and scripts may still say so.
  static const std::pair<std::string_view, std::string_view> kOlderSpellings[] = {
      {"recognise-layer-normalization", "recognize-layer-normalization"},
      {"recognise-gelu", "recognize-gelu"},
  };
  for (const auto &[older, current] : kOlderSpellings)
    if (name == older)
      return std::string(current);
  return std::string(name);
}

std::unique_ptr<Pass> createPass(std::string_view name, const PipelineOptions &options) {
  const std::string canonical = canonicalPassName(name);
  for (const PipelineEntry &entry : defaultPipeline())
    if (entry.name == canonical)
      return entry.create(options);
  return nullptr;
}

std::unique_ptr<Pass> createPass(std::string_view name) { return createPass(name, PipelineOptions{}); }

std::string describePipeline() {
  std::ostringstream out;
  int index = 1;
  for (const PipelineEntry &entry : defaultPipeline())
    out << index++ << ". " << entry.name << (entry.untilFixedPoint ? " (to a fixed point)" : "")
        << ": " << entry.reason << "\n";
  return out.str();
}

static void checkPassNames(const PipelineOptions &options) {
  auto known = [](const std::string &name) {
    for (const PipelineEntry &entry : defaultPipeline())
      if (entry.name == canonicalPassName(name))
        return true;
    return false;
  };
  std::vector<std::string> names(options.disabled.begin(), options.disabled.end());
  if (!options.dumpAfter.empty() && options.dumpAfter != "all")
    names.push_back(options.dumpAfter);
  for (const std::string &name : names) {
    if (!known(name)) {
      std::string list;
      for (const PipelineEntry &entry : defaultPipeline())
        list += (list.empty() ? "" : ", ") + entry.name;
      userError("unknown pass '", name, "'; the passes are: ", list);
    }
  }
}

void runPipeline(Graph &graph, const PipelineOptions &options) {
  checkPassNames(options);
  std::set<std::string> disabled;
  for (const std::string &name : options.disabled)
    disabled.insert(canonicalPassName(name));
  const std::string dumpAfter = canonicalPassName(options.dumpAfter);
  for (const PipelineEntry &entry : defaultPipeline()) {
    if (disabled.count(entry.name))
      continue;
    std::unique_ptr<Pass> pass = entry.create(options);
    constexpr int kMaxIterations = 32;
    for (int iteration = 0; iteration < kMaxIterations; ++iteration) {
      bool changed = pass->run(graph);
      if (changed && options.verify)
        verifyGraph(graph, entry.name);
      if (!changed || !entry.untilFixedPoint)
        break;
    }
    if (options.dumpStream && (dumpAfter == "all" || dumpAfter == entry.name)) {
      *options.dumpStream << "// IR after " << entry.name << "\n"
                          << printGraph(graph, PrintOptions{.elideConstantsAbove = 64}) << "\n";
    }
  }
}

} // namespace sinter
