// The sidecar's request filter (kubectl proxy's --accept-hosts and friends) reads the
// Host header and request target of anyone who reaches the port. It must never crash,
// and its regex-free matcher for patterns shaped like kubectl's defaults must answer
// exactly as std::regex answers for the same pattern, on any text.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <regex>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "proxy/server/request_filter.h"

namespace {

// kubectl's defaults and a few more of the same shape.
constexpr std::string_view kPatterns[] = {
    "^localhost$", "^127\\.0\\.0\\.1$", "^\\[::1\\]$", "^.*", "^/api/.*/pods/.*/exec", "^/api/.*/pods/.*/attach",
    "^$", "^/apis/.*/v1.*/x$", "^.*.*a"};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const std::string_view pattern = kPatterns[data[0] % std::size(kPatterns)];
  // Texts longer than a path the filter matches with the backtracking engine would
  // only measure libstdc++'s recursion; the filter itself hands those to another engine.
  const std::string text(reinterpret_cast<const char*>(data) + 1, std::min<size_t>(size - 1, 512));
  const std::optional<proxy::LiteralChain> chain = proxy::LiteralChain::parse(pattern);
  FUZZ_CHECK(chain.has_value());
  const std::regex regex{std::string(pattern), std::regex::ECMAScript};
  FUZZ_CHECK(chain->matches(text) == std::regex_search(text, regex));

  // The whole filter with kubectl's defaults on the same bytes as target and Host.
  proxy::RequestFilterPatterns defaults;
  defaults.accept_hosts = {{"^localhost$", "^127\\.0\\.0\\.1$", "^\\[::1\\]$"}};
  defaults.accept_paths = {{"^.*"}};
  defaults.reject_paths = {{"^/api/.*/pods/.*/exec", "^/api/.*/pods/.*/attach"}};
  defaults.reject_methods = {{"^$"}};
  static const proxy::RequestFilter filter(defaults);
  const size_t split = text.find('\n');
  const std::string_view target = std::string_view(text).substr(0, split);
  const std::string_view host = split == std::string::npos ? "localhost" : std::string_view(text).substr(split + 1);
  const bool allowed = filter.allows("GET", target, host);
  if (allowed) {
    // Only the loopback names pass, and never a decoded exec or attach path.
    const std::optional<std::string> path = proxy::filteredPath(target);
    FUZZ_CHECK(path.has_value());
    FUZZ_CHECK(!std::regex_search(*path, std::regex("^/api/.*/pods/.*/(exec|attach)")));
  }
  return 0;
}
