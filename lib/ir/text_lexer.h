// The lexer of the IR's text form (private to lib/ir; the parser is its only client).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace sinter::text {

enum class TokenKind {
  End,
  Identifier, ///< graph, constant, return, op names, dtypes, attribute names, symbols, nan, _
  Number,     ///< -?[0-9A-Za-z_.]+ with a sign allowed after an exponent; also -inf
  String,     ///< "..." with escapes decoded
  ValueName,  ///< %x or %"x", text without the sigil
  AtName,     ///< @x or @"x", text without the sigil
  LParen,
  RParen,
  LBrace,
  RBrace,
  LBracket,
  RBracket,
  LAngle,
  RAngle,
  Comma,
  Colon,
  Equal,
  Arrow,
  Question,
};

struct Token {
  TokenKind kind;
  std::string text;
  int line;
  int column;
};

/// A short description of a token for messages: "'%x'", "number '12'", "end of input".
std::string describeToken(const Token &token);

/// Splits the text into tokens, ending with one End token. `//` starts a comment to the end of
/// the line. Throws UserError "line:column: message" on a malformed token.
std::vector<Token> tokenize(std::string_view text);

} // namespace sinter::text
