// Names from requests on their way to the upstream and the log (issue 36, finding 4).
#include <doctest/doctest.h>

#include <initializer_list>
#include <string>

#include "cache/selectors/name_validation.h"
#include "parse_request_info.h"
#include "proxy/observability/logging.h"
#include "proxy/reads/cache_serving.h"
#include "watch/api_resource.h"

TEST_CASE("A namespace is a DNS-1123 label, as ValidateNamespaceName requires") {
  for (const std::string& name : std::initializer_list<std::string>{"a", "default", "kube-system", "web-0", "0", std::string(63, 'x')}) {
    CHECK_MESSAGE(cache::isDNS1123Label(name), name);
  }
  for (const std::string& name : std::initializer_list<std::string>{"", "-a", "a-", "A", "a.b", "a_b", "a b", "\r\nx", "a/b", std::string(64, 'x')}) {
    CHECK_FALSE_MESSAGE(cache::isDNS1123Label(name), name);
  }
}

TEST_CASE("Collection paths for the upstream are escaped as client-go's URL.EscapedPath escapes them") {
  CHECK(watch::collectionPath("", "v1", "pods", "") == "/api/v1/pods");
  CHECK(watch::collectionPath("apps", "v1", "deployments", "web") == "/apis/apps/v1/namespaces/web/deployments");
  CHECK(watch::collectionPath("", "v1", "pods", "\r\nFORGED x") == "/api/v1/namespaces/%0D%0AFORGED%20x/pods");
  // The decoded request path names the collection; what goes upstream is escaped again.
  const proxy::RequestInfo info = parseRequestInfo("GET", "/api/v1/namespaces/%0D%0AGET%20x/pods");
  REQUIRE(info.namespace_ == "\r\nGET x");
  CHECK(proxy::io::collectionPath(info, info.namespace_) == "/api/v1/namespaces/%0D%0AGET%20x/pods");
}

TEST_CASE("A text log message is one line whatever it holds") {
  CHECK(proxy::escapeLogText("pods in namespace \r\nFORGED line") == "pods in namespace \\r\\nFORGED line");
  CHECK(proxy::escapeLogText(std::string("a\0b\x1b[31m\x7f\tc", 11)) == "a\\x00b\\x1b[31m\\x7f\tc");
  CHECK(proxy::escapeLogText("plain: 100% é") == "plain: 100% é");
}
