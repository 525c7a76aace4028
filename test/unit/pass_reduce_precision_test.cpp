// reduce-precision (lib/passes/reduce_precision.h): what becomes f16/bf16, what stays f32, and
// the casts at the graph's boundary. Each rewrite is also evaluated by the reference evaluator on
// the same inputs as the original graph and must agree within the storage type's rounding.
// Constant bytes are little-endian IEEE halves (1.0 = 0x3C00, 0.5 = 0x3800, 2.0 = 0x4000,
// -1.0 = 0xBC00) and bfloat16s (the top half of the float32 rounded to nearest even:
// 1e-12 -> 0x2B8D, 100000 -> 0x47C3).
#include "pass_test_util.h"

using namespace sinter;
using sinter::testing::expectSameResults;
using sinter::testing::expectUnchanged;

namespace {

/// Runs reduce-precision with `storage` once (it is not a fixed-point pass), verifies the graph,
/// checks it against the original within `tolerance`, and prints it.
std::string reduce(const std::string &text, DType storage, double tolerance, bool *changed = nullptr,
                   bool pinNormalizationInputs = true) {
  std::unique_ptr<Graph> before = parseGraph(text);
  verifyGraph(*before, "the test's input");
  std::unique_ptr<Graph> after = before->clone();
  PipelineOptions options;
  options.precision = storage;
  options.pinNormalizationInputs = pinNormalizationInputs;
  std::unique_ptr<Pass> pass = createPass("reduce-precision", options);
  EXPECT_TRUE(pass);
  bool didChange = pass->run(*after);
  if (changed)
    *changed = didChange;
  verifyGraph(*after, "reduce-precision");
  expectSameResults(*before, *after, tolerance);
  return printGraph(*after);
}

std::string toF16(const std::string &text) { return reduce(text, DType::Float16, 2e-3); }

} // namespace

TEST(ReducePrecision, StoresWeightsAndActivationsInHalfWithCastsAtTheBoundary) {
  // The MatMul and the Relu store f16; Pow computes and stores f32 (its result may pass 65504),
  // its constant exponent stays f32.
  EXPECT_EQ(toF16(R"(graph @main(%x: f32[1,2]) -> (%y) {
  %w = constant f32[2,2] [1.0, 0.5, 2.0, -1.0]
  %two = constant f32[] [2.0]
  %m = MatMul(%x, %w) : f32[1,2]
  %e = Pow(%m, %two) : f32[1,2]
  %y = Relu(%e) : f32[1,2]
  return
})"),
            R"(graph @main(%x: f32[1,2]) -> (%y) {
  %w = constant f32[2,2] [1.0, 0.5, 2.0, -1.0]
  %two = constant f32[] [2.0]
  %w.f16 = constant f16[2,2] dense<"0x003C0038004000BC">
  %x.f16 = Cast(%x) {to = 10} : f16[1,2]
  %m = MatMul(%x.f16, %w.f16) : f16[1,2]
  %m.f32 = Cast(%m) {to = 1} : f32[1,2]
  %e = Pow(%m.f32, %two) : f32[1,2]
  %e.f16 = Cast(%e) {to = 10} : f16[1,2]
  %y.f16 = Relu(%e.f16) : f16[1,2]
  %y = Cast(%y.f16) {to = 1} : f32[1,2]
  return
}
)");
}

TEST(ReducePrecision, SoftmaxLogitsAreProducedInFloat32) {
  // The logits' MatMul keeps its f32 sums, from operands rounded like any other contraction's
  // (and widened again); the probabilities are cast down for the next MatMul.
  EXPECT_EQ(toF16(R"(graph @main(%q: f32[2,4], %k: f32[4,3], %v: f32[3,4]) -> (%y) {
  %s = MatMul(%q, %k) : f32[2,3]
  %p = Softmax(%s) {axis = -1} : f32[2,3]
  %y = MatMul(%p, %v) : f32[2,4]
  return
})"),
            R"(graph @main(%q: f32[2,4], %k: f32[4,3], %v: f32[3,4]) -> (%y) {
  %q.f16 = Cast(%q) {to = 10} : f16[2,4]
  %q.f16.f32 = Cast(%q.f16) {to = 1} : f32[2,4]
  %k.f16 = Cast(%k) {to = 10} : f16[4,3]
  %k.f16.f32 = Cast(%k.f16) {to = 1} : f32[4,3]
  %s = MatMul(%q.f16.f32, %k.f16.f32) : f32[2,3]
  %p = Softmax(%s) {axis = -1} : f32[2,3]
  %p.f16 = Cast(%p) {to = 10} : f16[2,3]
  %v.f16 = Cast(%v) {to = 10} : f16[3,4]
  %y.f16 = MatMul(%p.f16, %v.f16) : f16[2,4]
  %y = Cast(%y.f16) {to = 1} : f32[2,4]
  return
}
)");
}

TEST(ReducePrecision, NormalisationInputsStayFloat32ThroughViews) {
  // LayerNormalization reads %r through a Reshape: both the Reshape and the residual Add that
  // produces %r stay f32, and the MatMul whose result the Add reads keeps its f32 sums (its
  // operands are rounded). Another reader of %r, the Relu, gets it cast down.
  EXPECT_EQ(toF16(R"(graph @main(%x: f32[2,4], %w: f32[4,4], %g: f32[4]) -> (%y, %z) {
  %shape = constant i64[2] [2, 4]
  %h = MatMul(%x, %w) : f32[2,4]
  %r = Add(%x, %h) : f32[2,4]
  %t = Reshape(%r, %shape) : f32[2,4]
  %y = LayerNormalization(%t, %g) {axis = -1} : f32[2,4]
  %z = Relu(%r) : f32[2,4]
  return
})"),
            R"(graph @main(%x: f32[2,4], %w: f32[4,4], %g: f32[4]) -> (%y, %z) {
  %shape = constant i64[2] [2, 4]
  %x.f16 = Cast(%x) {to = 10} : f16[2,4]
  %x.f16.f32 = Cast(%x.f16) {to = 1} : f32[2,4]
  %w.f16 = Cast(%w) {to = 10} : f16[4,4]
  %w.f16.f32 = Cast(%w.f16) {to = 1} : f32[4,4]
  %h = MatMul(%x.f16.f32, %w.f16.f32) : f32[2,4]
  %r = Add(%x, %h) : f32[2,4]
  %t = Reshape(%r, %shape) : f32[2,4]
  %y = LayerNormalization(%t, %g) {axis = -1} : f32[2,4]
  %r.f16 = Cast(%r) {to = 10} : f16[2,4]
  %z.f16 = Relu(%r.f16) : f16[2,4]
  %z = Cast(%z.f16) {to = 1} : f32[2,4]
  return
}
)");
}

// --norm-inputs stored: the LayerNorm pins nothing. The residual Add and the Reshape store f16
// like any Reduced and Follow node, the MatMul rounds its result, and the LayerNorm (still f32
// inside) reads the stored value through a Cast up that fuses into its kernel.
TEST(ReducePrecision, NormalisationInputsMayBeReadAsStored) {
  const std::string text = R"(graph @main(%x: f32[2,4], %w: f32[4,4], %g: f32[4]) -> (%y) {
  %shape = constant i64[2] [2, 4]
  %h = MatMul(%x, %w) : f32[2,4]
  %r = Add(%x, %h) : f32[2,4]
  %t = Reshape(%r, %shape) : f32[2,4]
  %y = LayerNormalization(%t, %g) {axis = -1} : f32[2,4]
  return
})";
  EXPECT_EQ(reduce(text, DType::Float16, 2e-3, nullptr, false),
            R"(graph @main(%x: f32[2,4], %w: f32[4,4], %g: f32[4]) -> (%y) {
  %shape = constant i64[2] [2, 4]
  %x.f16 = Cast(%x) {to = 10} : f16[2,4]
  %w.f16 = Cast(%w) {to = 10} : f16[4,4]
  %h = MatMul(%x.f16, %w.f16) : f16[2,4]
  %r = Add(%x.f16, %h) : f16[2,4]
  %t = Reshape(%r, %shape) : f16[2,4]
  %t.f32 = Cast(%t) {to = 1} : f32[2,4]
  %y = LayerNormalization(%t.f32, %g) {axis = -1} : f32[2,4]
  return
}
)");
  // The default keeps the stream in f32.
  std::string pinned = toF16(text);
  EXPECT_NE(pinned.find("%r = Add(%x, %h) : f32[2,4]"), std::string::npos) << pinned;
}

TEST(ReducePrecision, IndicesAreComputedFromFloat32Values) {
  // ArgMax's input is the MatMul's f32 sums, unrounded, so rounding the result cannot change
  // which element is largest (the operands are rounded, as every contraction's are).
  EXPECT_EQ(toF16(R"(graph @main(%x: f32[2,3], %w: f32[3,5]) -> (%i) {
  %s = MatMul(%x, %w) : f32[2,5]
  %i = ArgMax(%s) {axis = 1} : i64[2,1]
  return
})"),
            R"(graph @main(%x: f32[2,3], %w: f32[3,5]) -> (%i) {
  %x.f16 = Cast(%x) {to = 10} : f16[2,3]
  %x.f16.f32 = Cast(%x.f16) {to = 1} : f32[2,3]
  %w.f16 = Cast(%w) {to = 10} : f16[3,5]
  %w.f16.f32 = Cast(%w.f16) {to = 1} : f32[3,5]
  %s = MatMul(%x.f16.f32, %w.f16.f32) : f32[2,5]
  %i = ArgMax(%s) {axis = 1} : i64[2,1]
  return
}
)");
}

TEST(ReducePrecision, ConstantsOutsideTheStorageRangeKeepTheirNodeInFloat32) {
  // In f16, 1e-12 flushes to zero and 100000 overflows: both nodes stay f32, nothing changes.
  // bf16 has float32's exponent range, so there both nodes store bf16.
  const std::string text = R"(graph @main(%x: f32[3]) -> (%y, %z) {
  %eps = constant f32[] [1e-12]
  %big = constant f32[] [1e+05]
  %y = Add(%x, %eps) : f32[3]
  %z = Mul(%x, %big) : f32[3]
  return
})";
  bool changed = true;
  EXPECT_EQ(reduce(text, DType::Float16, 0, &changed), printGraph(*parseGraph(text)));
  EXPECT_FALSE(changed);
  EXPECT_EQ(reduce(text, DType::BFloat16, 1e-2, &changed),
            R"(graph @main(%x: f32[3]) -> (%y, %z) {
  %eps = constant f32[] [1e-12]
  %big = constant f32[] [1e+05]
  %eps.bf16 = constant bf16[] dense<"0x8D2B">
  %big.bf16 = constant bf16[] dense<"0xC347">
  %x.bf16 = Cast(%x) {to = 16} : bf16[3]
  %y.bf16 = Add(%x.bf16, %eps.bf16) : bf16[3]
  %z.bf16 = Mul(%x.bf16, %big.bf16) : bf16[3]
  %y = Cast(%y.bf16) {to = 1} : f32[3]
  %z = Cast(%z.bf16) {to = 1} : f32[3]
  return
}
)");
  EXPECT_TRUE(changed);
}

TEST(ReducePrecision, LeavesOtherTypesAloneAndShapesReadAnyType) {
  // f64 and integer arithmetic are untouched; Shape reads the f16 value with no cast; a view
  // of a graph input whose only use is a Relu (which stores f16) moves f16: the cast comes
  // before the view.
  EXPECT_EQ(toF16(R"(graph @main(%x: f32[2,3], %d: f64[2,3], %i: i64[2,3]) -> (%y, %s, %e, %j) {
  %t = Transpose(%x) {perm = [1, 0]} : f32[3,2]
  %y = Relu(%t) : f32[3,2]
  %s = Shape(%y) : i64[2]
  %e = Relu(%d) : f64[2,3]
  %j = Add(%i, %i) : i64[2,3]
  return
})"),
            R"(graph @main(%x: f32[2,3], %d: f64[2,3], %i: i64[2,3]) -> (%y, %s, %e, %j) {
  %x.f16 = Cast(%x) {to = 10} : f16[2,3]
  %t = Transpose(%x.f16) {perm = [1, 0]} : f16[3,2]
  %y.f16 = Relu(%t) : f16[3,2]
  %s = Shape(%y.f16) : i64[2]
  %e = Relu(%d) : f64[2,3]
  %j = Add(%i, %i) : i64[2,3]
  %y = Cast(%y.f16) {to = 1} : f32[3,2]
  return
}
)");
}

TEST(ReducePrecision, AViewRoundsBeforeItOnlyWhenEveryUseWantsTheStorageType) {
  // %t's uses are a MatMul and a Flatten that feeds only a Relu: the cast moves above %t.
  // %u also feeds a Softmax, which reads float32: it stays float32, and the MatMul
  // after it casts. %v is a graph output: it stays float32.
  EXPECT_EQ(toF16(R"(graph @main(%x: f32[2,3], %w: f32[3,3]) -> (%y, %z, %n, %m, %v) {
  %t = Transpose(%x) {perm = [1, 0]} : f32[3,2]
  %y = MatMul(%w, %t) : f32[3,2]
  %r = Flatten(%t) {axis = 0} : f32[1,6]
  %z = Relu(%r) : f32[1,6]
  %u = Transpose(%x) {perm = [1, 0]} : f32[3,2]
  %n = Softmax(%u) {axis = -1} : f32[3,2]
  %m = MatMul(%w, %u) : f32[3,2]
  %v = Transpose(%x) {perm = [1, 0]} : f32[3,2]
  return
})"),
            R"(graph @main(%x: f32[2,3], %w: f32[3,3]) -> (%y, %z, %n, %m, %v) {
  %x.f16 = Cast(%x) {to = 10} : f16[2,3]
  %t = Transpose(%x.f16) {perm = [1, 0]} : f16[3,2]
  %w.f16 = Cast(%w) {to = 10} : f16[3,3]
  %y.f16 = MatMul(%w.f16, %t) : f16[3,2]
  %r = Flatten(%t) {axis = 0} : f16[1,6]
  %z.f16 = Relu(%r) : f16[1,6]
  %u = Transpose(%x) {perm = [1, 0]} : f32[3,2]
  %n = Softmax(%u) {axis = -1} : f32[3,2]
  %u.f16 = Cast(%u) {to = 10} : f16[3,2]
  %m.f16 = MatMul(%w.f16, %u.f16) : f16[3,2]
  %v = Transpose(%x) {perm = [1, 0]} : f32[3,2]
  %y = Cast(%y.f16) {to = 1} : f32[3,2]
  %z = Cast(%z.f16) {to = 1} : f32[1,6]
  %m = Cast(%m.f16) {to = 1} : f32[3,2]
  return
}
)");
}

TEST(ReducePrecision, AGraphOutputReadInFloat32SharesItsCastBack) {
  EXPECT_EQ(toF16(R"(graph @main(%x: f32[4]) -> (%y, %z) {
  %y = Relu(%x) : f32[4]
  %z = ReduceSum(%y) : f32[1]
  return
})"),
            R"(graph @main(%x: f32[4]) -> (%y, %z) {
  %x.f16 = Cast(%x) {to = 10} : f16[4]
  %y.f16 = Relu(%x.f16) : f16[4]
  %y = Cast(%y.f16) {to = 1} : f32[4]
  %z = ReduceSum(%y) : f32[1]
  return
}
)");
}

TEST(ReducePrecision, ExpAndTrigonometryReadUnroundedArguments) {
  // exp(x - max) and sin(1000 * x): the Sub and the Mul stay f32, so their graph inputs are
  // never rounded; the Relu after Exp casts its result down.
  EXPECT_EQ(toF16(R"(graph @main(%x: f32[4], %m: f32[4]) -> (%y, %s) {
  %k = constant f32[] [1000.0]
  %d = Sub(%x, %m) : f32[4]
  %e = Exp(%d) : f32[4]
  %y = Relu(%e) : f32[4]
  %a = Mul(%x, %k) : f32[4]
  %s = Sin(%a) : f32[4]
  return
})"),
            R"(graph @main(%x: f32[4], %m: f32[4]) -> (%y, %s) {
  %k = constant f32[] [1000.0]
  %d = Sub(%x, %m) : f32[4]
  %e = Exp(%d) : f32[4]
  %e.f16 = Cast(%e) {to = 10} : f16[4]
  %y.f16 = Relu(%e.f16) : f16[4]
  %a = Mul(%x, %k) : f32[4]
  %s = Sin(%a) : f32[4]
  %y = Cast(%y.f16) {to = 1} : f32[4]
  return
}
)");
}

TEST(ReducePrecision, DoesNothingAtFloat32) {
  // The pipeline's default options store f32: the pass must say it changed nothing.
  expectUnchanged("reduce-precision", R"(graph @main(%x: f32[1,2]) -> (%y) {
  %w = constant f32[2,2] [1.0, 0.5, 2.0, -1.0]
  %m = MatMul(%x, %w) : f32[1,2]
  %y = Relu(%m) : f32[1,2]
  return
})");
}

TEST(ReducePrecision, AttentionBlockAgreesWithFloat32InBothStorageTypes) {
  // A pre-norm attention block with a masked softmax and a GELU MLP: the rewritten graph must
  // verify and compute what the f32 graph does, to f16 and bf16 rounding.
  const std::string text = R"(graph @main(%x: f32[4,8], %wq: f32[8,8], %wk: f32[8,8], %wv: f32[8,8], %w1: f32[8,16], %w2: f32[16,8], %g: f32[8]) -> (%y) {
  %scale = constant f32[] [0.35355338]
  %fill = constant f32[] [-3.4028235e+38]
  %mask = constant bool[4,4] [true, false, false, false, true, true, false, false, true, true, true, false, true, true, true, true]
  %n = LayerNormalization(%x, %g) {axis = -1} : f32[4,8]
  %q = MatMul(%n, %wq) : f32[4,8]
  %k = MatMul(%n, %wk) : f32[4,8]
  %v = MatMul(%n, %wv) : f32[4,8]
  %kt = Transpose(%k) {perm = [1, 0]} : f32[8,4]
  %s = MatMul(%q, %kt) : f32[4,4]
  %ss = Mul(%s, %scale) : f32[4,4]
  %sm = Where(%mask, %ss, %fill) : f32[4,4]
  %p = Softmax(%sm) {axis = -1} : f32[4,4]
  %a = MatMul(%p, %v) : f32[4,8]
  %r = Add(%x, %a) : f32[4,8]
  %n2 = LayerNormalization(%r, %g) {axis = -1} : f32[4,8]
  %h = MatMul(%n2, %w1) : f32[4,16]
  %gelu = Gelu(%h) : f32[4,16]
  %o = MatMul(%gelu, %w2) : f32[4,8]
  %y = Add(%r, %o) : f32[4,8]
  return
})";
  // Measured (max |error| / max |y|, y up to 30.6): f16 9.5e-4, bf16 4.1e-2. Before the contractions
  // that feed the softmax and the second LayerNorm kept their f32 sums, f16 was 2.6e-3 and bf16
  // 2.7e-2: bf16's 8-bit significand leaves the second LayerNorm's input with errors of a few
  // units in its last place, which the normalisation of a narrow row amplifies either way.
  std::string half = reduce(text, DType::Float16, 2e-3);
  std::string brain = reduce(text, DType::BFloat16, 5e-2);
  // The masked logits stay f32 (the fill would overflow f16, and softmax pins its input).
  EXPECT_NE(half.find("%sm = Where(%mask, %ss, %fill) : f32[4,4]"), std::string::npos) << half;
  EXPECT_NE(half.find("%h = MatMul(%n2.f16, %w1.f16) : f16[4,16]"), std::string::npos) << half;
  EXPECT_NE(brain.find("%gelu = Gelu(%h) : bf16[4,16]"), std::string::npos) << brain;
}
