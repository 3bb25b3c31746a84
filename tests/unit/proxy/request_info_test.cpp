#include "parse_request_info.h"
#include "proxy/request_info.h"

#include <doctest/doctest.h>

using proxy::RequestInfo;

TEST_CASE("RequestInfo parses core and group resource paths like the apiserver") {
  SUBCASE("namespaced collection in the core group is a list") {
    auto info = parseRequestInfo("GET", "/api/v1/namespaces/default/pods?limit=500");
    CHECK(info.is_resource_request);
    CHECK(info.verb == "list");
    CHECK(info.api_prefix == "api");
    CHECK(info.api_group == "");
    CHECK(info.api_version == "v1");
    CHECK(info.namespace_ == "default");
    CHECK(info.resource == "pods");
    CHECK(info.name == "");
  }
  SUBCASE("named object in a group is a get") {
    auto info = parseRequestInfo("GET", "/apis/apps/v1/namespaces/kube-system/deployments/coredns");
    CHECK(info.verb == "get");
    CHECK(info.api_group == "apps");
    CHECK(info.namespace_ == "kube-system");
    CHECK(info.resource == "deployments");
    CHECK(info.name == "coredns");
  }
  SUBCASE("cluster-scoped collection across namespaces") {
    auto info = parseRequestInfo("GET", "/api/v1/pods");
    CHECK(info.verb == "list");
    CHECK(info.namespace_ == "");
    CHECK(info.resource == "pods");
  }
  SUBCASE("cluster-scoped object") {
    auto info = parseRequestInfo("GET", "/apis/rbac.authorization.k8s.io/v1/clusterroles/admin");
    CHECK(info.resource == "clusterroles");
    CHECK(info.name == "admin");
    CHECK(info.namespace_ == "");
  }
  SUBCASE("a namespace is a cluster-scoped object that also names its namespace") {
    auto info = parseRequestInfo("GET", "/api/v1/namespaces/kube-system");
    CHECK(info.resource == "namespaces");
    CHECK(info.name == "kube-system");
    CHECK(info.namespace_ == "kube-system");
  }
  SUBCASE("namespace status and finalize are subresources of the namespace") {
    auto info = parseRequestInfo("PUT", "/api/v1/namespaces/demo/finalize");
    CHECK(info.verb == "update");
    CHECK(info.resource == "namespaces");
    CHECK(info.name == "demo");
    CHECK(info.subresource == "finalize");
  }
  SUBCASE("subresources such as log, status and exec") {
    auto log = parseRequestInfo("GET", "/api/v1/namespaces/ns/pods/web-0/log?follow=true");
    CHECK(log.verb == "get");
    CHECK(log.resource == "pods");
    CHECK(log.name == "web-0");
    CHECK(log.subresource == "log");
    auto exec = parseRequestInfo("POST", "/api/v1/namespaces/ns/pods/web-0/exec?command=sh");
    CHECK(exec.verb == "create");
    CHECK(exec.subresource == "exec");
  }
}

TEST_CASE("RequestInfo derives the verb from method, name and the watch parameter (E4)") {
  CHECK(parseRequestInfo("GET", "/api/v1/pods?watch=true").verb == "watch");
  CHECK(parseRequestInfo("GET", "/api/v1/pods?watch=True&resourceVersion=1").verb == "watch");
  CHECK(parseRequestInfo("GET", "/api/v1/pods?watch=1").verb == "watch");
  CHECK(parseRequestInfo("GET", "/api/v1/pods?watch").verb == "watch");
  CHECK(parseRequestInfo("GET", "/api/v1/pods?watch=false").verb == "list");
  CHECK(parseRequestInfo("GET", "/api/v1/pods?watch=FALSE").verb == "list");
  CHECK(parseRequestInfo("GET", "/api/v1/pods?watch=0").verb == "list");
  CHECK(parseRequestInfo("HEAD", "/api/v1/pods").verb == "list");
  CHECK(parseRequestInfo("POST", "/api/v1/namespaces/a/configmaps").verb == "create");
  CHECK(parseRequestInfo("PUT", "/api/v1/namespaces/a/configmaps/c").verb == "update");
  CHECK(parseRequestInfo("PATCH", "/api/v1/namespaces/a/configmaps/c").verb == "patch");
  CHECK(parseRequestInfo("DELETE", "/api/v1/namespaces/a/configmaps/c").verb == "delete");
  CHECK(parseRequestInfo("DELETE", "/api/v1/namespaces/a/configmaps").verb == "deletecollection");
  CHECK(parseRequestInfo("OPTIONS", "/api/v1/pods").verb == "");
}

TEST_CASE("RequestInfo treats the deprecated /watch/ prefix as verb watch") {
  auto info = parseRequestInfo("GET", "/api/v1/watch/namespaces/default/pods/web-0");
  CHECK(info.is_resource_request);
  CHECK(info.verb == "watch");
  CHECK(info.namespace_ == "default");
  CHECK(info.resource == "pods");
  CHECK(info.name == "web-0");
  CHECK(parseRequestInfo("GET", "/apis/apps/v1/watch/deployments").verb == "watch");
}

TEST_CASE("RequestInfo takes the name from a metadata.name field selector on list and watch") {
  auto info = parseRequestInfo("GET", "/api/v1/namespaces/a/pods?fieldSelector=metadata.name%3Dweb-0&watch=true");
  CHECK(info.verb == "watch");
  CHECK(info.name == "web-0");
  CHECK(parseRequestInfo("GET", "/api/v1/pods?fieldSelector=spec.nodeName%3Dn1").name == "");
}

TEST_CASE("The name authorized from a field selector is the one the cache filters by (issue 16, escapes)") {
  // fields.ParseSelector unescapes "\\," and sorts terms; RequiresExactMatch takes the
  // first = or == term. A name that is no path segment names nothing.
  auto name = [](const char* query) { return parseRequestInfo("GET", std::string("/api/v1/namespaces/a/pods?") + query).name; };
  CHECK(name("fieldSelector=metadata.name%3Da%5C%2Cb") == "a,b");
  CHECK(name("fieldSelector=metadata.name%3D%3Dweb-1") == "web-1");
  CHECK(name("fieldSelector=spec.nodeName%3Dn1%2Cmetadata.name%3Dweb-2") == "web-2");
  CHECK(name("fieldSelector=metadata.name%21%3Dweb-3") == "");
  CHECK(name("fieldSelector=metadata.name%3Da%5Cb") == "");  // a bad escape: the selector does not parse
  CHECK(name("fieldSelector=metadata.name%3Da%2Fb") == "");  // not a path segment name
  CHECK(name("fieldSelector=metadata.namespace%3Dx") == "");
}

TEST_CASE("RequestInfo reads the decoded path, as Go's server hands it to the apiserver") {
  auto info = parseRequestInfo("GET", "/api/v1/namespaces/def%61ult/pods/web%2D0?resourceVersion=0");
  CHECK(info.namespace_ == "default");
  CHECK(info.name == "web-0");
  CHECK(info.path == "/api/v1/namespaces/default/pods/web-0");
  info = parseRequestInfo("GET", "/api/v1/namespaces/a/pods/web%2F0");
  CHECK(info.name == "web");
  CHECK(info.subresource == "0");
  CHECK(parseRequestInfo("GET", "/api/v1/namespaces/a/pods/a+b").name == "a+b");  // '+' is no space in a path
  info = parseRequestInfo("GET", "/api/v1/namespaces/a/pods/web%zz");
  CHECK_FALSE(info.is_resource_request);  // Go's 400 before any handler: the upstream's to give
  CHECK(info.path == "/api/v1/namespaces/a/pods/web%zz");
}

TEST_CASE("RequestInfo reports discovery and other paths as non-resource requests") {
  for (const char* path : {"/healthz", "/version", "/api", "/api/v1", "/apis", "/apis/apps", "/apis/apps/v1",
                           "/openapi/v3/apis/apps/v1", "/metrics", "/"}) {
    CAPTURE(path);
    auto info = parseRequestInfo("GET", path);
    CHECK_FALSE(info.is_resource_request);
    CHECK(info.verb == "get");
    CHECK(info.resource == "");
  }
  CHECK(parseRequestInfo("POST", "/logs").verb == "post");
}
