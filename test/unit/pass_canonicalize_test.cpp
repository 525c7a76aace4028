// canonicalize (lib/passes/canonicalize.h): no-op removal and chain collapsing, with the
// near misses it must leave alone. Expected texts are written by hand from the rules.
#include "pass_test_util.h"

using namespace sinter;
using sinter::testing::expectUnchanged;
using sinter::testing::rewrite;

TEST(Canonicalize, RemovesIdentityDropoutAndSameTypeCasts) {
  EXPECT_EQ(rewrite("canonicalize", R"(graph @main(%x: f32[2,3]) -> (%y) {
  %a = Identity(%x) : f32[2,3]
  %b = Dropout(%a) : f32[2,3]
  %c = Cast(%b) {to = 1} : f32[2,3]
  %y = Relu(%c) : f32[2,3]
  return
})"),
            R"(graph @main(%x: f32[2,3]) -> (%y) {
  %y = Relu(%x) : f32[2,3]
  return
}
)");
}

TEST(Canonicalize, KeepsGraphOutputNames) {
  // %y is the artifact's output: the Relu's value takes its name.
  EXPECT_EQ(rewrite("canonicalize", R"(graph @main(%x: f32[4]) -> (%y) {
  %r = Relu(%x) : f32[4]
  %y = Identity(%r) : f32[4]
  return
})"),
            R"(graph @main(%x: f32[4]) -> (%y) {
  %y = Relu(%x) : f32[4]
  return
}
)");
  // An Identity from a graph input to a graph output has no node to take the name: it stays.
  expectUnchanged("canonicalize", R"(graph @main(%x: f32[4]) -> (%y) {
  %y = Identity(%x) : f32[4]
  return
})");
}

TEST(Canonicalize, ComposesTransposes) {
  EXPECT_EQ(rewrite("canonicalize", R"(graph @main(%x: f32[2,3,4]) -> (%y, %z) {
  %t = Transpose(%x) {perm = [0, 2, 1]} : f32[2,4,3]
  %u = Transpose(%t) {perm = [0, 2, 1]} : f32[2,3,4]
  %y = Neg(%u) : f32[2,3,4]
  %v = Transpose(%x) {perm = [1, 0, 2]} : f32[3,2,4]
  %z = Transpose(%v) {perm = [2, 0, 1]} : f32[4,3,2]
  return
})"),
            R"(graph @main(%x: f32[2,3,4]) -> (%y, %z) {
  %y = Neg(%x) : f32[2,3,4]
  %z = Transpose(%x) {perm = [2, 1, 0]} : f32[4,3,2]
  return
}
)");
}

TEST(Canonicalize, CollapsesViewChainsAndRemovesNoOpViews) {
  EXPECT_EQ(rewrite("canonicalize", R"(graph @main(%x: f32[2,3,4]) -> (%y) {
  %s1 = constant i64[2] [6, 4]
  %s2 = constant i64[3] [2, 12, 1]
  %a = constant i64[1] [2]
  %r = Reshape(%x, %s1) : f32[6,4]
  %q = Reshape(%r, %s2) : f32[2,12,1]
  %f = Squeeze(%q, %a) : f32[2,12]
  %same = constant i64[2] [2, 12]
  %n = Reshape(%f, %same) : f32[2,12]
  %y = Relu(%n) : f32[2,12]
  return
})"),
            R"(graph @main(%x: f32[2,3,4]) -> (%y) {
  %s1 = constant i64[2] [6, 4]
  %s2 = constant i64[3] [2, 12, 1]
  %a = constant i64[1] [2]
  %same = constant i64[2] [2, 12]
  %q.shape = constant i64[3] [2, 12, 1]
  %f.shape = constant i64[2] [2, 12]
  %f = Reshape(%x, %f.shape) : f32[2,12]
  %y = Relu(%f) : f32[2,12]
  return
}
)");
}

TEST(Canonicalize, FoldsGemmScalesIntoConstantOperands) {
  EXPECT_EQ(rewrite("canonicalize", R"(graph @main(%x: f32[1,2]) -> (%y) {
  %w = constant f32[2,2] [1, 2, 3, 4]
  %c = constant f32[2] [1, -1]
  %y = Gemm(%x, %w, %c) {alpha = 0.5, beta = 3.0} : f32[1,2]
  return
})"),
            R"(graph @main(%x: f32[1,2]) -> (%y) {
  %w = constant f32[2,2] [1.0, 2.0, 3.0, 4.0]
  %c = constant f32[2] [1.0, -1.0]
  %w.alpha = constant f32[2,2] [0.5, 1.0, 1.5, 2.0]
  %c.beta = constant f32[2] [3.0, -3.0]
  %y = Gemm(%x, %w.alpha, %c.beta) : f32[1,2]
  return
}
)");
}

TEST(Canonicalize, LeavesNearMissesAlone) {
  // A Cast that changes the dtype, a Transpose pair that is not inverse (kept as one, though),
  // a Reshape that changes the shape, a Dropout in training mode, a two-input Concat.
  expectUnchanged("canonicalize", R"(graph @main(%x: f32[2,3], %i: i32[2,3]) -> (%a, %b, %c, %d) {
  %a = Cast(%i) {to = 1} : f32[2,3]
  %s = constant i64[2] [3, 2]
  %b = Reshape(%x, %s) : f32[3,2]
  %t = constant bool[] [true]
  %r = constant f32[] [0.0]
  %c, %m = Dropout(%x, %r, %t) : f32[2,3], bool[2,3]
  %d = Concat(%x, %x) {axis = 0} : f32[4,3]
  return
})");
}

TEST(Canonicalize, CastLikeBecomesCastAndTwoInputSumBecomesAdd) {
  // ONNX function bodies (the expanded GELU) write their constants as CastLike(c, x): with x's
  // dtype that is c itself, which folding can then see; another dtype is a Cast.
  EXPECT_EQ(rewrite("canonicalize", R"(graph @main(%x: f32[3], %i: i32[3]) -> (%y, %z) {
  %c = constant f32[] [0.5]
  %h = CastLike(%c, %x) : f32[]
  %y = Sum(%x, %h) : f32[3]
  %z = CastLike(%x, %i) : i32[3]
  return
})"),
            R"(graph @main(%x: f32[3], %i: i32[3]) -> (%y, %z) {
  %c = constant f32[] [0.5]
  %y = Add(%x, %c) : f32[3]
  %z = Cast(%x) {to = 6} : i32[3]
  return
}
)");
  // Sum of three stays a Sum.
  expectUnchanged("canonicalize", R"(graph @main(%x: f32[3]) -> (%y) {
  %y = Sum(%x, %x, %x) : f32[3]
  return
})");
}

TEST(Canonicalize, ADropoutWhoseMaskIsUsedStaysForTheMask) {
  EXPECT_EQ(rewrite("canonicalize", R"(graph @main(%x: f32[2,3]) -> (%z, %m) {
  %y, %m = Dropout(%x) : f32[2,3], bool[2,3]
  %z = Neg(%y) : f32[2,3]
  return
})"),
            R"(graph @main(%x: f32[2,3]) -> (%z, %m) {
  %y, %m = Dropout(%x) : f32[2,3], bool[2,3]
  %z = Neg(%x) : f32[2,3]
  return
}
)");
}
