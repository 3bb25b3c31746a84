#include "proxy/request_info.h"

#include <doctest/doctest.h>

using proxy::RequestInfo;

TEST_CASE("RequestInfo parses core and group resource paths like the apiserver") {
  SUBCASE("namespaced collection in the core group is a list") {
    auto info = RequestInfo::parse("GET", "/api/v1/namespaces/default/pods?limit=500");
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
    auto info = RequestInfo::parse("GET", "/apis/apps/v1/namespaces/kube-system/deployments/coredns");
    CHECK(info.verb == "get");
    CHECK(info.api_group == "apps");
    CHECK(info.namespace_ == "kube-system");
    CHECK(info.resource == "deployments");
    CHECK(info.name == "coredns");
  }
  SUBCASE("cluster-scoped collection across namespaces") {
    auto info = RequestInfo::parse("GET", "/api/v1/pods");
    CHECK(info.verb == "list");
    CHECK(info.namespace_ == "");
    CHECK(info.resource == "pods");
  }
  SUBCASE("cluster-scoped object") {
    auto info = RequestInfo::parse("GET", "/apis/rbac.authorization.k8s.io/v1/clusterroles/admin");
    CHECK(info.resource == "clusterroles");
    CHECK(info.name == "admin");
    CHECK(info.namespace_ == "");
  }
  SUBCASE("a namespace is a cluster-scoped object that also names its namespace") {
    auto info = RequestInfo::parse("GET", "/api/v1/namespaces/kube-system");
    CHECK(info.resource == "namespaces");
    CHECK(info.name == "kube-system");
    CHECK(info.namespace_ == "kube-system");
  }
  SUBCASE("namespace status and finalize are subresources of the namespace") {
    auto info = RequestInfo::parse("PUT", "/api/v1/namespaces/demo/finalize");
    CHECK(info.verb == "update");
    CHECK(info.resource == "namespaces");
    CHECK(info.name == "demo");
    CHECK(info.subresource == "finalize");
  }
  SUBCASE("subresources such as log, status and exec") {
    auto log = RequestInfo::parse("GET", "/api/v1/namespaces/ns/pods/web-0/log?follow=true");
    CHECK(log.verb == "get");
    CHECK(log.resource == "pods");
    CHECK(log.name == "web-0");
    CHECK(log.subresource == "log");
    auto exec = RequestInfo::parse("POST", "/api/v1/namespaces/ns/pods/web-0/exec?command=sh");
    CHECK(exec.verb == "create");
    CHECK(exec.subresource == "exec");
  }
}

TEST_CASE("RequestInfo derives the verb from method, name and the watch parameter (E4)") {
  CHECK(RequestInfo::parse("GET", "/api/v1/pods?watch=true").verb == "watch");
  CHECK(RequestInfo::parse("GET", "/api/v1/pods?watch=True&resourceVersion=1").verb == "watch");
  CHECK(RequestInfo::parse("GET", "/api/v1/pods?watch=1").verb == "watch");
  CHECK(RequestInfo::parse("GET", "/api/v1/pods?watch").verb == "watch");
  CHECK(RequestInfo::parse("GET", "/api/v1/pods?watch=false").verb == "list");
  CHECK(RequestInfo::parse("GET", "/api/v1/pods?watch=FALSE").verb == "list");
  CHECK(RequestInfo::parse("GET", "/api/v1/pods?watch=0").verb == "list");
  CHECK(RequestInfo::parse("HEAD", "/api/v1/pods").verb == "list");
  CHECK(RequestInfo::parse("POST", "/api/v1/namespaces/a/configmaps").verb == "create");
  CHECK(RequestInfo::parse("PUT", "/api/v1/namespaces/a/configmaps/c").verb == "update");
  CHECK(RequestInfo::parse("PATCH", "/api/v1/namespaces/a/configmaps/c").verb == "patch");
  CHECK(RequestInfo::parse("DELETE", "/api/v1/namespaces/a/configmaps/c").verb == "delete");
  CHECK(RequestInfo::parse("DELETE", "/api/v1/namespaces/a/configmaps").verb == "deletecollection");
  CHECK(RequestInfo::parse("OPTIONS", "/api/v1/pods").verb == "");
}

TEST_CASE("RequestInfo treats the deprecated /watch/ prefix as verb watch") {
  auto info = RequestInfo::parse("GET", "/api/v1/watch/namespaces/default/pods/web-0");
  CHECK(info.is_resource_request);
  CHECK(info.verb == "watch");
  CHECK(info.namespace_ == "default");
  CHECK(info.resource == "pods");
  CHECK(info.name == "web-0");
  CHECK(RequestInfo::parse("GET", "/apis/apps/v1/watch/deployments").verb == "watch");
}

TEST_CASE("RequestInfo takes the name from a metadata.name field selector on list and watch") {
  auto info = RequestInfo::parse("GET", "/api/v1/namespaces/a/pods?fieldSelector=metadata.name%3Dweb-0&watch=true");
  CHECK(info.verb == "watch");
  CHECK(info.name == "web-0");
  CHECK(RequestInfo::parse("GET", "/api/v1/pods?fieldSelector=spec.nodeName%3Dn1").name == "");
}

TEST_CASE("RequestInfo reports discovery and other paths as non-resource requests") {
  for (const char* path : {"/healthz", "/version", "/api", "/api/v1", "/apis", "/apis/apps", "/apis/apps/v1",
                           "/openapi/v3/apis/apps/v1", "/metrics", "/"}) {
    CAPTURE(path);
    auto info = RequestInfo::parse("GET", path);
    CHECK_FALSE(info.is_resource_request);
    CHECK(info.verb == "get");
    CHECK(info.resource == "");
  }
  CHECK(RequestInfo::parse("POST", "/logs").verb == "post");
}
