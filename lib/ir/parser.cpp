// The IR's text form: a recursive-descent parser over text_lexer's tokens (grammar in printer.h
// and docs/ir.md). Every error is a UserError "line:column: message".
//
// Besides syntax, the parser checks what it can name a position for: ops exist; values are
// defined once and before their use (SSA in text order); attribute names and kinds follow ops.def
// (the schema also gives an empty list `[]` its kind); input and output counts, absent inputs and
// required attributes follow ops.def; constants have static shapes and exactly their data.
// It does not infer or check types: run the verifier for that.
//
// Resource use is bounded by the input: a tensor's storage is allocated only after its payload
// was read and matched against its shape.
#include "sinter/ir/parser.h"

#include "sinter/ir/graph.h"
#include "sinter/support/error.h"
#include "text_lexer.h"
#include "text_syntax.h"

#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>

namespace sinter {
namespace {

using text::Token;
using text::TokenKind;

/// "1 input", "2 to 3 inputs", "at least 1 input".
std::string countText(int min, int max, const char *noun) {
  std::string text;
  if (max < 0)
    text = "at least " + std::to_string(min);
  else if (min == max)
    text = std::to_string(min);
  else
    text = std::to_string(min) + " to " + std::to_string(max);
  return text + " " + noun + (min == 1 && (max == 1 || max < 0) ? "" : "s");
}

class Parser {
public:
  explicit Parser(std::string_view source) : tokens_(text::tokenize(source)) {}

  std::unique_ptr<Graph> parse() {
    graph_ = std::make_unique<Graph>();
    expectKeyword("graph");
    graph_->setName(expect(TokenKind::AtName, "the graph's name, like @main").text);
    parseInputs();
    expect(TokenKind::Arrow, "'->'");
    expect(TokenKind::LParen, "'('");
    std::vector<const Token *> outputs;
    if (!accept(TokenKind::RParen)) {
      do
        outputs.push_back(&expect(TokenKind::ValueName, "a graph output, like %y"));
      while (accept(TokenKind::Comma));
      expect(TokenKind::RParen, "',' or ')'");
    }
    expect(TokenKind::LBrace, "'{'");
    while (!isKeyword(peek(), "return")) {
      if (peek().kind == TokenKind::End)
        fail(peek(), "expected 'return' before the end of input");
      parseStatement();
    }
    next();
    expect(TokenKind::RBrace, "'}' after 'return'");
    expect(TokenKind::End, "the end of input after the graph");
    // Outputs are named in the header but defined in the body, so they resolve last.
    for (const Token *output : outputs)
      graph_->addOutput(lookup(*output, "graph output"));
    return std::move(graph_);
  }

private:
  // ---- Token access -------------------------------------------------------------------------

  const Token &peek(size_t ahead = 0) const {
    return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)];
  }
  const Token &next() {
    const Token &token = tokens_[pos_];
    if (pos_ + 1 < tokens_.size())
      ++pos_;
    return token;
  }
  bool accept(TokenKind kind) {
    if (peek().kind != kind)
      return false;
    next();
    return true;
  }
  static bool isKeyword(const Token &token, std::string_view word) {
    return token.kind == TokenKind::Identifier && token.text == word;
  }
  const Token &expect(TokenKind kind, std::string_view what) {
    if (peek().kind != kind)
      fail(peek(), "expected ", what, ", got ", text::describeToken(peek()));
    return next();
  }
  void expectKeyword(std::string_view word) {
    if (!isKeyword(peek(), word))
      fail(peek(), "expected '", word, "', got ", text::describeToken(peek()));
    next();
  }
  template <typename... Args> [[noreturn]] static void fail(const Token &at, Args &&...args) {
    userError(at.line, ":", at.column, ": ", std::forward<Args>(args)...);
  }

  // ---- Values -------------------------------------------------------------------------------

  /// The value a name refers to; only values defined earlier in the text are visible.
  Value *lookup(const Token &name, std::string_view role) {
    Value *value = graph_->findValue(name.text);
    if (!value)
      fail(name, role, " '%", name.text, "' is not defined",
           role == "graph output" ? "" : " (values must be defined before their use)");
    return value;
  }

  /// Checks that a name about to be defined is new.
  void checkDefinable(const Token &name) {
    if (name.text.empty())
      fail(name, "a value name must not be empty");
    if (graph_->findValue(name.text))
      fail(name, "redefinition of '%", name.text, "'");
  }

  void parseInputs() {
    expect(TokenKind::LParen, "'('");
    if (accept(TokenKind::RParen))
      return;
    do {
      const Token &name = expect(TokenKind::ValueName, "a graph input, like %x: f32[2]");
      checkDefinable(name);
      expect(TokenKind::Colon, "':' and the input's type");
      graph_->addInput(name.text, parseType());
    } while (accept(TokenKind::Comma));
    expect(TokenKind::RParen, "',' or ')'");
  }

  // ---- Types --------------------------------------------------------------------------------

  DType parseDType() {
    const Token &token = expect(TokenKind::Identifier, "a dtype, like f32");
    auto dtype = dtypeFromName(token.text);
    if (!dtype)
      fail(token, "unknown dtype '", token.text, "'");
    return *dtype;
  }

  TensorType parseType() {
    TensorType type;
    type.dtype = parseDType();
    expect(TokenKind::LBracket, "'[' after the dtype");
    if (accept(TokenKind::RBracket))
      return type;
    do {
      const Token &token = next();
      switch (token.kind) {
      case TokenKind::Number: {
        int64_t size = parseInt64(token, "a dimension");
        if (size < 0)
          fail(token, "a dimension must not be negative, got ", size);
        type.shape.push_back(Dim(size));
        break;
      }
      case TokenKind::Question: type.shape.push_back(Dim::unknown()); break;
      case TokenKind::Identifier:
      case TokenKind::String:
        if (token.text.empty())
          fail(token, "a dimension symbol must not be empty");
        type.shape.push_back(Dim::symbol(token.text));
        break;
      default: fail(token, "expected a dimension (a size, a symbol or '?'), got ", text::describeToken(token));
      }
    } while (accept(TokenKind::Comma));
    expect(TokenKind::RBracket, "',' or ']'");
    return type;
  }

  // ---- Numbers ------------------------------------------------------------------------------

  /// An integer literal's sign and magnitude; fails unless the token is one.
  static std::pair<bool, uint64_t> parseInteger(const Token &token, std::string_view what) {
    std::string_view digits = token.text;
    bool negative = !digits.empty() && digits[0] == '-';
    if (negative)
      digits.remove_prefix(1);
    uint64_t magnitude = 0;
    auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), magnitude);
    if (token.kind != TokenKind::Number || digits.empty() || end != digits.data() + digits.size())
      fail(token, "expected ", what, ", got ", text::describeToken(token));
    if (error != std::errc())
      fail(token, "integer ", token.text, " is out of range");
    return {negative, magnitude};
  }

  static int64_t parseInt64(const Token &token, std::string_view what) {
    auto [negative, magnitude] = parseInteger(token, what);
    constexpr uint64_t kMax = uint64_t(std::numeric_limits<int64_t>::max());
    if (magnitude > kMax + (negative ? 1 : 0))
      fail(token, "integer ", token.text, " is out of range of i64");
    return negative ? int64_t(0 - magnitude) : int64_t(magnitude);
  }

  /// A float literal: decimal, inf, -inf, nan, or nan(0x...) with the NaN's bits.
  template <typename Float> Float parseFloat(std::string_view what) {
    using Bits = std::conditional_t<sizeof(Float) == 4, uint32_t, uint64_t>;
    const Token &token = next();
    if (isKeyword(token, "inf"))
      return std::numeric_limits<Float>::infinity();
    if (isKeyword(token, "nan")) {
      if (!accept(TokenKind::LParen))
        return std::bit_cast<Float>(Bits(sizeof(Float) == 4 ? text::kCanonicalNanBits32
                                                            : text::kCanonicalNanBits64));
      const Token &bitsToken = expect(TokenKind::Number, "the NaN's bits, like 0x7FC00001");
      std::string_view hex = bitsToken.text;
      Bits bits = 0;
      bool ok = hex.size() > 2 && hex.size() <= 2 + 2 * sizeof(Bits) && hex.substr(0, 2) == "0x";
      if (ok) {
        auto [end, error] = std::from_chars(hex.data() + 2, hex.data() + hex.size(), bits, 16);
        ok = error == std::errc() && end == hex.data() + hex.size();
      }
      Float value = std::bit_cast<Float>(bits);
      if (!ok || !std::isnan(value))
        fail(bitsToken, "expected the hex bits of a NaN, got ", text::describeToken(bitsToken));
      expect(TokenKind::RParen, "')'");
      return value;
    }
    if (token.kind == TokenKind::Number) {
      if (token.text == "-inf")
        return -std::numeric_limits<Float>::infinity();
      std::string_view digits = token.text;
      size_t first = digits[0] == '-' ? 1 : 0;
      Float value = 0;
      if (first < digits.size() && digits[first] >= '0' && digits[first] <= '9') {
        auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value,
                                            std::chars_format::general);
        if (end == digits.data() + digits.size()) {
          if (error != std::errc())
            fail(token, token.text, " is out of range of ", sizeof(Float) == 4 ? "f32" : "f64");
          return value;
        }
      }
    }
    fail(token, "expected ", what, ", got ", text::describeToken(token));
  }

  // ---- Tensors ------------------------------------------------------------------------------

  /// Reads one element of a listed tensor into `slot` (its first dtypeSize bytes).
  void parseElement(DType dtype, uint64_t &slot) {
    auto store = [&](auto value) { std::memcpy(&slot, &value, sizeof value); };
    std::string what = "an element of " + std::string(dtypeName(dtype));
    const char *kFloatForm = " (a float like 1.5, -2e-3, inf or nan)";
    if (dtype == DType::Float32)
      return store(parseFloat<float>(what + kFloatForm));
    if (dtype == DType::Float64)
      return store(parseFloat<double>(what + kFloatForm));
    if (dtype == DType::Float16)
      return store(floatToHalf(parseFloat<float>(what + kFloatForm)));
    if (dtype == DType::BFloat16)
      return store(floatToBfloat16(parseFloat<float>(what + kFloatForm)));
    const Token &token = next();
    if (isLowPrecisionFloat(dtype))
      fail(token, dtypeName(dtype), " constants are written as their codes, dense<\"0x...\">");
    if (dtype == DType::Bool) {
      if (isKeyword(token, "true") || isKeyword(token, "false"))
        return store(uint8_t(token.text == "true"));
      auto [negative, magnitude] = parseInteger(token, what + " (true, false, 0 or 1)");
      if (negative || magnitude > 1)
        fail(token, "a bool is true, false, 0 or 1, not ", token.text);
      return store(uint8_t(magnitude));
    }
    auto [negative, magnitude] = parseInteger(token, what + " (an integer)");
    int bits = dtypeBits(dtype); // 4 and 2 for the sub-byte integers, which take a byte each
    uint64_t limit = isSigned(dtype) ? (uint64_t(1) << (bits - 1)) - (negative ? 0 : 1)
                                     : (negative ? 0 : ~uint64_t(0) >> (64 - bits));
    if (magnitude > limit)
      fail(token, token.text, " is out of range of ", dtypeName(dtype));
    uint64_t twosComplement = negative ? 0 - magnitude : magnitude;
    // Little-endian: the low bytes; a sub-byte integer's byte is its sign-extended value.
    std::memcpy(&slot, &twosComplement, dtypeSize(dtype));
  }

  /// A tensor literal: a static type, then `[e, ...]` (flattened, row-major) or
  /// `dense<"0x...">` (raw little-endian bytes).
  TensorPtr parseTensor() {
    const Token &typeToken = peek();
    TensorType type = parseType();
    if (!isStatic(type.shape))
      fail(typeToken, "a tensor's shape must be static, got ", type.str());
    std::optional<int64_t> count = elementCount(type.shape);
    if (!count || *count > std::numeric_limits<int64_t>::max() / 8)
      fail(typeToken, "tensor of type ", type.str(), " is too large");
    uint64_t byteSize = uint64_t(*count) * dtypeSize(type.dtype);
    auto makeTensor = [&]() {
      try {
        return Tensor(type.dtype, staticDims(type.shape));
      } catch (const UserError &error) {
        fail(typeToken, error.what());
      }
    };

    const Token &start = peek();
    if (isKeyword(start, "dense")) {
      next();
      expect(TokenKind::LAngle, "'<' after dense");
      if (isKeyword(peek(), "elided"))
        fail(peek(), "this constant's data was elided when printing; it cannot be parsed");
      const Token &hex = expect(TokenKind::String, "a hex string, like \"0x0000803F\"");
      expect(TokenKind::RAngle, "'>'");
      std::string_view digits = hex.text;
      if (digits.substr(0, 2) != "0x")
        fail(hex, "dense data must start with 0x");
      digits.remove_prefix(2);
      if (digits.size() % 2 || digits.size() / 2 != byteSize)
        fail(hex, type.str(), " needs ", byteSize, " bytes, the hex string has ",
             digits.size() / 2, digits.size() % 2 ? " and a half" : "");
      Tensor tensor = makeTensor();
      auto *bytes = reinterpret_cast<unsigned char *>(tensor.data());
      for (size_t i = 0; i < byteSize; ++i) {
        int value = 0;
        auto [end, error] = std::from_chars(digits.data() + 2 * i, digits.data() + 2 * i + 2, value, 16);
        if (error != std::errc() || end != digits.data() + 2 * i + 2)
          fail(hex, "dense data has a non-hex digit near byte ", i);
        bytes[i] = static_cast<unsigned char>(value);
      }
      return std::make_shared<const Tensor>(std::move(tensor));
    }
    if (start.kind != TokenKind::LBracket)
      fail(start, "expected the tensor's data, [...] or dense<\"0x...\">, got ",
           text::describeToken(start));
    next();
    // Elements go to 8-byte slots first; the list's length is bounded by the text.
    std::vector<uint64_t> slots;
    if (!accept(TokenKind::RBracket)) {
      do {
        slots.push_back(0);
        parseElement(type.dtype, slots.back());
      } while (accept(TokenKind::Comma));
      expect(TokenKind::RBracket, "',' or ']'");
    }
    if (int64_t(slots.size()) != *count)
      fail(start, type.str(), " has ", *count, " elements, the list has ", slots.size());
    Tensor tensor = makeTensor();
    int size = dtypeSize(type.dtype);
    for (size_t i = 0; i < slots.size(); ++i)
      std::memcpy(tensor.data() + i * size, &slots[i], size);
    return std::make_shared<const Tensor>(std::move(tensor));
  }

  // ---- Attributes ---------------------------------------------------------------------------

  template <typename T, typename ParseItem>
  std::vector<T> parseList(std::string_view what, ParseItem parseItem) {
    expect(TokenKind::LBracket, what);
    std::vector<T> items;
    if (accept(TokenKind::RBracket))
      return items;
    do
      items.push_back(parseItem());
    while (accept(TokenKind::Comma));
    expect(TokenKind::RBracket, "',' or ']'");
    return items;
  }

  /// An attribute's value of the kind its schema gives; `context` names it for messages.
  Attribute parseAttributeValue(AttrKind kind, const std::string &context) {
    auto parseInt = [&] { return parseInt64(next(), "an integer for " + context); };
    auto parseFloat32 = [&] { return parseFloat<float>("a float for " + context); };
    auto parseString = [&] { return expect(TokenKind::String, "a string for " + context).text; };
    switch (kind) {
    case AttrKind::Int: return parseInt();
    case AttrKind::Float: return parseFloat32();
    case AttrKind::String: return parseString();
    case AttrKind::Ints: return parseList<int64_t>("a list of integers for " + context, parseInt);
    case AttrKind::Floats: return parseList<float>("a list of floats for " + context, parseFloat32);
    case AttrKind::Strings:
      return parseList<std::string>("a list of strings for " + context, parseString);
    case AttrKind::Tensor:
      if (isKeyword(peek(), "null"))
        fail(peek(), "a tensor attribute must have data (", context, ")");
      return parseTensor();
    }
    fail(peek(), "unknown attribute kind");
  }

  void parseAttributes(Node &node) {
    if (accept(TokenKind::RBrace))
      return;
    do {
      const Token &name = peek();
      if (name.kind != TokenKind::Identifier && name.kind != TokenKind::String)
        fail(name, "expected an attribute name, got ", text::describeToken(name));
      next();
      const AttrSchema *schema = node.info().findAttribute(name.text);
      if (!schema)
        fail(name, node.opName(), " has no attribute '", name.text, "'");
      if (node.hasAttr(name.text))
        fail(name, "attribute '", name.text, "' is given twice");
      expect(TokenKind::Equal, "'=' after the attribute name");
      // The schema decides the kind; a value of another kind fails inside with its position.
      std::string context = "attribute '" + name.text + "' of " + std::string(node.opName());
      node.setAttr(name.text, parseAttributeValue(schema->kind, context));
    } while (accept(TokenKind::Comma));
    expect(TokenKind::RBrace, "',' or '}'");
  }

  // ---- Statements ---------------------------------------------------------------------------

  void parseStatement() {
    std::vector<const Token *> outputs;
    if (peek().kind == TokenKind::ValueName) {
      do
        outputs.push_back(&expect(TokenKind::ValueName, "a value name, like %y"));
      while (accept(TokenKind::Comma));
      expect(TokenKind::Equal, "'=' after the defined values");
      if (isKeyword(peek(), "constant")) {
        next();
        if (outputs.size() != 1)
          fail(*outputs[1], "a constant defines one value");
        checkDefinable(*outputs[0]);
        graph_->addConstant(outputs[0]->text, parseTensor());
        return;
      }
    }
    parseNode(outputs);
  }

  void parseNode(const std::vector<const Token *> &outputs) {
    const Token &opToken = expect(TokenKind::Identifier, "an op name, like Relu");
    std::optional<OpKind> kind = opFromName(opToken.text);
    if (!kind)
      fail(opToken, "unknown op '", opToken.text, "'");
    const OpInfo &info = opInfo(*kind);

    std::vector<Value *> inputs;
    expect(TokenKind::LParen, "'(' after the op name");
    if (!accept(TokenKind::RParen)) {
      do {
        const Token &operand = next();
        if (isKeyword(operand, "_")) {
          if (int(inputs.size()) < info.minInputs)
            fail(operand, "input ", inputs.size(), " of ", info.name, " is required; it cannot be absent");
          inputs.push_back(nullptr);
        } else if (operand.kind == TokenKind::ValueName) {
          inputs.push_back(lookup(operand, "input"));
        } else {
          fail(operand, "expected an input (%name or _), got ", text::describeToken(operand));
        }
      } while (accept(TokenKind::Comma));
      expect(TokenKind::RParen, "',' or ')'");
    }
    int numInputs = int(inputs.size()), numOutputs = int(outputs.size());
    if (numInputs < info.minInputs || (info.maxInputs >= 0 && numInputs > info.maxInputs))
      fail(opToken, info.name, " takes ", countText(info.minInputs, info.maxInputs, "input"),
           ", got ", numInputs);
    if (numOutputs < info.minOutputs || (info.maxOutputs >= 0 && numOutputs > info.maxOutputs))
      fail(opToken, info.name, " has ", countText(info.minOutputs, info.maxOutputs, "output"),
           ", got ", numOutputs);

    // Output names are checked before the node exists: Graph::addNode would rename a taken one.
    std::set<std::string> names;
    for (const Token *output : outputs) {
      checkDefinable(*output);
      if (!names.insert(output->text).second)
        fail(*output, "'%", output->text, "' is defined twice by this node");
    }
    std::vector<std::string> outputNames;
    for (const Token *output : outputs)
      outputNames.push_back(output->text);
    Node *node = graph_->addNode(*kind, inputs, numOutputs, "", outputNames);

    if (accept(TokenKind::LBrace))
      parseAttributes(*node);
    for (const AttrSchema &schema : info.attributes)
      if (schema.required && !node->hasAttr(schema.name))
        fail(opToken, info.name, " requires attribute '", schema.name, "'");
    if (numOutputs) {
      expect(TokenKind::Colon, "':' and the output types");
      for (int i = 0; i < numOutputs; ++i) {
        if (i)
          expect(TokenKind::Comma, "',' and the next output type (one per output)");
        node->output(i)->setType(parseType());
      }
      if (peek().kind == TokenKind::Comma)
        fail(peek(), "more output types than outputs (", numOutputs, ")");
    }
    if (peek().kind == TokenKind::AtName)
      node->setName(next().text);
  }

  std::vector<Token> tokens_;
  size_t pos_ = 0;
  std::unique_ptr<Graph> graph_;
};

} // namespace

std::unique_ptr<Graph> parseGraph(std::string_view text) { return Parser(text).parse(); }

} // namespace sinter
