// The verifier: a valid graph passes, and each invariant, broken on purpose the way a buggy pass
// would break it, gives an InternalError that names the invariant, the node and the pass.
// Some breakages reach past the Graph API (const_cast on lists the API keeps consistent): that is
// what a buggy pass could do, and what the verifier is for.
#include "sinter/ir/graph.h"
#include "sinter/ir/parser.h"
#include "sinter/ir/verifier.h"
#include "sinter/support/error.h"

#include <gtest/gtest.h>

using namespace sinter;

namespace {

/// The InternalError message of verifyGraph, or "<verified>" when it passes.
std::string verifyError(const Graph &graph, std::string_view afterPass = "",
                        VerifyOptions options = {.checkTypes = false}) {
  try {
    verifyGraph(graph, afterPass, options);
  } catch (const InternalError &error) {
    return error.what();
  }
  return "<verified>";
}

/// x: f32[2] -> Relu 'relu' -> Neg 'neg' -> output, with correct types.
struct Chain {
  Graph graph;
  Value *x;
  Node *relu, *neg;
  Chain() {
    x = graph.addInput("x", {DType::Float32, {2}});
    relu = graph.addNode(OpKind::Relu, {x}, 1, "relu", {"r"});
    relu->output()->setType(x->type());
    neg = graph.addNode(OpKind::Neg, {relu->output()}, 1, "neg", {"n"});
    neg->output()->setType(x->type());
    graph.addOutput(neg->output());
  }
};

std::vector<Use> &mutableUses(Value *value) { return const_cast<std::vector<Use> &>(value->uses()); }

TEST(Verifier, AcceptsValidGraphs) {
  Chain chain;
  EXPECT_EQ(verifyError(chain.graph), "<verified>");
  // Absent optional inputs, several outputs, graph outputs that are inputs, constants or repeats.
  auto graph = parseGraph(R"(graph @g(%x: f32[4]) -> (%a, %x, %hi, %a) {
  %hi = constant f32[] [6.0]
  %c = Clip(%x, _, %hi) : f32[4]
  %a, %b = Split(%c) {axis = 0, num_outputs = 2} : f32[2], f32[2]
  %k = constant i64[2] [0, 1]
  %p = Pad(%x, %k, _) : f32[?]
  return
})");
  EXPECT_EQ(verifyError(*graph), "<verified>");
}

TEST(Verifier, NamesThePassThatBrokeTheGraph) {
  Chain chain;
  chain.relu->setInput(0, chain.neg->output()); // relu <- neg <- relu
  EXPECT_EQ(verifyError(chain.graph, "fold-constants"),
            "after pass 'fold-constants': [topological order] Relu 'relu': input 0 reads '%n', "
            "defined by a later node (output 0 of Neg 'neg')");
}

TEST(Verifier, TopologicalOrder) {
  Chain chain;
  Node *self = chain.graph.addNode(OpKind::Relu, {}, 1, "", {"loop"});
  self->addInput(self->output());
  EXPECT_EQ(verifyError(chain.graph),
            "[topological order] Relu producing 'loop': input 0 reads '%loop', defined by this node "
            "itself (output 0 of Relu producing 'loop')");
}

TEST(Verifier, SsaValuesAreDefinedOnceAndInTheGraph) {
  {
    Chain chain;
    auto &inputs = const_cast<std::vector<Value *> &>(chain.graph.inputs());
    inputs.push_back(chain.x);
    EXPECT_EQ(verifyError(chain.graph),
              "[SSA] '%x' is defined twice: as graph input 0 and as graph input 1");
  }
  {
    Graph other;
    Value *foreign = other.addInput("x", {DType::Float32, {2}});
    Chain chain;
    chain.neg->setInput(0, foreign);
    EXPECT_EQ(verifyError(chain.graph),
              "[SSA] Neg 'neg': input 0 reads a value that is not defined in this graph");
    chain.neg->setInput(0, chain.relu->output()); // leave `other` without a use from `chain`
  }
  {
    Chain chain;
    auto &constants = const_cast<std::vector<Value *> &>(chain.graph.constants());
    constants.push_back(chain.relu->output());
    EXPECT_EQ(verifyError(chain.graph), "[SSA] constant '%r' has no data or is also marked as a "
                                        "graph input or a node output");
    constants.pop_back();
    constants.push_back(chain.graph.addConstant("k", Tensor::fromInts({1})));
    EXPECT_EQ(verifyError(chain.graph),
              "[SSA] '%k' is defined twice: as a constant and as a constant");
  }
}

TEST(Verifier, UseListsAreInStepWithInputs) {
  {
    Chain chain;
    mutableUses(chain.x).clear();
    EXPECT_EQ(verifyError(chain.graph, "cse"),
              "after pass 'cse': [use lists] Relu 'relu': input 0 reads '%x', whose use list has "
              "this use 0 times instead of once");
  }
  {
    Chain chain;
    mutableUses(chain.x).push_back({chain.relu, 0});
    EXPECT_EQ(verifyError(chain.graph),
              "[use lists] Relu 'relu': input 0 reads '%x', whose use list has this use 2 times "
              "instead of once");
  }
  {
    Chain chain;
    mutableUses(chain.x).push_back({chain.neg, 0}); // neg reads %r, not %x
    EXPECT_EQ(verifyError(chain.graph),
              "[use lists] Neg 'neg': '%x' lists input 0 of this node among its uses, but that "
              "input reads something else");
  }
  {
    Graph other;
    Node *stranger = other.addNode(OpKind::Relu, {}, 1);
    Chain chain;
    mutableUses(chain.x).push_back({stranger, 0});
    EXPECT_EQ(verifyError(chain.graph),
              "[use lists] '%x' lists a use by a node that is not in the graph");
  }
}

TEST(Verifier, ArityFollowsTheOpTable) {
  {
    Chain chain;
    chain.graph.addNode(OpKind::Relu, {chain.x, chain.x}, 1, "two");
    EXPECT_EQ(verifyError(chain.graph), "[arity] Relu 'two': has 2 inputs; ops.def allows 1 to 1");
  }
  {
    Chain chain;
    chain.graph.addNode(OpKind::Gemm, {chain.x}, 1, "gemm");
    EXPECT_EQ(verifyError(chain.graph), "[arity] Gemm 'gemm': has 1 inputs; ops.def allows 2 to 3");
  }
  {
    Chain chain;
    chain.graph.addNode(OpKind::Relu, {chain.x}, 2, "pair");
    EXPECT_EQ(verifyError(chain.graph), "[arity] Relu 'pair': has 2 outputs; ops.def allows 1 to 1");
  }
  {
    Chain chain;
    Node *concat = chain.graph.addNode(OpKind::Concat, {}, 1, "concat");
    concat->setAttr("axis", int64_t(0));
    EXPECT_EQ(verifyError(chain.graph), "[arity] Concat 'concat': has 0 inputs; ops.def allows 1 or more");
  }
  {
    Chain chain;
    chain.graph.addNode(OpKind::Add, {nullptr, chain.x}, 1, "add");
    EXPECT_EQ(verifyError(chain.graph),
              "[arity] Add 'add': input 0 is absent, but Add requires its first 2 inputs");
  }
  {
    Chain chain;
    chain.graph.addNode(OpKind::Clip, {chain.x, nullptr, chain.x}, 1, "clip");
    EXPECT_EQ(verifyError(chain.graph), "<verified>"); // Clip's min is optional
  }
}

TEST(Verifier, AttributesFollowTheOpTable) {
  {
    Chain chain;
    chain.relu->setAttr("alpha", 0.5f);
    EXPECT_EQ(verifyError(chain.graph), "[attributes] Relu 'relu': Relu has no attribute 'alpha' in ops.def");
  }
  {
    Chain chain;
    Node *leaky = chain.graph.addNode(OpKind::LeakyRelu, {chain.x}, 1, "leaky");
    leaky->setAttr("alpha", int64_t(1));
    EXPECT_EQ(verifyError(chain.graph),
              "[attributes] LeakyRelu 'leaky': attribute 'alpha' is of kind int; ops.def says float");
  }
  {
    Chain chain;
    chain.graph.addNode(OpKind::Cast, {chain.x}, 1, "cast");
    EXPECT_EQ(verifyError(chain.graph), "[attributes] Cast 'cast': required attribute 'to' is missing");
  }
  {
    Chain chain;
    Node *fill = chain.graph.addNode(OpKind::ConstantOfShape, {chain.x}, 1, "fill");
    fill->setAttr("value", TensorPtr());
    EXPECT_EQ(verifyError(chain.graph),
              "[attributes] ConstantOfShape 'fill': tensor attribute 'value' has no data");
  }
}

TEST(Verifier, GraphOutputsAreDefined) {
  {
    Chain chain;
    chain.graph.addOutput(nullptr);
    EXPECT_EQ(verifyError(chain.graph), "[graph outputs] graph output 1 is null");
  }
  {
    Graph other;
    Chain chain;
    chain.graph.addOutput(other.addInput("elsewhere", {DType::Float32, {}}));
    EXPECT_EQ(verifyError(chain.graph, "dce"),
              "after pass 'dce': [graph outputs] graph output 1 is not a value defined in this graph");
  }
}

TEST(Verifier, ConstantTypesMatchTheirData) {
  Chain chain;
  Value *constant = chain.graph.addConstant("k", Tensor::fromInts({1, 2}));
  constant->setType({DType::Int64, {3}});
  EXPECT_EQ(verifyError(chain.graph),
            "[constant types] constant '%k' is typed i64[3] but its data is i64[2]");
}

// The type check runs shape inference (infer.h); these expect only the rules of Relu (same type
// as the input) and Add (numpy broadcasting), as the ONNX spec defines them.
TEST(Verifier, RecordedTypesMatchShapeInference) {
  VerifyOptions withTypes;
  {
    Chain chain;
    EXPECT_EQ(verifyError(chain.graph, "", withTypes), "<verified>");
  }
  {
    Chain chain;
    chain.relu->output()->setType({DType::Float32, {3}});
    EXPECT_EQ(verifyError(chain.graph, "", {.checkTypes = false}), "<verified>");
    EXPECT_EQ(verifyError(chain.graph, "infer-shapes", withTypes),
              "after pass 'infer-shapes': [types] Relu 'relu': output 0 '%r' is recorded as f32[3] "
              "but shape inference gives f32[2]");
  }
  {
    Graph graph;
    Value *a = graph.addInput("a", {DType::Float32, {Dim::symbol("N"), 1}});
    Value *b = graph.addInput("b", {DType::Float32, {4}});
    Node *add = graph.addNode(OpKind::Add, {a, b}, 1, "add", {"sum"});
    add->output()->setType({DType::Float32, {Dim::symbol("N"), 4}});
    EXPECT_EQ(verifyError(graph, "", withTypes), "<verified>");
    add->output()->setType({DType::Int64, {Dim::symbol("N"), 4}});
    EXPECT_EQ(verifyError(graph, "", withTypes),
              "[types] Add 'add': output 0 '%sum' is recorded as i64[N,4] but shape inference "
              "gives f32[N,4]");
  }
  {
    Graph graph;
    Value *a = graph.addInput("a", {DType::Float32, {2}});
    Value *b = graph.addInput("b", {DType::Float32, {3}});
    graph.addNode(OpKind::Add, {a, b}, 1, "add");
    std::string message = verifyError(graph, "", withTypes);
    EXPECT_EQ(message.rfind("[types] Add 'add': shape inference rejects the node: ", 0), 0u) << message;
  }
}

} // namespace
