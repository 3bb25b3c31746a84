#include "cache/selectors/label_selector_lexer.h"

namespace cache::label_lexer {

namespace {

std::optional<Token> keywordToken(std::string_view s) {
  if (s == ")") return Token::ClosedPar;
  if (s == ",") return Token::Comma;
  if (s == "!") return Token::DoesNotExist;
  if (s == "==") return Token::DoubleEquals;
  if (s == "=") return Token::Equals;
  if (s == ">") return Token::GreaterThan;
  if (s == "in") return Token::In;
  if (s == "<") return Token::LessThan;
  if (s == "!=") return Token::NotEquals;
  if (s == "notin") return Token::NotIn;
  if (s == "(") return Token::OpenPar;
  return std::nullopt;
}

bool isWhitespace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

bool isSpecialSymbol(char c) {
  switch (c) {
    case '=': case '!': case '(': case ')': case ',': case '>': case '<': return true;
    default: return false;
  }
}

}  // namespace

ScannedItem Lexer::lex() {
  char c = read();
  while (isWhitespace(c)) c = read();
  if (c == 0) return {Token::EndOfString, ""};
  unread();
  return isSpecialSymbol(c) ? scanSpecialSymbol() : scanIdentifierOrKeyword();
}

ScannedItem Lexer::scanIdentifierOrKeyword() {
  std::string buffer;
  while (true) {
    char c = read();
    if (c == 0) break;
    if (isSpecialSymbol(c) || isWhitespace(c)) {
      unread();
      break;
    }
    buffer.push_back(c);
  }
  if (auto token = keywordToken(buffer)) return {*token, std::move(buffer)};
  return {Token::Identifier, std::move(buffer)};
}

ScannedItem Lexer::scanSpecialSymbol() {
  ScannedItem last;
  std::string buffer;
  while (true) {
    char c = read();
    if (c == 0) break;
    if (!isSpecialSymbol(c)) {
      unread();
      break;
    }
    buffer.push_back(c);
    if (auto token = keywordToken(buffer)) {
      last = {*token, buffer};
    } else if (last.token != Token::Error) {
      unread();
      break;
    }
  }
  if (last.token == Token::Error) return {Token::Error, "error expected: keyword found '" + buffer + "'"};
  return last;
}

}  // namespace cache::label_lexer
