#include "cache/go_json.h"

#include "cache/selectors/field_error.h"

namespace cache {

namespace {

// Go's decoder refuses documents nested deeper than this (encoding/json maxNestingDepth).
constexpr size_t kMaxDepth = 10000;

constexpr char kLowerHex[] = "0123456789abcdef";

bool isSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }
bool isDigit(char c) { return c >= '0' && c <= '9'; }

int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// encoding/json quoteChar: a byte shown as the code point of the same value.
std::string quoteChar(char c) {
  if (c == '\'') return "'\\''";
  if (c == '"') return "'\"'";
  std::string utf8;
  appendUtf8(utf8, static_cast<unsigned char>(c));
  std::string quoted = goQuote(utf8);
  return "'" + quoted.substr(1, quoted.size() - 2) + "'";
}

class Parser {
 public:
  explicit Parser(std::string_view data) : s_(data) {}

  std::optional<GoJsonDocument> parseDocument(std::string& error) {
    GoJsonDocument doc;
    skipSpace();
    if (!parseValue(doc.top_kind, nullptr, &doc.members, 0)) {
      error = error_;
      return std::nullopt;
    }
    skipSpace();
    if (pos_ < s_.size()) {
      error = "invalid character " + quoteChar(s_[pos_]) + " after top-level value";
      return std::nullopt;
    }
    return doc;
  }

 private:
  bool fail(std::string_view context) {
    if (pos_ >= s_.size()) {
      error_ = "unexpected end of JSON input";
    } else {
      error_ = "invalid character " + quoteChar(s_[pos_]);
      error_.append(" ").append(context);
    }
    return false;
  }

  void skipSpace() {
    while (pos_ < s_.size() && isSpace(s_[pos_])) ++pos_;
  }
  bool atEnd() const { return pos_ >= s_.size(); }
  char peek() const { return s_[pos_]; }

  // Parses one value at pos_, inside `depth` enclosing containers. `text` receives the
  // decoded string or number literal; `members` (top level only) receives the members
  // of an object. Nested containers are validated without recursion (skipContainer),
  // so hostile nesting cannot exhaust the stack.
  bool parseValue(GoJsonValue::Kind& kind, std::string* text,
                  std::vector<std::pair<std::string, GoJsonValue>>* members, size_t depth) {
    if (atEnd()) return fail("");
    const char c = peek();
    if (c == '{') {
      kind = GoJsonValue::Kind::Object;
      return members ? parseTopLevelObject(*members) : skipContainer(depth);
    }
    if (c == '[') {
      kind = GoJsonValue::Kind::Array;
      return skipContainer(depth);
    }
    return parseScalar(kind, text);
  }

  bool parseScalar(GoJsonValue::Kind& kind, std::string* text) {
    if (atEnd()) return fail("");
    const char c = peek();
    if (c == '"') {
      kind = GoJsonValue::Kind::String;
      std::string ignored;
      return parseString(text ? *text : ignored);
    }
    if (c == '-' || isDigit(c)) {
      kind = GoJsonValue::Kind::Number;
      return parseNumber(text);
    }
    if (c == 't') return kind = GoJsonValue::Kind::Bool, parseLiteral("true");
    if (c == 'f') return kind = GoJsonValue::Kind::Bool, parseLiteral("false");
    if (c == 'n') return kind = GoJsonValue::Kind::Null, parseLiteral("null");
    return fail("looking for beginning of value");
  }

  bool parseTopLevelObject(std::vector<std::pair<std::string, GoJsonValue>>& members) {
    ++pos_;  // '{'
    skipSpace();
    if (!atEnd() && peek() == '}') return ++pos_, true;
    while (true) {
      if (atEnd() || peek() != '"') return fail("looking for beginning of object key string");
      std::string key;
      if (!parseString(key)) return false;
      skipSpace();
      if (atEnd() || peek() != ':') return fail("after object key");
      ++pos_;
      skipSpace();
      GoJsonValue value;
      if (!parseValue(value.kind, &value.text, nullptr, 1)) return false;
      members.emplace_back(std::move(key), std::move(value));
      skipSpace();
      if (atEnd()) return fail("");
      if (peek() == '}') return ++pos_, true;
      if (peek() != ',') return fail("after object key:value pair");
      ++pos_;
      skipSpace();
    }
  }

  // Validates the container at pos_ and everything nested in it with an explicit stack.
  bool skipContainer(size_t enclosing) {
    std::vector<char> stack;  // the open brackets, innermost last
    auto open = [&]() {
      if (enclosing + stack.size() + 1 > kMaxDepth) return fail("exceeded max depth");
      stack.push_back(peek());
      ++pos_;
      skipSpace();
      return true;
    };
    auto closer = [&]() { return stack.back() == '{' ? '}' : ']'; };
    if (!open()) return false;
    bool just_opened = true;
    while (true) {
      if (just_opened && !atEnd() && peek() == closer()) {
        ++pos_;
        stack.pop_back();
      } else {
        // One element of the innermost container: "key": value, or value.
        if (stack.back() == '{') {
          if (atEnd() || peek() != '"') return fail("looking for beginning of object key string");
          std::string ignored;
          if (!parseString(ignored)) return false;
          skipSpace();
          if (atEnd() || peek() != ':') return fail("after object key");
          ++pos_;
          skipSpace();
        }
        if (!atEnd() && (peek() == '{' || peek() == '[')) {
          if (!open()) return false;
          just_opened = true;
          continue;
        }
        GoJsonValue::Kind kind;
        if (!parseScalar(kind, nullptr)) return false;
      }
      just_opened = false;
      // After a value: close finished containers, or move to the next element.
      while (true) {
        if (stack.empty()) return true;
        skipSpace();
        if (atEnd()) return fail("");
        if (peek() == closer()) {
          ++pos_;
          stack.pop_back();
          continue;
        }
        if (peek() != ',') return fail(stack.back() == '{' ? "after object key:value pair" : "after array element");
        ++pos_;
        skipSpace();
        break;
      }
    }
  }

  bool parseLiteral(std::string_view word) {
    for (size_t i = 0; i < word.size(); ++i, ++pos_) {
      if (atEnd()) return fail("");
      if (peek() != word[i]) {
        std::string context = "in literal ";
        context.append(word).append(" (expecting '").push_back(word[i]);
        context.append("')");
        return fail(context);
      }
    }
    return true;
  }

  bool parseNumber(std::string* text) {
    const size_t start = pos_;
    if (peek() == '-') {
      ++pos_;
      if (atEnd() || !isDigit(peek())) return fail("in numeric literal");
    }
    if (peek() == '0') {
      ++pos_;
    } else {
      while (!atEnd() && isDigit(peek())) ++pos_;
    }
    if (!atEnd() && peek() == '.') {
      ++pos_;
      if (atEnd() || !isDigit(peek())) return fail("after decimal point in numeric literal");
      while (!atEnd() && isDigit(peek())) ++pos_;
    }
    if (!atEnd() && (peek() == 'e' || peek() == 'E')) {
      ++pos_;
      if (!atEnd() && (peek() == '+' || peek() == '-')) ++pos_;
      if (atEnd() || !isDigit(peek())) return fail("in exponent of numeric literal");
      while (!atEnd() && isDigit(peek())) ++pos_;
    }
    if (text) text->assign(s_.substr(start, pos_ - start));
    return true;
  }

  // Four hex digits after "\u"; -1 if malformed (pos_ left at the bad character).
  int32_t parseHex4() {
    int32_t value = 0;
    for (int i = 0; i < 4; ++i, ++pos_) {
      if (atEnd()) return -1;
      const int h = hexValue(peek());
      if (h < 0) return -1;
      value = value * 16 + h;
    }
    return value;
  }

  // A string literal, decoded as Go does: escapes resolved, surrogate pairs joined,
  // lone surrogates and invalid UTF-8 replaced by U+FFFD.
  bool parseString(std::string& out) {
    ++pos_;  // opening quote
    out.clear();
    while (true) {
      if (atEnd()) return fail("");
      const char c = peek();
      if (c == '"') return ++pos_, true;
      if (static_cast<unsigned char>(c) < 0x20) return fail("in string literal");
      if (c != '\\') {
        auto [rune, width] = decodeUtf8(s_, pos_);
        if (rune < 0) {
          appendUtf8(out, -1);
        } else {
          out.append(s_.substr(pos_, width));
        }
        pos_ += width;
        continue;
      }
      ++pos_;
      if (atEnd()) return fail("");
      const char e = peek();
      switch (e) {
        case '"': case '\\': case '/': out.push_back(e); ++pos_; continue;
        case 'b': out.push_back('\b'); ++pos_; continue;
        case 'f': out.push_back('\f'); ++pos_; continue;
        case 'n': out.push_back('\n'); ++pos_; continue;
        case 'r': out.push_back('\r'); ++pos_; continue;
        case 't': out.push_back('\t'); ++pos_; continue;
        case 'u': break;
        default: return fail("in string escape code");
      }
      ++pos_;
      int32_t rune = parseHex4();
      if (rune < 0) return fail("in \\u hexadecimal character escape");
      if (rune >= 0xD800 && rune < 0xDC00 && s_.substr(pos_, 2) == "\\u") {
        // A high surrogate joins with a following low surrogate; anything else leaves
        // the second escape to be decoded on its own.
        const size_t save = pos_;
        pos_ += 2;
        int32_t low = parseHex4();
        if (low < 0) return fail("in \\u hexadecimal character escape");
        if (low >= 0xDC00 && low < 0xE000) {
          appendUtf8(out, 0x10000 + ((rune - 0xD800) << 10) + (low - 0xDC00));
          continue;
        }
        pos_ = save;
      }
      appendUtf8(out, (rune >= 0xD800 && rune < 0xE000) ? -1 : rune);
    }
  }

  std::string_view s_;
  size_t pos_ = 0;
  std::string error_;
};

}  // namespace

std::optional<GoJsonDocument> parseGoJson(std::string_view data, std::string& error) {
  Parser parser(data);
  return parser.parseDocument(error);
}

std::string goJsonString(std::string_view s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    if (b < 0x80) {
      switch (b) {
        case '"': out.append("\\\""); break;
        case '\\': out.append("\\\\"); break;
        case '\b': out.append("\\b"); break;
        case '\f': out.append("\\f"); break;
        case '\n': out.append("\\n"); break;
        case '\r': out.append("\\r"); break;
        case '\t': out.append("\\t"); break;
        default:
          if (b < 0x20 || b == '<' || b == '>' || b == '&') {
            out.append("\\u00");
            out.push_back(kLowerHex[b >> 4]);
            out.push_back(kLowerHex[b & 0xF]);
          } else {
            out.push_back(static_cast<char>(b));
          }
      }
      ++i;
      continue;
    }
    auto [rune, width] = decodeUtf8(s, i);
    if (rune < 0) {
      out.append("\\ufffd");
    } else if (rune == 0x2028 || rune == 0x2029) {
      out.append(rune == 0x2028 ? "\\u2028" : "\\u2029");
    } else {
      out.append(s.substr(i, width));
    }
    i += width;
  }
  out.push_back('"');
  return out;
}

std::string goJsonIndent(std::string_view json) {
  std::string out;
  out.reserve(json.size() + json.size() / 2);
  bool in_string = false;
  bool escaped = false;
  // encoding/json's appendIndent delays the newline after '{' or '[' until the next
  // token, so that an empty object or array stays {} or [].
  bool need_indent = false;
  size_t depth = 0;
  auto newline = [&out](size_t level) {
    out.push_back('\n');
    out.append(2 * level, ' ');
  };
  for (const char c : json) {
    if (in_string) {
      out.push_back(c);
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (isSpace(c)) continue;
    if (need_indent && c != '}' && c != ']') {
      need_indent = false;
      newline(++depth);
    }
    switch (c) {
      case '"':
        in_string = true;
        out.push_back(c);
        break;
      case '{':
      case '[':
        need_indent = true;
        out.push_back(c);
        break;
      case ',':
        out.push_back(c);
        newline(depth);
        break;
      case ':': out.append(": "); break;
      case '}':
      case ']':
        if (need_indent) {
          need_indent = false;
        } else if (depth > 0) {
          newline(--depth);
        }
        out.push_back(c);
        break;
      default: out.push_back(c);
    }
  }
  return out;
}

}  // namespace cache
