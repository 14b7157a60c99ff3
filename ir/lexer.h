// Tokenizer of kiln's IR text format (see docs/IR.md), used by ir/parser.cc. It skips
// whitespace and `//` comments, decodes quoted strings and names, and remembers each token's
// line and column so errors read "FILE:LINE:COL: message".
#pragma once

#include <string>
#include <string_view>

namespace kiln {

enum class TokenKind {
  kEnd,        // end of the text
  kIdent,      // graph, const, return, op, attribute and dtype names, true, nan, ...
  kNumber,     // unsigned literal: 12, 0.5, 1e-05 (a leading '-' is its own token)
  kString,     // "..." with escapes decoded
  kValueName,  // %name, %"quoted name" or %12
  kGraphName,  // @name or @"quoted name"
  kLParen,     // (
  kRParen,     // )
  kLBracket,   // [
  kRBracket,   // ]
  kLBrace,     // {
  kRBrace,     // }
  kLAngle,     // <
  kRAngle,     // >
  kComma,      // ,
  kColon,      // :
  kEquals,     // =
  kArrow,      // ->
  kMinus,      // -
  kCaret,      // ^ (opens a fusion body's parameter list)
};

struct Token {
  TokenKind kind = TokenKind::kEnd;
  // Identifier, number spelling, decoded string, or name without its '%' / '@' sigil.
  std::string text;
  // For names: written in quotes (so "12" in quotes is a name, not a number).
  bool quoted = false;
  int line = 1;
  int column = 1;
};

// How a token kind is called in error messages: "an identifier", "'('", "end of input", ...
std::string token_kind_description(TokenKind kind);
// A token as quoted in error messages: "'conv'", "'%x'", "'('", "end of input".
std::string token_description(const Token& token);

class Lexer {
 public:
  Lexer(std::string_view text, std::string filename);

  // The next token without consuming it.
  const Token& peek() const { return current_; }
  // Consumes and returns the next token.
  Token take();

  // Throws InputError "FILE:LINE:COL: message" at the token's position.
  [[noreturn]] void fail_at(const Token& token, const std::string& message) const;

 private:
  Token scan();
  void skip_space_and_comments();
  std::string scan_quoted(int line, int column);
  std::string scan_bare_name();
  std::string scan_number();
  [[noreturn]] void fail(int line, int column, const std::string& message) const;
  char at(size_t offset) const {
    return pos_ + offset < text_.size() ? text_[pos_ + offset] : '\0';
  }
  void advance();

  std::string_view text_;
  std::string filename_;
  size_t pos_ = 0;
  int line_ = 1;
  int column_ = 1;
  Token current_;
};

// Identifier characters of the text format: names matching [A-Za-z_][A-Za-z0-9_.]* print bare.
bool is_ident_start(char c);
bool is_ident_char(char c);

}  // namespace kiln
