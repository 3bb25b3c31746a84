#pragma once
// A request's query string decoded the way Go's net/url does it for the apiserver
// (url.ParseQuery as used by Request.URL.Query()): pairs split on '&', a pair holding
// ';' or a bad %-escape is dropped, '+' means space, keys and values are
// %-decoded, a key without '=' has the empty value, and get() returns the first value
// (url.Values.Get).

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cache {

class QueryValues {
 public:
  static QueryValues parse(std::string_view raw_query);

  // The first value of `key`, or nullopt when the key is absent.
  std::optional<std::string_view> get(std::string_view key) const;
  bool has(std::string_view key) const { return get(key).has_value(); }
  // All pairs in request order.
  const std::vector<std::pair<std::string, std::string>>& pairs() const { return pairs_; }

 private:
  std::vector<std::pair<std::string, std::string>> pairs_;
};

// url.QueryEscape: a value as Go writes it into a query (space as '+', unreserved kept).
std::string queryEscape(std::string_view s);
// url.QueryUnescape: nullopt for a malformed %-escape.
std::optional<std::string> queryUnescape(std::string_view s);
// url.PathUnescape, what Go's server does to a request path before any handler sees it
// ('+' stays '+'): nullopt for a malformed %-escape.
std::optional<std::string> pathUnescape(std::string_view s);
// A decoded path as Go's url.URL.EscapedPath writes it when client-go sends it (encodePath:
// ASCII letters, digits, "-._~", "$&+,/:;=@" stay, every other byte is %XX in upper case),
// so a name holding CR, LF, a space or '%' reaches an upstream request line as one escaped
// target (issue 36, finding 4). pathUnescape(escapePath(p)) == p.
std::string escapePath(std::string_view path);

}  // namespace cache
