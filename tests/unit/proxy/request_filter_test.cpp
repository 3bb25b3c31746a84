#include "proxy/server/request_filter.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace proxy;

namespace {

using Names = std::vector<std::string>;

// kubectl proxy's defaults (k8s.io/kubectl/pkg/proxy: DefaultHostAcceptRE, ...).
RequestFilterPatterns kubectlDefaults() {
  return {Names{"^localhost$", "^127\\.0\\.0\\.1$", "^\\[::1\\]$"}, Names{"^.*"},
          Names{"^/api/.*/pods/.*/exec", "^/api/.*/pods/.*/attach"}, Names{"^$"}};
}

}  // namespace

TEST_CASE("With kubectl proxy's defaults, loopback names are served and any other Host is refused") {
  const RequestFilter filter(kubectlDefaults());
  REQUIRE(filter.active());
  for (const char* host : {"localhost", "localhost:8001", "127.0.0.1", "127.0.0.1:8001", "[::1]", "[::1]:8001"}) {
    CAPTURE(host);
    CHECK(filter.allows("GET", "/api/v1/namespaces/default/pods", host));
  }
  // A DNS-rebound page sends its own name; the rest are near misses of the defaults.
  for (const char* host : {"evil.example", "evil.example:8001", "localhost.evil.example", "127a0b0c1", "127.0.0.1.nip.io",
                           "LOCALHOST", "", "::1", "[::2]:8001", "[localhost]:8001:1", "localhost:8001:1"}) {
    CAPTURE(host);
    CHECK_FALSE(filter.allows("GET", "/api/v1/namespaces/default/pods", host));
  }
}

TEST_CASE("The Host is taken without its port as Go's SplitHostPort splits it, IPv6 literals in both spellings") {
  CHECK(filteredHostNames("localhost:8001") == Names{"localhost"});
  CHECK(filteredHostNames("localhost") == Names{"localhost"});
  CHECK(filteredHostNames("localhost:") == Names{"localhost"});
  CHECK(filteredHostNames("[::1]:8001") == Names{"::1", "[::1]"});
  CHECK(filteredHostNames("[::1]") == Names{"[::1]", "::1"});
  CHECK(filteredHostNames("::1") == Names{"::1"});  // Go refuses to split it: compared whole
  CHECK(filteredHostNames("a:b:8001") == Names{"a:b:8001"});
  CHECK(filteredHostNames("[::1]x:8001") == Names{"[::1]x:8001"});
  CHECK(filteredHostNames("[localhost]") == Names{"[localhost]"});  // no IPv6 literal: no second spelling
  CHECK(filteredHostNames("") == Names{""});
  // kubectl-style `^::1$` matches a bracketed Host with a port, as in kubectl.
  const RequestFilter filter({Names{"^::1$"}, std::nullopt, std::nullopt, std::nullopt});
  CHECK(filter.allows("GET", "/", "[::1]:8001"));
  CHECK(filter.allows("GET", "/", "[::1]"));
}

TEST_CASE("exec and attach are refused by the default reject-paths, whatever the method or the escaping") {
  const RequestFilter filter(kubectlDefaults());
  CHECK_FALSE(filter.allows("POST", "/api/v1/namespaces/a/pods/x/exec?command=sh", "localhost:8001"));
  CHECK_FALSE(filter.allows("GET", "/api/v1/namespaces/a/pods/x/exec?command=sh", "localhost:8001"));
  CHECK_FALSE(filter.allows("GET", "/api/v1/namespaces/a/pods/x/attach?stdout=true", "127.0.0.1:8001"));
  // The path is matched decoded, as Go's URL.Path, so an escaped letter is no way around it.
  CHECK_FALSE(filter.allows("POST", "/api/v1/namespaces/a/pods/x/%65xec", "localhost"));
  CHECK_FALSE(filter.allows("POST", "/api/v1/namespaces/a/pods/x%2Fexec", "localhost"));
  // A malformed escape is a 400 in Go before kubectl's filter: never let through.
  CHECK_FALSE(filter.allows("GET", "/api/v1/namespaces/a/pods/x%zz", "localhost"));
  CHECK_FALSE(filter.allows("GET", "/api/v1/pods%4", "localhost"));
  // The query is not part of the path.
  CHECK(filter.allows("GET", "/api/v1/pods?x=/api/v1/pods/y/exec", "localhost"));
  CHECK(filter.allows("GET", "/api/v1/namespaces/a/pods/x/log", "localhost"));
  CHECK(filter.allows("POST", "/api/v1/namespaces/a/pods/x/portforward", "localhost"));  // not in kubectl's list
  CHECK(filter.allows("POST", "/api/v1/namespaces/a/configmaps", "localhost"));
}

TEST_CASE("The path is Go's URL.Path of the request target") {
  CHECK(filteredPath("/api/v1/pods?watch=1") == "/api/v1/pods");
  CHECK(filteredPath("/a%20b/%2f") == "/a b//");
  CHECK(filteredPath("/a+b") == "/a+b");
  CHECK(filteredPath("*") == "*");
  CHECK(filteredPath("//x/y") == "//x/y");  // origin-form: no authority
  CHECK(filteredPath("http://h:1/api/v1/pods?x") == "/api/v1/pods");
  CHECK(filteredPath("http://h:1") == "");
  CHECK(filteredPath("http:/api") == "/api");
  CHECK_FALSE(filteredPath("%41").has_value());
  CHECK_FALSE(filteredPath("api/v1").has_value());
  CHECK_FALSE(filteredPath("http:opaque").has_value());
  CHECK_FALSE(filteredPath("/%").has_value());
  CHECK(absoluteFormAuthority("http://user@evil.example:1/x") == "evil.example:1");
  CHECK(absoluteFormAuthority("/x") == "");
}

TEST_CASE("An absolute-form target's authority is the host, as Go's server takes it") {
  const RequestFilter filter(kubectlDefaults());
  CHECK_FALSE(filter.allows("GET", "http://evil.example/api/v1/pods", "localhost:8001"));
  CHECK(filter.allows("GET", "http://localhost:8001/api/v1/pods", "evil.example"));
  CHECK_FALSE(filter.allows("GET", "http://localhost:8001/api/v1/namespaces/a/pods/x/exec", "localhost"));
}

TEST_CASE("reject-methods refuses matching methods; kubectl's default ^$ refuses none") {
  CHECK(RequestFilter(kubectlDefaults()).allows("DELETE", "/api/v1/namespaces/a", "localhost"));
  const RequestFilter filter({std::nullopt, std::nullopt, std::nullopt, Names{"POST", "PUT", "PATCH"}});
  CHECK_FALSE(filter.allows("POST", "/api/v1/namespaces/a/configmaps", "anything"));
  CHECK_FALSE(filter.allows("PATCH", "/api/v1/namespaces/a/configmaps/c", "anything"));
  CHECK(filter.allows("GET", "/api/v1/namespaces/a/configmaps", "anything"));
  CHECK(filter.allows("DELETE", "/api/v1/namespaces/a/configmaps/c", "anything"));
}

TEST_CASE("Patterns match anywhere unless anchored, and an empty list matches nothing") {
  const RequestFilter unanchored({Names{"localhost"}, std::nullopt, std::nullopt, std::nullopt});
  CHECK(unanchored.allows("GET", "/", "localhost.evil.example"));  // why kubectl's defaults are anchored
  const RequestFilter none({Names{}, std::nullopt, std::nullopt, std::nullopt});
  CHECK(none.active());
  CHECK_FALSE(none.allows("GET", "/", "localhost"));
  const RequestFilter accept_none({std::nullopt, Names{}, std::nullopt, std::nullopt});
  CHECK_FALSE(accept_none.allows("GET", "/", "localhost"));
  const RequestFilter reject_none({std::nullopt, std::nullopt, Names{}, Names{}});
  CHECK(reject_none.allows("POST", "/api/v1/namespaces/a/pods/x/exec", "localhost"));
}

TEST_CASE("No list set: the filter is inactive and allows everything") {
  const RequestFilter filter(RequestFilterPatterns{});
  CHECK_FALSE(filter.active());
  CHECK(filter.allows("POST", "/api/v1/namespaces/a/pods/x/exec", "evil.example"));
  CHECK(filter.allows("GET", "/%zz", ""));
}

TEST_CASE("Long paths are matched without exhausting the stack") {
  const RequestFilter filter(kubectlDefaults());
  const std::string name(100 * 1024, 'a');
  CHECK(filter.allows("GET", "/api/v1/namespaces/a/pods/" + name, "localhost"));
  CHECK_FALSE(filter.allows("GET", "/api/v1/namespaces/a/pods/" + name + "/exec", "localhost"));
  CHECK_FALSE(filter.allows("GET", "/api/v1/pods", std::string(100 * 1024, 'h')));
  // Patterns std::regex matches (not of the defaults' shape): its non-recursive matcher.
  const RequestFilter regexes({Names{"^[a-z]+$"}, Names{"^/api/v[0-9]+/.*"}, Names{"/(exec|attach)$"}, std::nullopt});
  CHECK(regexes.allows("GET", "/api/v1/namespaces/a/pods/" + name, "localhost"));
  CHECK_FALSE(regexes.allows("GET", "/api/v1/namespaces/a/pods/" + name + "/exec", "localhost"));
  CHECK_FALSE(regexes.allows("GET", "/api/v1/pods", std::string(100 * 1024, 'h') + "1"));
}

TEST_CASE("Back-references do not compile: Go's regexp has none") {
  CHECK_THROWS_AS(RequestFilter({Names{"(a)\\1"}, std::nullopt, std::nullopt, std::nullopt}), std::regex_error);
  CHECK_THROWS_AS(RequestFilter({std::nullopt, Names{"^/api(/"}, std::nullopt, std::nullopt}), std::regex_error);
}

TEST_CASE("kubectl's default shapes are matched without std::regex, with std::regex's answers") {
  for (const char* pattern : {"^localhost$", "^127\\.0\\.0\\.1$", "^\\[::1\\]$", "^.*", "^$", "^/api/.*/pods/.*/exec"}) {
    CAPTURE(pattern);
    CHECK(LiteralChain::parse(pattern).has_value());
  }
  for (const char* pattern : {"localhost", "^a+", "^a.", "^a.*?b", "^a.+", "^(a)", "^\\d", "^a$b", "^a|b", "^[ab]",
                              "^a b", "^a\\nb", "^a{2}", "^a.**"}) {
    CAPTURE(pattern);
    CHECK_FALSE(LiteralChain::parse(pattern).has_value());
  }
  // Every text of up to 6 characters from an alphabet with line breaks, against std::regex.
  const std::string alphabet = "ab/\n\r:";
  const char* patterns[] = {"^.*", "^$", "^a$", "^a.*b$", "^a.*$", "^ab.*b.*b", "^a.*a.*a$", "^/.*a", "^.*a.*$",
                            "^.*b", "^\\/a\\:.*b"};
  for (const char* pattern : patterns) {
    CAPTURE(pattern);
    const std::optional<LiteralChain> chain = LiteralChain::parse(pattern);
    REQUIRE(chain.has_value());
    const std::regex reference(pattern, std::regex::ECMAScript);
    std::vector<std::string> texts = {""};
    for (size_t length = 0, begin = 0; length < 6; ++length) {
      const size_t end = texts.size();
      for (size_t i = begin; i < end; ++i) {
        for (char c : alphabet) texts.push_back(texts[i] + c);
      }
      begin = end;
    }
    size_t disagreements = 0;
    for (const std::string& text : texts) {
      if (chain->matches(text) != std::regex_search(text, reference)) {
        if (++disagreements < 5) FAIL_CHECK("pattern " << pattern << " disagrees on \"" << text << "\"");
      }
    }
    CHECK(disagreements == 0);
  }
}
