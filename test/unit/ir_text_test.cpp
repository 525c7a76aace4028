// The IR's text form: printing and parsing back. Expected texts are written by hand from the
// grammar in printer.h (and docs/ir.md); expected bits are computed by hand from IEEE-754.
#include "sinter/ir/graph.h"
#include "sinter/ir/parser.h"
#include "sinter/ir/printer.h"
#include "sinter/ir/verifier.h"
#include "sinter/support/error.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <random>

using namespace sinter;

namespace {

std::string valueName(const Value *value) { return value ? value->name() : "<absent>"; }

/// Structural identity: names, types, constants bit for bit, nodes with their inputs (by name),
/// outputs, attributes and names, and the graph outputs.
void expectSameGraph(const Graph &a, const Graph &b) {
  EXPECT_EQ(a.name(), b.name());
  ASSERT_EQ(a.inputs().size(), b.inputs().size());
  for (size_t i = 0; i < a.inputs().size(); ++i) {
    EXPECT_EQ(a.inputs()[i]->name(), b.inputs()[i]->name());
    EXPECT_EQ(a.inputs()[i]->type(), b.inputs()[i]->type()) << a.inputs()[i]->name();
  }
  ASSERT_EQ(a.constants().size(), b.constants().size());
  for (size_t i = 0; i < a.constants().size(); ++i) {
    EXPECT_EQ(a.constants()[i]->name(), b.constants()[i]->name());
    EXPECT_EQ(a.constants()[i]->type(), b.constants()[i]->type());
    EXPECT_TRUE(a.constants()[i]->constant().identical(b.constants()[i]->constant()))
        << a.constants()[i]->name();
  }
  ASSERT_EQ(a.numNodes(), b.numNodes());
  for (int n = 0; n < a.numNodes(); ++n) {
    const Node &x = *a.nodes()[n], &y = *b.nodes()[n];
    EXPECT_EQ(x.kind(), y.kind());
    EXPECT_EQ(x.name(), y.name());
    ASSERT_EQ(x.numInputs(), y.numInputs()) << x.describe();
    for (int i = 0; i < x.numInputs(); ++i)
      EXPECT_EQ(valueName(x.input(i)), valueName(y.input(i))) << x.describe() << " input " << i;
    ASSERT_EQ(x.numOutputs(), y.numOutputs()) << x.describe();
    for (int i = 0; i < x.numOutputs(); ++i) {
      EXPECT_EQ(x.output(i)->name(), y.output(i)->name());
      EXPECT_EQ(x.output(i)->type(), y.output(i)->type()) << x.describe();
    }
    ASSERT_EQ(x.attributes().size(), y.attributes().size()) << x.describe();
    for (const auto &[name, attribute] : x.attributes()) {
      ASSERT_TRUE(y.hasAttr(name)) << name;
      EXPECT_TRUE(attributesEqual(attribute, y.attributes().at(name))) << x.describe() << " " << name;
    }
  }
  ASSERT_EQ(a.outputs().size(), b.outputs().size());
  for (size_t i = 0; i < a.outputs().size(); ++i)
    EXPECT_EQ(valueName(a.outputs()[i]), valueName(b.outputs()[i]));
}

/// Parses, prints, parses again: the print must reproduce `text` and both graphs must agree.
std::unique_ptr<Graph> expectRoundTrip(const std::string &text) {
  std::unique_ptr<Graph> graph = parseGraph(text);
  std::string printed = printGraph(*graph);
  EXPECT_EQ(printed, text);
  std::unique_ptr<Graph> again = parseGraph(printed);
  expectSameGraph(*graph, *again);
  EXPECT_EQ(printGraph(*again), printed);
  return graph;
}

template <typename T> T elementBits(const Graph &graph, const std::string &name, int64_t index) {
  const Value *value = graph.findValue(name);
  EXPECT_TRUE(value && value->isConstant()) << name;
  T bits;
  std::memcpy(&bits, value->constant().data() + index * sizeof(T), sizeof(T));
  return bits;
}

/// Every feature of the text form, in the printer's own layout.
const char *const kEveryFeature = R"(graph @main(%x: f32[batch,3,?,"n-1"], %"/in/0": i64[], %flags: bool[0]) -> (%y, %p1, %x, %k, %y, %flags) {
  %w = constant f32[2] [1.5, -0.0]
  %k = constant i64[3] [1, -1, -9223372036854775808]
  %u = constant u64[1] [18446744073709551615]
  %h = constant f16[2] dense<"0x003C00C0">
  %bf = constant bf16[1] dense<"0x803F">
  %s = constant bool[] [true]
  %e = constant f32[0,4] []
  %n = constant f32[3] [nan, nan(0x7FC00001), -inf]
  %d = constant f64[3] [0.1, 1e+300, nan(0xFFF8000000000000)]
  %i8 = constant i8[2] [-128, 127]
  %u16 = constant u16[2] [0, 65535]
  %i32 = constant i32[1] [-2147483648]
  %big = constant u8[17] dense<"0x000102030405060708090A0B0C0D0E0F10">
  %hi = constant f32[] [6.0]
  %a = LeakyRelu(%x) {alpha = 0.1} : f32[batch,3,?,"n-1"] @"act/1"
  %c = Cast(%"/in/0") {to = 1} : f32[]
  %g = Gelu(%a) {approximate = "tanh \"q\"\n"} : f32[batch,3,?,"n-1"]
  %t = Transpose(%g) {perm = [3, 2, 1, 0]} : f32["n-1",?,3,batch]
  %f = ConstantOfShape(%k) {value = f32[1] [0.5]} : f32[?,?,?]
  %clip = Clip(%x, _, %hi) : f32[batch,3,?,"n-1"]
  %pad = Pad(%x, %k, _) {mode = "constant"} : f32[?,?,?,?]
  %p0, %p1 = Split(%w) {axis = 0, num_outputs = 2} : f32[1], f32[1] @"split"
  %m = Max(%c) : f32[]
  %y = Add(%c, %m) : f32[]
  return
}
)";

TEST(IrText, EveryFeatureRoundTrips) {
  std::unique_ptr<Graph> graph = expectRoundTrip(kEveryFeature);
  ASSERT_TRUE(graph);
  // Types, including symbolic, quoted-symbolic and unknown dims, and a scalar.
  Value *x = graph->findValue("x");
  ASSERT_EQ(x->rank(), 4);
  EXPECT_EQ(x->shape()[0], Dim::symbol("batch"));
  EXPECT_EQ(x->shape()[1], Dim(3));
  EXPECT_TRUE(x->shape()[2].isUnknown());
  EXPECT_EQ(x->shape()[3], Dim::symbol("n-1"));
  EXPECT_EQ(graph->findValue("/in/0")->type(), (TensorType{DType::Int64, {}}));
  EXPECT_EQ(graph->findValue("flags")->type(), (TensorType{DType::Bool, {0}}));
  // Constants, bit for bit (IEEE-754 encodings worked out by hand).
  EXPECT_EQ(elementBits<uint32_t>(*graph, "w", 0), 0x3FC00000u); // 1.5
  EXPECT_EQ(elementBits<uint32_t>(*graph, "w", 1), 0x80000000u); // -0.0
  EXPECT_EQ(elementBits<int64_t>(*graph, "k", 2), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(elementBits<uint64_t>(*graph, "u", 0), ~uint64_t(0));
  EXPECT_EQ(elementBits<uint16_t>(*graph, "h", 0), 0x3C00); // f16 1.0
  EXPECT_EQ(elementBits<uint16_t>(*graph, "h", 1), 0xC000); // f16 -2.0
  EXPECT_EQ(elementBits<uint16_t>(*graph, "bf", 0), 0x3F80); // bf16 1.0
  EXPECT_EQ(elementBits<uint8_t>(*graph, "s", 0), 1);
  EXPECT_EQ(graph->findValue("s")->rank(), 0);
  EXPECT_EQ(graph->findValue("e")->constant().elementCount(), 0);
  EXPECT_EQ(elementBits<uint32_t>(*graph, "n", 0), 0x7FC00000u);
  EXPECT_EQ(elementBits<uint32_t>(*graph, "n", 1), 0x7FC00001u);
  EXPECT_EQ(elementBits<uint32_t>(*graph, "n", 2), 0xFF800000u);
  EXPECT_EQ(elementBits<uint64_t>(*graph, "d", 0), 0x3FB999999999999Aull); // 0.1
  EXPECT_EQ(elementBits<uint64_t>(*graph, "d", 2), 0xFFF8000000000000ull);
  EXPECT_EQ(elementBits<int8_t>(*graph, "i8", 0), -128);
  EXPECT_EQ(elementBits<uint16_t>(*graph, "u16", 1), 65535);
  EXPECT_EQ(elementBits<uint8_t>(*graph, "big", 16), 16);
  // Nodes: attributes of each kind the op table uses, absent inputs, names, several outputs.
  const Node &leaky = *graph->nodes()[0];
  EXPECT_EQ(leaky.name(), "act/1");
  EXPECT_EQ(leaky.attrFloat("alpha", 0), 0.1f);
  const Node &gelu = *graph->nodes()[2];
  EXPECT_EQ(gelu.attrString("approximate", ""), "tanh \"q\"\n");
  EXPECT_EQ(graph->nodes()[3]->attrInts("perm"), (std::vector<int64_t>{3, 2, 1, 0}));
  const Tensor *value = graph->nodes()[4]->attrTensor("value");
  ASSERT_NE(value, nullptr);
  EXPECT_EQ(value->type(), (TensorType{DType::Float32, {1}}));
  EXPECT_EQ(value->getDouble(0), 0.5);
  const Node &clip = *graph->nodes()[5];
  ASSERT_EQ(clip.numInputs(), 3);
  EXPECT_EQ(clip.input(1), nullptr);
  EXPECT_EQ(graph->nodes()[6]->numInputs(), 3); // a trailing absent input is kept
  const Node &split = *graph->nodes()[7];
  EXPECT_EQ(split.numOutputs(), 2);
  EXPECT_EQ(split.output(1)->name(), "p1");
  // Graph outputs: node outputs, a graph input, a constant, duplicates.
  ASSERT_EQ(graph->outputs().size(), 6u);
  EXPECT_EQ(graph->outputs()[0], graph->outputs()[4]);
  EXPECT_TRUE(graph->outputs()[2]->isGraphInput());
  EXPECT_TRUE(graph->outputs()[3]->isConstant());
}

TEST(IrText, PrintsAGraphBuiltInCodeExactly) {
  Graph graph;
  graph.setName("g 1");
  Value *x = graph.addInput("x", {DType::Float32, {Dim::symbol("N"), 2}});
  Node *elu = graph.addNode(OpKind::Elu, {x}, 1, "", {"y"});
  elu->setAttr("alpha", 1.0f);
  elu->output()->setType(x->type());
  graph.addOutput(elu->output());
  EXPECT_EQ(printGraph(graph), "graph @\"g 1\"(%x: f32[N,2]) -> (%y) {\n"
                               "  %y = Elu(%x) {alpha = 1.0} : f32[N,2]\n"
                               "  return\n"
                               "}\n");
}

/// The text of a float attribute, as printed.
std::string printedFloat(float value) {
  Graph graph;
  Value *x = graph.addInput("x", {DType::Float32, {}});
  Node *node = graph.addNode(OpKind::LeakyRelu, {x}, 1, "", {"y"});
  node->setAttr("alpha", value);
  std::string text = printGraph(graph);
  size_t start = text.find("alpha = ") + 8;
  std::string printed = text.substr(start, text.find('}', start) - start);
  // It must also read back to the same bits.
  std::unique_ptr<Graph> parsed = parseGraph(text);
  EXPECT_EQ(std::bit_cast<uint32_t>(parsed->nodes()[0]->attrFloat("alpha", 0)),
            std::bit_cast<uint32_t>(value))
      << printed;
  return printed;
}

TEST(IrText, FloatsPrintShortestAndReadBackExactly) {
  EXPECT_EQ(printedFloat(0.1f), "0.1");
  EXPECT_EQ(printedFloat(1.0f), "1.0");
  EXPECT_EQ(printedFloat(-0.0f), "-0.0");
  EXPECT_EQ(printedFloat(0.0f), "0.0");
  EXPECT_EQ(printedFloat(1e20f), "1e+20");
  EXPECT_EQ(printedFloat(123456789.0f), "123456792.0"); // the nearest float
  EXPECT_EQ(printedFloat(std::numeric_limits<float>::denorm_min()), "1e-45");
  EXPECT_EQ(printedFloat(std::numeric_limits<float>::max()), "3.4028235e+38");
  EXPECT_EQ(printedFloat(std::numeric_limits<float>::infinity()), "inf");
  EXPECT_EQ(printedFloat(-std::numeric_limits<float>::infinity()), "-inf");
  EXPECT_EQ(printedFloat(std::bit_cast<float>(0x7FC00000u)), "nan");
  EXPECT_EQ(printedFloat(std::bit_cast<float>(0xFFC00000u)), "nan(0xFFC00000)"); // -nan
  EXPECT_EQ(printedFloat(std::bit_cast<float>(0x7F800001u)), "nan(0x7F800001)"); // signalling
}

TEST(IrText, AttributeKindsOutsideTheOpTablePrint) {
  // No op in ops.def has floats or strings attributes yet; the printer still spells them.
  Graph graph;
  Value *x = graph.addInput("x", {DType::Float32, {}});
  Node *node = graph.addNode(OpKind::Relu, {x}, 1, "", {"y"});
  node->setAttr("fs", std::vector<float>{1.0f, -2.5f, std::numeric_limits<float>::infinity()});
  node->setAttr("ss", std::vector<std::string>{"a", "b\\c"});
  node->setAttr("empty", std::vector<int64_t>{});
  node->setAttr("t", TensorPtr());
  node->setAttr("weird name", int64_t(3));
  EXPECT_NE(printGraph(graph).find("{empty = [], fs = [1.0, -2.5, inf], ss = [\"a\", \"b\\\\c\"], "
                                   "t = null, \"weird name\" = 3}"),
            std::string::npos)
      << printGraph(graph);
}

TEST(IrText, NamesAndStringsAreQuotedWithEscapes) {
  Graph graph;
  Value *x = graph.addInput("/layer1/Conv_output_0", {DType::Float32, {Dim::symbol("2n")}});
  Node *node = graph.addNode(OpKind::Gelu, {x}, 1, "conv \xE2\x9C\x93", {"a\"b\\c\n\t\x01"});
  node->setAttr("approximate", std::string("none"));
  node->output()->setType(x->type());
  graph.addOutput(node->output());
  std::string text = printGraph(graph);
  EXPECT_EQ(text, "graph @main(%\"/layer1/Conv_output_0\": f32[\"2n\"]) -> (%\"a\\\"b\\\\c\\n\\t\\x01\") {\n"
                  "  %\"a\\\"b\\\\c\\n\\t\\x01\" = Gelu(%\"/layer1/Conv_output_0\") "
                  "{approximate = \"none\"} : f32[\"2n\"] @\"conv \xE2\x9C\x93\"\n"
                  "  return\n"
                  "}\n");
  expectSameGraph(graph, *parseGraph(text));
}

TEST(IrText, ConstantsLargerThan16ElementsOr16BitPrintAsHex) {
  Graph graph;
  Tensor small = Tensor::fromInts({1, 2, 3}, DType::Int32);
  graph.addConstant("small", small);
  Tensor seventeen(DType::Float32, {17});
  seventeen.setDouble(16, 1.0); // 1.0f is 0x3F800000: bytes 00 00 80 3F
  graph.addConstant("seventeen", seventeen);
  Tensor half(DType::Float16, {});
  half.setDouble(0, 1.0);
  graph.addConstant("half", half);
  Tensor odd(DType::Bool, {2});
  odd.data<uint8_t>()[1] = 2; // not a proper bool, but kept bit for bit
  graph.addConstant("odd", odd);
  std::string text = printGraph(graph);
  EXPECT_NE(text.find("%small = constant i32[3] [1, 2, 3]\n"), std::string::npos) << text;
  EXPECT_NE(text.find("%seventeen = constant f32[17] dense<\"0x" + std::string(128, '0') +
                      "0000803F\">\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("%half = constant f16[] dense<\"0x003C\">\n"), std::string::npos) << text;
  EXPECT_NE(text.find("%odd = constant bool[2] dense<\"0x0002\">\n"), std::string::npos) << text;
  auto parsed = parseGraph(text);
  expectSameGraph(graph, *parsed);
  EXPECT_EQ(printGraph(*parsed), text);
}

TEST(IrText, ElidedConstantsAreMarkedAndNotParseable) {
  Graph graph;
  graph.addConstant("big", Tensor(DType::Float32, {4}));
  graph.addConstant("tiny", Tensor(DType::Int8, {2}));
  graph.addOutput(graph.findValue("big"));
  std::string text = printGraph(graph, {.elideConstantsAbove = 8});
  EXPECT_NE(text.find("%big = constant f32[4] dense<elided 16 bytes>\n"), std::string::npos);
  EXPECT_NE(text.find("%tiny = constant i8[2] [0, 0]\n"), std::string::npos);
  try {
    parseGraph(text);
    FAIL() << "parsed an elided constant";
  } catch (const UserError &error) {
    EXPECT_EQ(std::string(error.what()), "2:32: this constant's data was elided when printing; it "
                                         "cannot be parsed");
  }
}

TEST(IrText, CommentsAndLooseSpacingAreAccepted) {
  auto graph = parseGraph("// a test\ngraph @g(%x:f32[2])->(%y){%y=Relu(%x):f32[2] // relu\n"
                          "%z = Neg(%y) : f32[2] return}");
  EXPECT_EQ(graph->numNodes(), 2);
  EXPECT_EQ(graph->outputs()[0]->name(), "y");
}

TEST(IrText, ListedFloatAndBoolConstantsAcceptIntegersAndHalfValues) {
  auto graph = parseGraph("graph @g() -> (%a, %b, %c) {\n"
                          "  %a = constant f32[2] [1, -2]\n"
                          "  %b = constant bool[2] [0, 1]\n"
                          "  %c = constant f16[1] [1.0]\n"
                          "  return\n}");
  EXPECT_EQ(elementBits<uint32_t>(*graph, "a", 1), 0xC0000000u); // -2.0
  EXPECT_EQ(elementBits<uint8_t>(*graph, "b", 1), 1);
  EXPECT_EQ(elementBits<uint16_t>(*graph, "c", 0), 0x3C00);
}

/// The message of the UserError that parsing `text` throws.
std::string parseError(const std::string &text) {
  try {
    parseGraph(text);
  } catch (const UserError &error) {
    return error.what();
  }
  return "<no error>";
}

std::string inBody(const std::string &lines) {
  return "graph @g(%x: f32[2], %i: i64[]) -> () {\n" + lines + "  return\n}\n";
}

TEST(IrText, ParseErrorsNameLineAndColumn) {
  EXPECT_EQ(parseError(inBody("  %y = Foo(%x) : f32[2]\n")), "2:8: unknown op 'Foo'");
  EXPECT_EQ(parseError(inBody("  %y = Relu(%z) : f32[2]\n")),
            "2:13: input '%z' is not defined (values must be defined before their use)");
  EXPECT_EQ(parseError(inBody("  %a = Relu(%b) : f32[2]\n  %b = Relu(%x) : f32[2]\n")),
            "2:13: input '%b' is not defined (values must be defined before their use)");
  EXPECT_EQ(parseError(inBody("  %x = Relu(%x) : f32[2]\n")), "2:3: redefinition of '%x'");
  EXPECT_EQ(parseError(inBody("  %c = constant f32[] [1.0]\n  %c = Relu(%x) : f32[2]\n")),
            "3:3: redefinition of '%c'");
  EXPECT_EQ(parseError("graph @g(%x: f32[2], %x: f32[2]) -> () {\n  return\n}"),
            "1:22: redefinition of '%x'");
  EXPECT_EQ(parseError(inBody("  %a, %a = Split(%x) : f32[1], f32[1]\n")),
            "2:7: '%a' is defined twice by this node");
  EXPECT_EQ(parseError(inBody("  %y = Concat(%x) {axis = 1.5} : f32[2]\n")),
            "2:27: expected an integer for attribute 'axis' of Concat, got number '1.5'");
  EXPECT_EQ(parseError(inBody("  %y = LeakyRelu(%x) {alpha = \"big\"} : f32[2]\n")),
            "2:31: expected a float for attribute 'alpha' of LeakyRelu, got string \"big\"");
  EXPECT_EQ(parseError(inBody("  %y = Transpose(%x) {perm = 1} : f32[2]\n")),
            "2:30: expected a list of integers for attribute 'perm' of Transpose, got number '1'");
  EXPECT_EQ(parseError(inBody("  %y = Relu(%x) {alpha = 1.0} : f32[2]\n")),
            "2:18: Relu has no attribute 'alpha'");
  EXPECT_EQ(parseError(inBody("  %y = Concat(%x) {axis = 0, axis = 1} : f32[2]\n")),
            "2:30: attribute 'axis' is given twice");
  EXPECT_EQ(parseError(inBody("  %y = Cast(%x) : f32[2]\n")), "2:8: Cast requires attribute 'to'");
  EXPECT_EQ(parseError(inBody("  %y = Relu(%x, %x) : f32[2]\n")), "2:8: Relu takes 1 input, got 2");
  EXPECT_EQ(parseError(inBody("  %y = Gemm(%x) : f32[2]\n")), "2:8: Gemm takes 2 to 3 inputs, got 1");
  EXPECT_EQ(parseError(inBody("  %y = Concat() {axis = 0} : f32[2]\n")),
            "2:8: Concat takes at least 1 input, got 0");
  EXPECT_EQ(parseError(inBody("  %a, %b = Relu(%x) : f32[2], f32[2]\n")),
            "2:12: Relu has 1 output, got 2");
  EXPECT_EQ(parseError(inBody("  %y = Add(_, %x) : f32[2]\n")),
            "2:12: input 0 of Add is required; it cannot be absent");
  EXPECT_EQ(parseError(inBody("  %a, %b = Split(%x) : f32[1]\n")),
            "3:3: expected ',' and the next output type (one per output), got 'return'");
  EXPECT_EQ(parseError(inBody("  %y = Relu(%x) : f32[2], f32[2]\n")),
            "2:25: more output types than outputs (1)");
  EXPECT_EQ(parseError(inBody("  %y = Relu(%x) : f33[2]\n")), "2:19: unknown dtype 'f33'");
  EXPECT_EQ(parseError(inBody("  %y = Relu(%x) : f32[-1]\n")),
            "2:23: a dimension must not be negative, got -1");
  EXPECT_EQ(parseError(inBody("  %y = Relu(%x) : f32[99999999999999999999]\n")),
            "2:23: integer 99999999999999999999 is out of range");
  EXPECT_EQ(parseError("graph @g() -> (%y) {\n  return\n}"), "1:16: graph output '%y' is not defined");
  EXPECT_EQ(parseError("graph @g() -> () {\n  %y = Relu(%x) : f32[2]\n"),
            "2:13: input '%x' is not defined (values must be defined before their use)");
  EXPECT_EQ(parseError("graph @g() -> () {\n"), "2:1: expected 'return' before the end of input");
  EXPECT_EQ(parseError("graph @g() -> () {\n  return\n}\nextra"),
            "4:1: expected the end of input after the graph, got 'extra'");
  EXPECT_EQ(parseError("graph g() -> () {}"), "1:7: expected the graph's name, like @main, got 'g'");
  EXPECT_EQ(parseError("graph @g() -> () {\n  $\n"), "2:3: unexpected character '$'");
  EXPECT_EQ(parseError(inBody("  %y = Gelu(%x) {approximate = \"tanh} : f32[2]\n")),
            "2:32: unterminated string");
  EXPECT_EQ(parseError(inBody("  %y = Gelu(%x) {approximate = \"a\\qb\"} : f32[2]\n")),
            "2:34: unknown escape sequence in string");
  EXPECT_EQ(parseError("graph @\"\\x4\"() -> () {}"), "1:9: \\x must be followed by two hex digits");
  EXPECT_EQ(parseError("graph @g(%\"\": f32[]) -> () {}"), "1:10: a value name must not be empty");
}

TEST(IrText, ConstantErrorsNameLineAndColumn) {
  EXPECT_EQ(parseError(inBody("  %c = constant f32[3] [1.0, 2.0]\n")),
            "2:24: f32[3] has 3 elements, the list has 2");
  EXPECT_EQ(parseError(inBody("  %c = constant f32[1] dense<\"0x0000803F00\">\n")),
            "2:30: f32[1] needs 4 bytes, the hex string has 5");
  EXPECT_EQ(parseError(inBody("  %c = constant i8[1] dense<\"0xZZ\">\n")),
            "2:29: dense data has a non-hex digit near byte 0");
  EXPECT_EQ(parseError(inBody("  %c = constant i8[1] dense<\"00\">\n")),
            "2:29: dense data must start with 0x");
  EXPECT_EQ(parseError(inBody("  %c = constant i8[2] [127, 128]\n")), "2:29: 128 is out of range of i8");
  EXPECT_EQ(parseError(inBody("  %c = constant u8[1] [-1]\n")), "2:24: -1 is out of range of u8");
  EXPECT_EQ(parseError(inBody("  %c = constant bool[1] [2]\n")), "2:26: a bool is true, false, 0 or 1, not 2");
  EXPECT_EQ(parseError(inBody("  %c = constant f32[1] [1e39]\n")), "2:25: 1e39 is out of range of f32");
  EXPECT_EQ(parseError(inBody("  %c = constant f32[1] [nan(0x3F800000)]\n")),
            "2:29: expected the hex bits of a NaN, got number '0x3F800000'");
  EXPECT_EQ(parseError(inBody("  %c = constant f32[N] [1.0]\n")),
            "2:17: a tensor's shape must be static, got f32[N]");
  EXPECT_EQ(parseError(inBody("  %c = constant f32[4611686018427387904,4] []\n")),
            "2:17: tensor of type f32[4611686018427387904,4] is too large");
  EXPECT_EQ(parseError(inBody("  %c = constant f32[1000000000000] []\n")),
            "2:36: f32[1000000000000] has 1000000000000 elements, the list has 0");
  EXPECT_EQ(parseError(inBody("  %a, %b = constant f32[] [1.0]\n")), "2:7: a constant defines one value");
  EXPECT_EQ(parseError(inBody("  %y = ConstantOfShape(%i) {value = null} : f32[?]\n")),
            "2:37: a tensor attribute must have data (attribute 'value' of ConstantOfShape)");
}

/// Mutated and truncated texts either parse or give a UserError; nothing else (no crash, no
/// other exception, no hang). What parses prints and parses again to the same text, and passes
/// the verifier's structural checks (the parser enforces the same op-table rules).
TEST(IrText, FuzzedTextNeverCrashesTheParser) {
  const std::string base = kEveryFeature;
  const std::string alphabet = "%@\"\\()[]{}<>,:=?-_.0123456789aefinx \n/";
  std::mt19937 random(12345);
  auto pick = [&](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(random); };
  int parsed = 0, rejected = 0;
  for (int iteration = 0; iteration < 3000; ++iteration) {
    std::string text = base;
    int edits = 1 + int(pick(3));
    for (int e = 0; e < edits && !text.empty(); ++e) {
      size_t at = pick(text.size());
      switch (pick(5)) {
      case 0: text.resize(at); break;
      case 1: text.erase(at, 1 + pick(8)); break;
      case 2: text.insert(at, 1, alphabet[pick(alphabet.size())]); break;
      case 3: text[at] = alphabet[pick(alphabet.size())]; break;
      default: text.insert(at, text.substr(pick(text.size()), 1 + pick(20))); break;
      }
    }
    try {
      std::unique_ptr<Graph> graph = parseGraph(text);
      ++parsed;
      verifyGraph(*graph, "", {.checkTypes = false});
      std::string printed = printGraph(*graph);
      EXPECT_EQ(printGraph(*parseGraph(printed)), printed) << text;
    } catch (const UserError &error) {
      ++rejected;
      std::string message = error.what();
      EXPECT_TRUE(!message.empty() && std::isdigit(static_cast<unsigned char>(message[0])) &&
                  message.find(':') != std::string::npos)
          << message;
    } catch (const std::exception &error) {
      ADD_FAILURE() << "not a UserError: " << error.what() << "\nfor:\n" << text;
    }
  }
  EXPECT_GT(parsed, 0);
  EXPECT_GT(rejected, 0);
}

} // namespace
