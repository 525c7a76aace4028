// Lexer of the IR's text form. Positions are 1-based lines and byte columns.
#include "text_lexer.h"

#include "sinter/support/error.h"
#include "text_syntax.h"

namespace sinter::text {
namespace {

class Lexer {
public:
  explicit Lexer(std::string_view text) : text_(text) {}

  std::vector<Token> run() {
    std::vector<Token> tokens;
    while (true) {
      skipSpaceAndComments();
      int line = line_, column = column_;
      if (atEnd()) {
        tokens.push_back({TokenKind::End, "", line, column});
        return tokens;
      }
      Token token = lexToken();
      token.line = line;
      token.column = column;
      tokens.push_back(std::move(token));
    }
  }

private:
  bool atEnd() const { return pos_ >= text_.size(); }
  char peek(size_t ahead = 0) const {
    return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
  }
  char advance() {
    char c = text_[pos_++];
    if (c == '\n') {
      ++line_;
      column_ = 1;
    } else {
      ++column_;
    }
    return c;
  }

  template <typename... Args> [[noreturn]] void fail(int line, int column, Args &&...args) {
    userError(line, ":", column, ": ", std::forward<Args>(args)...);
  }

  void skipSpaceAndComments() {
    while (!atEnd()) {
      char c = peek();
      if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
        advance();
      } else if (c == '/' && peek(1) == '/') {
        while (!atEnd() && peek() != '\n')
          advance();
      } else {
        return;
      }
    }
  }

  static bool isDigit(char c) { return c >= '0' && c <= '9'; }

  static int hexValue(char c) {
    if (c >= '0' && c <= '9')
      return c - '0';
    if (c >= 'a' && c <= 'f')
      return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
      return c - 'A' + 10;
    return -1;
  }

  std::string lexRun() {
    std::string run;
    while (!atEnd() && isNameChar(peek()))
      run += advance();
    return run;
  }

  /// A quoted string; the opening quote is next.
  std::string lexString() {
    int line = line_, column = column_;
    advance();
    std::string value;
    while (true) {
      if (atEnd() || peek() == '\n')
        fail(line, column, "unterminated string");
      char c = advance();
      if (c == '"')
        return value;
      if (c != '\\') {
        value += c;
        continue;
      }
      int escapeLine = line_, escapeColumn = column_ - 1;
      char escape = atEnd() ? '\0' : advance();
      switch (escape) {
      case '"': value += '"'; break;
      case '\\': value += '\\'; break;
      case 'n': value += '\n'; break;
      case 't': value += '\t'; break;
      case 'r': value += '\r'; break;
      case 'x': {
        int high = hexValue(peek()), low = high < 0 ? -1 : hexValue(peek(1));
        if (high < 0 || low < 0)
          fail(escapeLine, escapeColumn, "\\x must be followed by two hex digits");
        advance();
        advance();
        value += static_cast<char>(high * 16 + low);
        break;
      }
      default: fail(escapeLine, escapeColumn, "unknown escape sequence in string");
      }
    }
  }

  /// %name, %"name", @name or @"name"; the sigil is next.
  std::string lexSigilName(char sigil) {
    int line = line_, column = column_;
    advance();
    if (peek() == '"')
      return lexString();
    std::string name = lexRun();
    if (name.empty())
      fail(line, column, "expected a name after '", sigil, "'");
    return name;
  }

  /// Numbers are lexed loosely (digits, letters, '.', '_', a sign after an exponent) and
  /// checked by the parser, which knows the type they must have.
  std::string lexNumber() {
    std::string number;
    if (peek() == '-')
      number += advance();
    bool hex = peek() == '0' && (peek(1) == 'x' || peek(1) == 'X');
    while (!atEnd()) {
      char c = peek();
      if (isNameChar(c)) {
        number += advance();
      } else if ((c == '+' || c == '-') && !hex && !number.empty() &&
                 (number.back() == 'e' || number.back() == 'E')) {
        number += advance();
      } else {
        break;
      }
    }
    return number;
  }

  Token lexToken() {
    char c = peek();
    auto single = [&](TokenKind kind) {
      advance();
      return Token{kind, std::string(1, c), 0, 0};
    };
    switch (c) {
    case '(': return single(TokenKind::LParen);
    case ')': return single(TokenKind::RParen);
    case '{': return single(TokenKind::LBrace);
    case '}': return single(TokenKind::RBrace);
    case '[': return single(TokenKind::LBracket);
    case ']': return single(TokenKind::RBracket);
    case '<': return single(TokenKind::LAngle);
    case '>': return single(TokenKind::RAngle);
    case ',': return single(TokenKind::Comma);
    case ':': return single(TokenKind::Colon);
    case '=': return single(TokenKind::Equal);
    case '?': return single(TokenKind::Question);
    case '"': return {TokenKind::String, lexString(), 0, 0};
    case '%': return {TokenKind::ValueName, lexSigilName('%'), 0, 0};
    case '@': return {TokenKind::AtName, lexSigilName('@'), 0, 0};
    default: break;
    }
    if (c == '-' && peek(1) == '>') {
      advance();
      advance();
      return {TokenKind::Arrow, "->", 0, 0};
    }
    if (isDigit(c) || (c == '-' && (isDigit(peek(1)) || isIdentifierStart(peek(1)))))
      return {TokenKind::Number, lexNumber(), 0, 0};
    if (isIdentifierStart(c))
      return {TokenKind::Identifier, lexRun(), 0, 0};
    auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte < 0x7f)
      fail(line_, column_, "unexpected character '", c, "'");
    static const char kHex[] = "0123456789ABCDEF";
    fail(line_, column_, "unexpected byte 0x", kHex[byte >> 4], kHex[byte & 15]);
  }

  std::string_view text_;
  size_t pos_ = 0;
  int line_ = 1;
  int column_ = 1;
};

} // namespace

std::string describeToken(const Token &token) {
  // Long tokens (hex payloads) are cut short so messages stay one line.
  std::string text = token.text.size() > 40 ? token.text.substr(0, 37) + "..." : token.text;
  switch (token.kind) {
  case TokenKind::End: return "end of input";
  case TokenKind::Number: return "number '" + text + "'";
  case TokenKind::String: return "string \"" + text + "\"";
  case TokenKind::ValueName: return "'%" + text + "'";
  case TokenKind::AtName: return "'@" + text + "'";
  default: return "'" + text + "'";
  }
}

std::vector<Token> tokenize(std::string_view text) { return Lexer(text).run(); }

} // namespace sinter::text
