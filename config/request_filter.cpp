#include "config/request_filter.h"

#include <cctype>
#include <iterator>
#include <regex>

#include "config/values.h"

namespace config {

namespace {

template <size_t N>
std::vector<std::string> patterns(const char* const (&defaults)[N]) {
  return {std::begin(defaults), std::end(defaults)};
}

// The grammar proxy/server/request_filter.h matches with: ECMAScript, and polynomial matching,
// which refuses back-references as Go's regexp (RE2) does.
constexpr std::regex::flag_type kGrammar =
    std::regex::ECMAScript | std::regex::optimize | std::regex_constants::__polynomial;

std::vector<std::string> parsePatterns(const ListSetting& setting) {
  // kubectl: "" is the empty list (an accept list then matches nothing, a reject list
  // refuses nothing). Empty entries ("a,,b", "a,") are dropped, as the command line's
  // list parser drops them; kubectl would compile each to a pattern matching everything.
  std::vector<std::string> out;
  for (const std::string& pattern : setting.values) {
    if (pattern.empty()) continue;
    try {
      std::regex compiled(pattern, kGrammar);
    } catch (const std::regex_error& e) {
      // libstdc++'s polynomial mode reports a back-reference as error_complexity.
      const std::string why = e.code() == std::regex_constants::error_complexity
                                  ? "back-references are not supported (nor by kubectl: Go's regexp has none)"
                                  : e.what();
      throw ConfigError(setting.origin + " \"" + pattern + "\": not a regular expression: " + why);
    }
    out.push_back(pattern);
  }
  return out;
}

// "127.0.0.2" -> "^127\.0\.0\.2$": the address as a pattern matching only itself.
std::string literalHostPattern(const std::string& host) {
  std::string out = "^";
  const bool ipv6 = host.find(':') != std::string::npos;
  if (ipv6) out += "\\[";
  for (char c : host) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != ':' && c != '-' && c != '_') out += '\\';
    out += c;
  }
  if (ipv6) out += "\\]";
  return out + "$";
}

}  // namespace

RequestFilterConfig requestFilter(const Settings& settings, Mode mode, const ListenAddress& listen) {
  RequestFilterConfig out;
  if (settings.accept_hosts) out.accept_hosts = parsePatterns(*settings.accept_hosts);
  if (settings.accept_paths) out.accept_paths = parsePatterns(*settings.accept_paths);
  if (settings.reject_paths) out.reject_paths = parsePatterns(*settings.reject_paths);
  if (settings.reject_methods) out.reject_methods = parsePatterns(*settings.reject_methods);
  if (mode != Mode::Sidecar) return out;
  // A sidecar answers with its own credentials to whatever reaches its loopback port,
  // a browser on the same machine included: kubectl proxy's defaults keep a DNS-rebound
  // page (Host: its own name) and a cross-site WebSocket to exec/attach out.
  if (!out.accept_hosts) {
    out.accept_hosts = patterns(kKubectlAcceptHosts);
    if (listen.host != "localhost" && listen.host != "127.0.0.1" && listen.host != "::1" && isLoopback(listen.host)) {
      out.accept_hosts->push_back(literalHostPattern(listen.host));
    }
  }
  if (!out.accept_paths) out.accept_paths = patterns(kKubectlAcceptPaths);
  if (!out.reject_paths) out.reject_paths = patterns(kKubectlRejectPaths);
  if (!out.reject_methods) out.reject_methods = patterns(kKubectlRejectMethods);
  return out;
}

}  // namespace config
