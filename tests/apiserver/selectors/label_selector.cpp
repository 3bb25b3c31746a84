// Label selectors (S1/S2): the apimachinery lexer and recursive-descent parser
// re-implemented so that every accepted form and every error text matches
// pkg/labels/selector.go. Key and value checks live in label_validation.cpp.
#include "tests/apiserver/selectors/label_validation.h"
#include "tests/apiserver/semantics.h"
#include "tests/apiserver/status/status_util.h"

#include <algorithm>
#include <set>

namespace testapi {

namespace {

// ---- the lexer ----

enum class Token {
  Error, EndOfString, ClosedPar, Comma, DoesNotExist, DoubleEquals, Equals,
  GreaterThan, Identifier, In, LessThan, NotEquals, NotIn, OpenPar
};

struct ScannedItem {
  Token token;
  std::string literal;
};

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
  return c == '=' || c == '!' || c == '(' || c == ')' || c == ',' || c == '>' || c == '<';
}

class Lexer {
 public:
  explicit Lexer(std::string_view s) : s_(s) {}

  ScannedItem lex() {
    char c = read();
    while (isWhitespace(c)) c = read();
    if (c == 0) return {Token::EndOfString, ""};
    unread();
    return isSpecialSymbol(c) ? scanSpecialSymbol() : scanIdentifierOrKeyword();
  }

 private:
  // A NUL byte ends the input, as in Go's lexer (read() returns 0 at the end).
  char read() { return pos_ < s_.size() ? s_[pos_++] : (++pos_, '\0'); }
  void unread() { --pos_; }

  ScannedItem scanIdentifierOrKeyword() {
    std::string buffer;
    while (true) {
      const char c = read();
      if (c == 0) break;
      if (isSpecialSymbol(c) || isWhitespace(c)) {
        unread();
        break;
      }
      buffer += c;
    }
    if (auto t = keywordToken(buffer)) return {*t, buffer};
    return {Token::Identifier, buffer};
  }

  // Longest run of special symbols that still forms a known token ("!=", "==").
  ScannedItem scanSpecialSymbol() {
    std::string buffer;
    std::optional<ScannedItem> last;
    while (true) {
      const char c = read();
      if (c == 0) break;
      if (!isSpecialSymbol(c)) {
        unread();
        break;
      }
      buffer += c;
      if (auto t = keywordToken(buffer)) {
        last = ScannedItem{*t, buffer};
      } else if (last) {
        unread();
        break;
      }
    }
    if (!last) return {Token::Error, "error expected: keyword found '" + buffer + "'"};
    return *last;
  }

  std::string_view s_;
  size_t pos_ = 0;
};

// ---- requirements and the parser ----

enum class Op { Exists, DoesNotExist, Equals, DoubleEquals, NotEquals, In, NotIn, GreaterThan, LessThan };

struct Requirement {
  std::string key;
  Op op;
  std::vector<std::string> values;  // sorted, unique (a Go sets.String)

  bool matches(const Labels& labels) const {
    const auto it = labels.find(key);
    const bool has = it != labels.end();
    switch (op) {
      case Op::In:
      case Op::Equals:
      case Op::DoubleEquals:
        return has && std::binary_search(values.begin(), values.end(), it->second);
      case Op::NotIn:
      case Op::NotEquals:
        return !has || !std::binary_search(values.begin(), values.end(), it->second);
      case Op::Exists: return has;
      case Op::DoesNotExist: return !has;
      case Op::GreaterThan:
      case Op::LessThan: {
        if (!has || values.size() != 1) return false;
        const auto have = parseGoInt64(it->second);
        const auto want = parseGoInt64(values.front());
        if (!have || !want) return false;
        return op == Op::GreaterThan ? *have > *want : *have < *want;
      }
    }
    return false;
  }
};

class ParsedLabelSelector final : public LabelSelector {
 public:
  explicit ParsedLabelSelector(std::vector<Requirement> requirements) : requirements_(std::move(requirements)) {}
  // testapi::LabelSelector
  bool matches(const Labels& labels) const override {
    return std::all_of(requirements_.begin(), requirements_.end(), [&](const auto& r) { return r.matches(labels); });
  }
  bool empty() const override { return requirements_.empty(); }

 private:
  std::vector<Requirement> requirements_;  // sorted by key, as labels.Parse sorts them
};

using ValueSet = std::set<std::string>;

struct ParseError {
  std::string message;
};

class Parser {
 public:
  explicit Parser(std::string_view text) {
    Lexer lexer(text);
    while (true) {
      items_.push_back(lexer.lex());
      if (items_.back().token == Token::EndOfString) break;
    }
  }

  std::variant<std::vector<Requirement>, ParseError> parse() {
    std::vector<Requirement> requirements;
    while (true) {
      const auto& [tok, lit] = lookahead();
      if (tok == Token::EndOfString) return requirements;
      if (tok != Token::Identifier && tok != Token::DoesNotExist)
        return ParseError{"found '" + lit + "', expected: !, identifier, or 'end of string'"};
      auto r = parseRequirement();
      if (auto* e = std::get_if<ParseError>(&r)) return ParseError{"unable to parse requirement: " + e->message};
      requirements.push_back(std::move(std::get<Requirement>(r)));
      const auto [t, l] = consume();
      if (t == Token::EndOfString) return requirements;
      if (t != Token::Comma) return ParseError{"found '" + l + "', expected: ',' or 'end of string'"};
      const auto& [t2, l2] = lookahead();
      if (t2 != Token::Identifier && t2 != Token::DoesNotExist)
        return ParseError{"found '" + l2 + "', expected: identifier after ','"};
    }
  }

 private:
  // In the value context the keywords in/notin are plain identifiers.
  static ScannedItem asValue(ScannedItem item) {
    if (item.token == Token::In || item.token == Token::NotIn) item.token = Token::Identifier;
    return item;
  }
  ScannedItem lookahead() const { return asValue(items_[position_]); }
  ScannedItem consume() { return asValue(items_[position_++]); }
  ScannedItem consumeOperator() { return items_[position_++]; }

  std::variant<Requirement, ParseError> parseRequirement() {
    Op op = Op::Exists;
    bool negated = false;
    ScannedItem item = consume();
    if (item.token == Token::DoesNotExist) {
      negated = true;
      item = consume();
    }
    const std::string& key = item.literal;
    if (item.token != Token::Identifier) return ParseError{"found '" + key + "', expected: identifier"};
    if (auto msgs = isLabelKey(key); !msgs.empty())
      return ParseError{FieldError::invalid("<nil>", key, joinMessages(msgs)).error()};
    const Token next = lookahead().token;
    if (negated || next == Token::EndOfString || next == Token::Comma)
      return newRequirement(key, negated ? Op::DoesNotExist : Op::Exists, {});

    const auto [optok, oplit] = consumeOperator();
    switch (optok) {
      case Token::In: op = Op::In; break;
      case Token::Equals: op = Op::Equals; break;
      case Token::DoubleEquals: op = Op::DoubleEquals; break;
      case Token::GreaterThan: op = Op::GreaterThan; break;
      case Token::LessThan: op = Op::LessThan; break;
      case Token::NotIn: op = Op::NotIn; break;
      case Token::NotEquals: op = Op::NotEquals; break;
      default: return ParseError{"found '" + oplit + "', expected: in, notin, =, ==, !=, gt, lt"};
    }
    auto values = (op == Op::In || op == Op::NotIn) ? parseValues() : parseExactValue();
    if (auto* e = std::get_if<ParseError>(&values)) return *e;
    return newRequirement(key, op, std::get<ValueSet>(values));
  }

  std::variant<ValueSet, ParseError> parseValues() {
    const auto [tok, lit] = consume();
    if (tok != Token::OpenPar) return ParseError{"found '" + lit + "' expected: '('"};
    const auto [next, next_lit] = lookahead();
    if (next == Token::ClosedPar) {  // "()" is the single empty value
      consume();
      return ValueSet{""};
    }
    if (next != Token::Identifier && next != Token::Comma)
      return ParseError{"found '" + next_lit + "', expected: ',', ')' or identifier"};
    auto list = parseIdentifiersList();
    if (auto* e = std::get_if<ParseError>(&list)) return *e;
    if (consume().token != Token::ClosedPar) return ParseError{"found '" + next_lit + "', expected: ')'"};
    return list;
  }

  // A possibly empty, comma-separated list: "(,", ",)" and ",," contribute "".
  std::variant<ValueSet, ParseError> parseIdentifiersList() {
    ValueSet s;
    while (true) {
      const auto [tok, lit] = consume();
      if (tok == Token::Identifier) {
        s.insert(lit);
        const auto [t2, l2] = lookahead();
        if (t2 == Token::Comma) continue;
        if (t2 == Token::ClosedPar) return s;
        return ParseError{"found '" + l2 + "', expected: ',' or ')'"};
      }
      if (tok != Token::Comma) return ParseError{"found '" + lit + "', expected: ',', or identifier"};
      if (s.empty()) s.insert("");
      const Token t2 = lookahead().token;
      if (t2 == Token::ClosedPar) {
        s.insert("");
        return s;
      }
      if (t2 == Token::Comma) {
        consume();
        s.insert("");
      }
    }
  }

  std::variant<ValueSet, ParseError> parseExactValue() {
    const Token next = lookahead().token;
    if (next == Token::EndOfString || next == Token::Comma) return ValueSet{""};
    const auto [tok, lit] = consume();
    if (tok == Token::Identifier) return ValueSet{lit};
    return ParseError{"found '" + lit + "', expected: identifier"};
  }

  // labels.NewRequirement: the key was validated by the caller; the values are checked
  // here with paths "values[i]" (Gt/Lt integers) and "values[i][key]" (label values).
  static std::variant<Requirement, ParseError> newRequirement(const std::string& key, Op op, const ValueSet& set) {
    std::vector<std::string> values(set.begin(), set.end());
    std::vector<FieldError> errs;
    if (op == Op::GreaterThan || op == Op::LessThan) {
      for (size_t i = 0; i < values.size(); ++i) {
        if (!parseGoInt64(values[i]))
          errs.push_back(FieldError::invalid("values[" + std::to_string(i) + "]", values[i],
                                             "for 'Gt', 'Lt' operators, the value must be an integer"));
      }
    }
    for (size_t i = 0; i < values.size(); ++i) {
      if (auto msgs = isLabelValue(values[i]); !msgs.empty())
        errs.push_back(FieldError::invalid("values[" + std::to_string(i) + "][" + key + "]", values[i],
                                           joinMessages(msgs)));
    }
    if (!errs.empty()) return ParseError{aggregateText(errs)};
    return Requirement{key, op, std::move(values)};
  }

  std::vector<ScannedItem> items_;
  size_t position_ = 0;
};

}  // namespace

Result<std::shared_ptr<const LabelSelector>> parseLabelSelector(std::string_view text) {
  Parser parser(text);
  auto parsed = parser.parse();
  if (auto* e = std::get_if<ParseError>(&parsed)) return badRequest(e->message);
  auto requirements = std::move(std::get<std::vector<Requirement>>(parsed));
  std::stable_sort(requirements.begin(), requirements.end(),
                   [](const Requirement& a, const Requirement& b) { return a.key < b.key; });
  return std::shared_ptr<const LabelSelector>(std::make_shared<ParsedLabelSelector>(std::move(requirements)));
}

}  // namespace testapi
