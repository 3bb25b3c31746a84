#pragma once
// kubectl proxy's request filter (--accept-hosts, --accept-paths, --reject-paths,
// --reject-methods), with its meaning (k8s.io/kubectl/pkg/proxy, FilterServer):
//
//   allowed = host matches an accept-hosts entry
//         and path matches an accept-paths entry and no reject-paths entry
//         and method matches no reject-methods entry
//
// An entry matches when it matches anywhere in the text (Go's MatchString, so anchor
// with ^ and $); an empty list matches nothing. The host is the Host header without
// its port, the path is the decoded URL path without the query (Go's URL.Path).
//
// Why a sidecar needs it: it answers with its own credentials to anything that reaches
// its loopback port, and a browser on the same machine reaches it too. A DNS-rebound
// page sends its own name in Host (refused by accept-hosts); a cross-site WebSocket to
// exec or attach sends Host: localhost (refused by reject-paths).
//
// Patterns are ECMAScript (std::regex), compiled once when the filter is built.
// config/ has refused, at start-up, every pattern that does not compile.

#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

namespace proxy {

// The four lists as configured. An unset list (nullopt) is a check that is not made,
// which is how a gateway runs without the filter unless its operator asks for it.
struct RequestFilterPatterns {
  std::optional<std::vector<std::string>> accept_hosts;
  std::optional<std::vector<std::string>> accept_paths;
  std::optional<std::vector<std::string>> reject_paths;
  std::optional<std::vector<std::string>> reject_methods;
};

// A pattern of the form ^L0.*L1.*...Ln (optionally ending in $) where each L is literal
// text, as all of kubectl's defaults are (`^localhost$`, `^.*`, `^/api/.*/pods/.*/exec`,
// `^$`), matched without std::regex and with the same answer: `.` matches anything but
// '\n' and '\r' (ECMAScript), `^` and `$` only at the ends of the text.
struct LiteralChain {
  std::vector<std::string> literals;  // L0..Ln; at least one, possibly empty
  bool anchored_end = false;          // ends in $
  // nullopt when `pattern` is not of this form.
  static std::optional<LiteralChain> parse(std::string_view pattern);
  bool matches(std::string_view text) const;
};

class RequestFilter {
 public:
  RequestFilter() = default;  // inactive: allows everything
  // Throws std::regex_error for a pattern that does not compile.
  explicit RequestFilter(const RequestFilterPatterns& patterns);

  // False when no list is set: nothing to check.
  bool active() const { return active_; }

  // `target` is the request line's target (origin-form "/api/v1/pods?x=y" or
  // absolute-form "http://h:1/api"); `host_header` the Host header ("" when absent).
  bool allows(std::string_view method, std::string_view target, std::string_view host_header) const;

 private:
  // One pattern. libstdc++'s default matcher backtracks recursively, one stack frame per
  // character, and overflows the stack on texts of some ten thousand characters (a long
  // URL path would crash the proxy); its polynomial matcher does not recurse per
  // character but is ~3 times slower on the short texts of ordinary requests. Short
  // texts go to the first, long ones to the second. Patterns of the shape of kubectl's
  // defaults skip both (`chain`): std::regex costs ~8 us per request for those defaults.
  struct Pattern {
    std::optional<LiteralChain> chain;
    std::regex backtracking;
    std::regex polynomial;
  };
  using Patterns = std::vector<Pattern>;
  static std::optional<Patterns> compile(const std::optional<std::vector<std::string>>& sources);
  static bool matchesAny(const Patterns& patterns, std::string_view text);

  bool active_ = false;
  std::optional<Patterns> accept_hosts_;
  std::optional<Patterns> accept_paths_;
  std::optional<Patterns> reject_paths_;
  std::optional<Patterns> reject_methods_;
};

// The grammar of every pattern, here and in config's start-up check. __polynomial also
// refuses back-references, which Go's regexp (RE2) has no syntax for either.
inline constexpr std::regex::flag_type kRequestFilterGrammar =
    std::regex::ECMAScript | std::regex::optimize | std::regex_constants::__polynomial;

// The host names accept-hosts is matched against for a Host header value: first the
// host as kubectl proxy takes it, Go's net.SplitHostPort without the port, or the whole
// value when that refuses to split ("localhost", "[::1]"); then, for an IPv6 literal,
// its other spelling: "[::1]:8001" gives "::1" and "[::1]", "[::1]" gives "[::1]" and
// "::1". kubectl's own default `^\[::1\]$` only matches a Host without a port, so
// kubectl refuses clients of http://[::1]:8001; offering both spellings keeps that
// default and kubectl-style `^::1$` working, and admits no other address.
std::vector<std::string> filteredHostNames(std::string_view host_header);

// The path of a request target as Go's url.ParseRequestURI gives it in URL.Path:
// percent-escapes decoded ("%2F" becomes "/"), the query dropped; for an absolute-form
// target the path after the authority. nullopt when an escape is malformed, which
// Go's server answers with 400 before any filter runs.
std::optional<std::string> filteredPath(std::string_view target);

// The authority of an absolute-form target ("http://h:1/x" -> "h:1"), which Go's
// server uses as the request's host instead of the Host header; "" for origin-form.
std::string_view absoluteFormAuthority(std::string_view target);

}  // namespace proxy
