// Tokenizer of the IR text format.
#include "ir/lexer.h"

#include "ir/error.h"

namespace kiln {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }

bool is_ident_char(char c) { return is_ident_start(c) || is_digit(c) || c == '.'; }

std::string token_kind_description(TokenKind kind) {
  switch (kind) {
    case TokenKind::kEnd:
      return "end of input";
    case TokenKind::kIdent:
      return "an identifier";
    case TokenKind::kNumber:
      return "a number";
    case TokenKind::kString:
      return "a string";
    case TokenKind::kValueName:
      return "a value name";
    case TokenKind::kGraphName:
      return "a graph name";
    case TokenKind::kLParen:
      return "'('";
    case TokenKind::kRParen:
      return "')'";
    case TokenKind::kLBracket:
      return "'['";
    case TokenKind::kRBracket:
      return "']'";
    case TokenKind::kLBrace:
      return "'{'";
    case TokenKind::kRBrace:
      return "'}'";
    case TokenKind::kLAngle:
      return "'<'";
    case TokenKind::kRAngle:
      return "'>'";
    case TokenKind::kComma:
      return "','";
    case TokenKind::kColon:
      return "':'";
    case TokenKind::kEquals:
      return "'='";
    case TokenKind::kArrow:
      return "'->'";
    case TokenKind::kMinus:
      return "'-'";
    case TokenKind::kCaret:
      return "'^'";
  }
  return "?";
}

std::string token_description(const Token& token) {
  switch (token.kind) {
    case TokenKind::kIdent:
    case TokenKind::kNumber:
      return "'" + token.text + "'";
    case TokenKind::kString:
      return "string \"" + token.text + "\"";
    case TokenKind::kValueName:
      return token.quoted ? "'%\"" + token.text + "\"'" : "'%" + token.text + "'";
    case TokenKind::kGraphName:
      return token.quoted ? "'@\"" + token.text + "\"'" : "'@" + token.text + "'";
    default:
      return token_kind_description(token.kind);
  }
}

Lexer::Lexer(std::string_view text, std::string filename)
    : text_(text), filename_(std::move(filename)) {
  current_ = scan();
}

Token Lexer::take() {
  Token token = std::move(current_);
  current_ = scan();
  return token;
}

void Lexer::fail_at(const Token& token, const std::string& message) const {
  fail(token.line, token.column, message);
}

void Lexer::fail(int line, int column, const std::string& message) const {
  throw InputError(filename_ + ":" + std::to_string(line) + ":" + std::to_string(column) + ": " +
                   message);
}

void Lexer::advance() {
  if (text_[pos_] == '\n') {
    ++line_;
    column_ = 1;
  } else {
    ++column_;
  }
  ++pos_;
}

void Lexer::skip_space_and_comments() {
  while (pos_ < text_.size()) {
    const char c = text_[pos_];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      advance();
    } else if (c == '/' && at(1) == '/') {
      while (pos_ < text_.size() && text_[pos_] != '\n') advance();
    } else {
      return;
    }
  }
}

Token Lexer::scan() {
  skip_space_and_comments();
  Token token;
  token.line = line_;
  token.column = column_;
  if (pos_ >= text_.size()) return token;

  const char c = text_[pos_];
  if (is_ident_start(c)) {
    token.kind = TokenKind::kIdent;
    token.text = scan_bare_name();
    return token;
  }
  if (is_digit(c)) {
    token.kind = TokenKind::kNumber;
    token.text = scan_number();
    return token;
  }
  if (c == '"') {
    token.kind = TokenKind::kString;
    token.text = scan_quoted(line_, column_);
    return token;
  }
  if (c == '%' || c == '@') {
    token.kind = c == '%' ? TokenKind::kValueName : TokenKind::kGraphName;
    advance();
    if (at(0) == '"') {
      token.quoted = true;
      token.text = scan_quoted(line_, column_);
    } else if (is_digit(at(0))) {
      while (is_digit(at(0))) {
        token.text += at(0);
        advance();
      }
    } else if (is_ident_start(at(0))) {
      token.text = scan_bare_name();
    } else {
      fail(token.line, token.column, std::string("expected a name after '") + c + "'");
    }
    return token;
  }
  if (c == '-' && at(1) == '>') {
    advance();
    advance();
    token.kind = TokenKind::kArrow;
    return token;
  }

  struct Punct {
    char c;
    TokenKind kind;
  };
  static constexpr Punct kPunctuation[] = {
      {'(', TokenKind::kLParen},   {')', TokenKind::kRParen}, {'[', TokenKind::kLBracket},
      {']', TokenKind::kRBracket}, {'{', TokenKind::kLBrace}, {'}', TokenKind::kRBrace},
      {'<', TokenKind::kLAngle},   {'>', TokenKind::kRAngle}, {',', TokenKind::kComma},
      {':', TokenKind::kColon},    {'=', TokenKind::kEquals}, {'-', TokenKind::kMinus},
      {'^', TokenKind::kCaret},
  };
  for (const Punct& punct : kPunctuation) {
    if (c == punct.c) {
      advance();
      token.kind = punct.kind;
      return token;
    }
  }
  const unsigned char byte = static_cast<unsigned char>(c);
  if (byte < 0x20 || byte >= 0x7f) {
    static constexpr char kHex[] = "0123456789abcdef";
    fail(line_, column_,
         std::string("unexpected byte 0x") + kHex[byte >> 4] + kHex[byte & 15] + " in the text");
  }
  fail(line_, column_, std::string("unexpected character '") + c + "'");
}

std::string Lexer::scan_bare_name() {
  std::string name;
  while (is_ident_char(at(0))) {
    name += at(0);
    advance();
  }
  return name;
}

std::string Lexer::scan_number() {
  std::string number;
  auto take_digits = [&] {
    while (is_digit(at(0))) {
      number += at(0);
      advance();
    }
  };
  take_digits();
  if (at(0) == '.') {
    number += '.';
    advance();
    take_digits();
  }
  if ((at(0) == 'e' || at(0) == 'E') &&
      (is_digit(at(1)) || ((at(1) == '+' || at(1) == '-') && is_digit(at(2))))) {
    number += at(0);
    advance();
    if (at(0) == '+' || at(0) == '-') {
      number += at(0);
      advance();
    }
    take_digits();
  }
  return number;
}

std::string Lexer::scan_quoted(int line, int column) {
  advance();  // the opening quote
  std::string decoded;
  while (true) {
    if (pos_ >= text_.size() || at(0) == '\n') fail(line, column, "unterminated string");
    const char c = at(0);
    if (c == '"') {
      advance();
      return decoded;
    }
    if (c != '\\') {
      decoded += c;
      advance();
      continue;
    }
    const int escape_line = line_;
    const int escape_column = column_;
    advance();
    const char escaped = at(0);
    switch (escaped) {
      case '"':
      case '\\':
        decoded += escaped;
        break;
      case 'n':
        decoded += '\n';
        break;
      case 't':
        decoded += '\t';
        break;
      case 'r':
        decoded += '\r';
        break;
      case 'x': {
        const int high = hex_value(at(1));
        const int low = hex_value(at(2));
        if (high < 0 || low < 0) {
          fail(escape_line, escape_column, "'\\x' must be followed by two hex digits");
        }
        decoded += static_cast<char>(high * 16 + low);
        advance();
        advance();
        break;
      }
      default:
        fail(escape_line, escape_column,
             "unknown escape '\\" + std::string(1, escaped ? escaped : '0') + "' in a string");
    }
    advance();
  }
}

}  // namespace kiln
