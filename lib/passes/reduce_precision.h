// reduce-precision (`sinter compile --precision fp16|bf16`): float32 weights and activations are
// stored as f16 or bf16. Kernels still compute in f32 (lowering loads reduced values into f32 and
// rounds once when storing), so what changes is memory: weights and the values between kernels
// take half the bytes. The graph's signature does not change: graph inputs are cast down where
// they are read, graph outputs cast back up, so users feed and get float32.
//
//   graph(%x: f32[2,8]) -> (%y) {             graph(%x: f32[2,8]) -> (%y) {
//     %w = constant f32[8,4] ...                %w.f16 = constant f16[8,4] ...
//     %m = MatMul(%x, %w) : f32[2,4]     =>     %x.f16 = Cast(%x) {to = 10} : f16[2,8]
//     %e = Pow(%m, %two) : f32[2,4]             %m = MatMul(%x.f16, %w.f16) : f16[2,4]
//     %y = Relu(%e) : f32[2,4]                  %m.f32 = Cast(%m) {to = 1} : f32[2,4]
//   }                                           %e = Pow(%m.f32, %two) : f32[2,4]
//                                               %e.f16 = Cast(%e) {to = 10} : f16[2,4]
//                                               %y.f16 = Relu(%e.f16) : f16[2,4]
//                                               %y = Cast(%y.f16) {to = 1} : f32[2,4]
//                                             }
//
// Which ops store reduced and which keep f32 is one table (precision_rules.h; the reasons are in
// docs/precision.md): arithmetic, contractions and pooling store reduced; data movement follows
// its data; range-sensitive ops (Pow, sums) compute and store in f32; normalisation statistics,
// softmax logits, arguments of Exp and trigonometry, and decisions (ArgMax, comparisons) also
// have their inputs produced in f32. A node whose float constants do not fit the storage type
// (they would overflow to infinity or flush to zero: masks of -3.4e38, epsilons of 1e-12 in f16)
// computes in f32.
// Only float32 values change: f64, integers and values the model already stores in 16 bits are
// left as they are. With storage type f32 the pass does nothing.
#pragma once

#include "sinter/ir/dtype.h"
#include "sinter/passes/pass.h"

namespace sinter {

class ReducePrecision : public Pass {
public:
  /// `storage`: Float16 or BFloat16 (Float32 makes the pass a no-op). With
  /// `pinNormalizationInputs` false, the normalisations that subtract a mean (LayerNorm and the
  /// like) read their inputs as they are stored and pin nothing: a transformer's residual stream
  /// is then stored in 16 bits (--norm-inputs stored).
  explicit ReducePrecision(DType storage, bool pinNormalizationInputs = true)
      : storage_(storage), pinNormalizationInputs_(pinNormalizationInputs) {}
  std::string_view name() const override { return "reduce-precision"; }
  bool run(Graph &graph) override;

private:
  DType storage_;
  bool pinNormalizationInputs_;
};

} // namespace sinter
