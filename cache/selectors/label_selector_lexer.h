#pragma once
// The tokenizer of apimachinery's label selector parser (pkg/labels/selector.go),
// byte for byte: whitespace separates tokens, "=!(),<>" form operator tokens by
// longest match, "in"/"notin" are keywords, anything else is an identifier, and a NUL
// byte reads as end of input. Used only by LabelSelector::parse.

#include <optional>
#include <string>
#include <string_view>

namespace cache::label_lexer {

// ErrorToken must stay the zero value: the special-symbol scanner uses
// "no token yet" == Error.
enum class Token {
  Error,
  EndOfString,
  ClosedPar,
  Comma,
  DoesNotExist,
  DoubleEquals,
  Equals,
  GreaterThan,
  Identifier,
  In,
  LessThan,
  NotEquals,
  NotIn,
  OpenPar,
};

struct ScannedItem {
  Token token = Token::Error;
  std::string literal;
};

class Lexer {
 public:
  explicit Lexer(std::string_view s) : s_(s) {}
  // The next token; EndOfString forever once the input is exhausted.
  ScannedItem lex();

 private:
  char read() { return pos_ < s_.size() ? s_[pos_++] : 0; }
  void unread() { --pos_; }
  ScannedItem scanIdentifierOrKeyword();
  ScannedItem scanSpecialSymbol();

  std::string_view s_;
  size_t pos_ = 0;
};

}  // namespace cache::label_lexer
