#include "proxy/server/request_filter.h"

#include <algorithm>
#include <cctype>

namespace proxy {

namespace {

// Longest text given to the backtracking matcher. Its recursion is a few frames per
// character; at this length that stays under a megabyte of stack, sanitizers included.
constexpr size_t kBacktrackingLimit = 1024;

int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Go's url.getScheme: a letter, then letters, digits, '+', '-' or '.', up to ':'.
// Returns the length of the scheme, 0 when the text does not start with one.
size_t schemeLength(std::string_view target) {
  if (target.empty() || !std::isalpha(static_cast<unsigned char>(target.front()))) return 0;
  for (size_t i = 1; i < target.size(); ++i) {
    const char c = target[i];
    if (c == ':') return i;
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '+' && c != '-' && c != '.') return 0;
  }
  return 0;
}

// What follows the authority of an absolute-form target, or the whole origin-form
// target; nullopt for a target Go's ParseRequestURI refuses.
std::optional<std::string_view> pathAndQuery(std::string_view target) {
  if (!target.empty() && target.front() == '/') return target;
  const size_t scheme = schemeLength(target);
  if (scheme == 0) return std::nullopt;
  std::string_view rest = target.substr(scheme + 1);
  if (rest.substr(0, 2) != "//") {
    // "http:/api": a path without an authority; "http:x" is opaque, refused in a request.
    if (rest.empty() || rest.front() == '/') return rest;
    return std::nullopt;
  }
  rest.remove_prefix(2);
  const size_t end = rest.find_first_of("/?");
  return end == std::string_view::npos ? std::string_view{} : rest.substr(end);
}

// Go's net.SplitHostPort, keeping only the host; a value it refuses to split (no port,
// "a:b:c", stray brackets) is kept whole, as kubectl's extractHost does.
std::string splitHost(std::string_view value) {
  const size_t last_colon = value.rfind(':');
  if (last_colon == std::string_view::npos) return std::string(value);
  size_t after_open = 0;
  size_t after_close = 0;
  std::string_view host;
  if (value.front() == '[') {
    const size_t close = value.find(']');
    if (close == std::string_view::npos || close + 1 != last_colon) return std::string(value);
    host = value.substr(1, close - 1);
    after_open = 1;
    after_close = close + 1;
  } else {
    host = value.substr(0, last_colon);
    if (host.find(':') != std::string_view::npos) return std::string(value);
  }
  if (value.find('[', after_open) != std::string_view::npos || value.find(']', after_close) != std::string_view::npos) {
    return std::string(value);
  }
  return std::string(host);
}

}  // namespace

std::vector<std::string> filteredHostNames(std::string_view host_header) {
  std::vector<std::string> names{splitHost(host_header)};
  const std::string& host = names.front();
  const bool bracketed = host.size() >= 2 && host.front() == '[' && host.back() == ']';
  if (bracketed && host.find(':') != std::string::npos) {
    names.push_back(host.substr(1, host.size() - 2));  // "[::1]" without a port, offered bare too
  } else if (host.size() != host_header.size() && host_header.front() == '[' && host.find(':') != std::string::npos) {
    names.push_back("[" + host + "]");  // "[::1]:8001" split to "::1", offered bracketed too
  }
  return names;
}

std::optional<std::string> filteredPath(std::string_view target) {
  if (target == "*") return std::string("*");  // OPTIONS *: Go's URL.Path is "*"
  const std::optional<std::string_view> rest = pathAndQuery(target);
  if (!rest) return std::nullopt;
  const std::string_view raw = rest->substr(0, rest->find('?'));
  std::string out;
  out.reserve(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] != '%') {
      out.push_back(raw[i]);
      continue;
    }
    if (i + 2 >= raw.size()) return std::nullopt;  // Go: invalid URL escape
    const int high = hexValue(raw[i + 1]);
    const int low = hexValue(raw[i + 2]);
    if (high < 0 || low < 0) return std::nullopt;
    out.push_back(static_cast<char>(high * 16 + low));
    i += 2;
  }
  return out;
}

std::string_view absoluteFormAuthority(std::string_view target) {
  if (!target.empty() && target.front() == '/') return {};
  const size_t scheme = schemeLength(target);
  if (scheme == 0) return {};
  std::string_view rest = target.substr(scheme + 1);
  if (rest.substr(0, 2) != "//") return {};
  rest.remove_prefix(2);
  std::string_view authority = rest.substr(0, rest.find_first_of("/?"));
  const size_t at = authority.rfind('@');  // userinfo is not part of the host
  if (at != std::string_view::npos) authority.remove_prefix(at + 1);
  return authority;
}

std::optional<LiteralChain> LiteralChain::parse(std::string_view pattern) {
  if (pattern.empty() || pattern.front() != '^') return std::nullopt;
  LiteralChain out;
  out.literals.emplace_back();
  for (size_t i = 1; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '$') {
      if (i + 1 != pattern.size()) return std::nullopt;
      out.anchored_end = true;
    } else if (c == '.') {
      // ".*" alone; ".", ".+", ".*?" and the like are left to std::regex.
      if (i + 1 >= pattern.size() || pattern[i + 1] != '*') return std::nullopt;
      if (i + 2 < pattern.size() && std::string_view("*+?{").find(pattern[i + 2]) != std::string_view::npos) {
        return std::nullopt;
      }
      out.literals.emplace_back();
      ++i;
    } else if (c == '\\') {
      // An escaped punctuation character is that character; \d, \n, \1 ... are not literal.
      if (i + 1 >= pattern.size() || !std::ispunct(static_cast<unsigned char>(pattern[i + 1]))) return std::nullopt;
      out.literals.back().push_back(pattern[++i]);
    } else if (std::isalnum(static_cast<unsigned char>(c)) ||
               (std::ispunct(static_cast<unsigned char>(c)) && std::string_view("^$\\.*+?()[]{}|").find(c) ==
                                                                  std::string_view::npos)) {
      out.literals.back().push_back(c);
    } else {
      return std::nullopt;  // a special character, a space, a control or non-ASCII byte
    }
  }
  return out;
}

bool LiteralChain::matches(std::string_view text) const {
  // L0 at the start; each later literal found leftmost after the previous one (the
  // leftmost choice leaves the most room for the rest); the gaps, which .* fills, hold
  // no '\n' or '\r'. Literals have no line breaks, so everything after L0 lies before
  // the first line break.
  if (text.substr(0, literals.front().size()) != literals.front()) return false;
  if (literals.size() == 1) return !anchored_end || text.size() == literals.front().size();
  const size_t line_end = std::min(text.find_first_of("\n\r"), text.size());
  if (anchored_end && line_end != text.size()) return false;
  const std::string_view line = text.substr(0, line_end);
  size_t at = literals.front().size();
  for (size_t k = 1; k + 1 < literals.size(); ++k) {
    const size_t found = line.find(literals[k], at);
    if (found == std::string_view::npos) return false;
    at = found + literals[k].size();
  }
  const std::string& last = literals.back();
  if (!anchored_end) return line.find(last, at) != std::string_view::npos;
  return line.size() >= at + last.size() && line.substr(line.size() - last.size()) == last;
}

std::optional<RequestFilter::Patterns> RequestFilter::compile(
    const std::optional<std::vector<std::string>>& sources) {
  if (!sources) return std::nullopt;
  Patterns out;
  for (const std::string& source : *sources) {
    out.push_back({LiteralChain::parse(source),
                   std::regex(source, kRequestFilterGrammar & ~std::regex_constants::__polynomial),
                   std::regex(source, kRequestFilterGrammar)});
  }
  return out;
}

RequestFilter::RequestFilter(const RequestFilterPatterns& patterns)
    : accept_hosts_(compile(patterns.accept_hosts)),
      accept_paths_(compile(patterns.accept_paths)),
      reject_paths_(compile(patterns.reject_paths)),
      reject_methods_(compile(patterns.reject_methods)) {
  active_ = accept_hosts_ || accept_paths_ || reject_paths_ || reject_methods_;
}

bool RequestFilter::matchesAny(const Patterns& patterns, std::string_view text) {
  return std::any_of(patterns.begin(), patterns.end(), [&](const Pattern& pattern) {
    if (pattern.chain) return pattern.chain->matches(text);
    const std::regex& matcher = text.size() <= kBacktrackingLimit ? pattern.backtracking : pattern.polynomial;
    return std::regex_search(text.begin(), text.end(), matcher);
  });
}

bool RequestFilter::allows(std::string_view method, std::string_view target, std::string_view host_header) const {
  if (!active_) return true;
  // kubectl's conditions are all required, so their order changes no answer; the
  // short texts go first so that a rebound browser is refused on its Host alone.
  if (reject_methods_ && matchesAny(*reject_methods_, method)) return false;
  if (accept_hosts_) {
    // Go's server takes an absolute-form target's authority as the request's host.
    const std::string_view authority = absoluteFormAuthority(target);
    const std::vector<std::string> names = filteredHostNames(authority.empty() ? host_header : authority);
    if (std::none_of(names.begin(), names.end(), [&](const std::string& name) { return matchesAny(*accept_hosts_, name); })) {
      return false;
    }
  }
  if (!accept_paths_ && !reject_paths_) return true;
  const std::optional<std::string> path = filteredPath(target);
  // A path Go cannot decode never reaches kubectl's filter (400); it is not let through here.
  if (!path) return false;
  if (reject_paths_ && matchesAny(*reject_paths_, *path)) return false;
  return !accept_paths_ || matchesAny(*accept_paths_, *path);
}

}  // namespace proxy
