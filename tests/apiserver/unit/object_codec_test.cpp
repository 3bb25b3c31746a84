// Stored object encoding: apiserver key order and list-item views (L1).
#include <doctest/doctest.h>

#include <rapidjson/document.h>

#include "tests/apiserver/http/http_types.h"
#include "tests/apiserver/storage/object_codec.h"
#include "tests/apiserver/http/request_info.h"

namespace testapi {

TEST_CASE("Built-in objects serialize kind, apiVersion, metadata first and status last") {
  auto catalog = ResourceCatalog::builtinDefault();
  const auto& pods = *catalog.find("", "v1", "pods");
  rapidjson::Document d;
  d.Parse(R"({"status":{"phase":"Running"},"spec":{"nodeName":"n"},"metadata":{"resourceVersion":"5","labels":{"z":"1","a":"2"},"name":"p","namespace":"ns"},"apiVersion":"v1","kind":"Pod"})");
  auto obj = makeStored(pods, d);
  CHECK(obj->json ==
        R"({"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","namespace":"ns","resourceVersion":"5","labels":{"a":"2","z":"1"}},"spec":{"nodeName":"n"},"status":{"phase":"Running"}})");
  std::string item;
  obj->appendItem(item);
  CHECK(item == R"({"metadata":{"name":"p","namespace":"ns","resourceVersion":"5","labels":{"a":"2","z":"1"}},"spec":{"nodeName":"n"},"status":{"phase":"Running"}})");
  CHECK(obj->key == "ns/p");
  CHECK(obj->rv == 5);
  CHECK(obj->fields.at("spec.nodeName") == "n");
}

TEST_CASE("Custom resources serialize with sorted keys and keep kind in list items (L1)") {
  auto catalog = ResourceCatalog::builtinDefault();
  const auto& widgets = *catalog.find("example.com", "v1", "widgets");
  rapidjson::Document d;
  d.Parse(R"({"kind":"Widget","apiVersion":"example.com/v1","metadata":{"name":"w","namespace":"ns","resourceVersion":"2"},"spec":{"size":1,"color":"red"}})");
  auto obj = makeStored(widgets, d);
  CHECK(obj->json ==
        R"({"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","namespace":"ns","resourceVersion":"2"},"spec":{"color":"red","size":1}})");
  std::string item;
  obj->appendItem(item);
  CHECK(item == obj->json);
}

TEST_CASE("A deleted object's last state carries the deletion resourceVersion (W3)") {
  auto catalog = ResourceCatalog::builtinDefault();
  const auto& cms = *catalog.find("", "v1", "configmaps");
  rapidjson::Document d;
  d.Parse(R"({"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"c","namespace":"ns","resourceVersion":"2"}})");
  auto moved = withResourceVersion(cms, *makeStored(cms, d), 9);
  CHECK(moved->rv == 9);
  CHECK(moved->json.find(R"("resourceVersion":"9")") != std::string::npos);
}

TEST_CASE("Request paths split into verb, resource, namespace, name and subresource (W1)") {
  HttpRequest req;
  req.method = "GET";
  req.path = "/api/v1/namespaces/ns/pods/p/log";
  auto info = parseRequestInfo(req);
  CHECK(info.is_resource_request);
  CHECK(info.verb == "get");
  CHECK(info.ns == "ns");
  CHECK(info.resource == "pods");
  CHECK(info.name == "p");
  CHECK(info.subresource == "log");

  req.path = "/api/v1/watch/namespaces/ns/pods";
  info = parseRequestInfo(req);
  CHECK(info.verb == "watch");
  CHECK(info.watch_prefix);

  // A named GET is a GET whatever ?watch says (the real apiserver answers the object).
  req.path = "/api/v1/namespaces/ns/pods/p";
  req.query = parseQuery("watch=true");
  info = parseRequestInfo(req);
  CHECK(info.verb == "get");
  req.query.clear();

  req.path = "/api/v1/namespaces/ns";
  info = parseRequestInfo(req);
  CHECK(info.resource == "namespaces");
  CHECK(info.name == "ns");

  req.path = "/apis/apps/v1/deployments";
  req.query = parseQuery("watch=True&labelSelector=app%3Dweb");
  info = parseRequestInfo(req);
  CHECK(info.group == "apps");
  CHECK(info.verb == "watch");
  CHECK(req.param("labelSelector")->compare("app=web") == 0);

  req.method = "DELETE";
  req.query.clear();
  info = parseRequestInfo(req);
  CHECK(info.verb == "deletecollection");
}

TEST_CASE("The compiled-in catalog serves the documented resources") {
  auto catalog = ResourceCatalog::builtinDefault();
  for (auto [g, r] : std::vector<std::pair<std::string, std::string>>{
           {"", "pods"}, {"", "configmaps"}, {"", "secrets"}, {"", "services"}, {"", "endpoints"}, {"", "events"},
           {"", "namespaces"}, {"", "nodes"}, {"apps", "deployments"}, {"apps", "replicasets"}, {"example.com", "widgets"}})
    CHECK_MESSAGE(catalog.find(g, "v1", r), r);
  CHECK_FALSE(catalog.find("", "v1", "nodes")->def.namespaced);
  const auto& w = catalog.find("example.com", "v1", "widgets")->def;
  CHECK_FALSE(w.builtin);
  CHECK(w.selectable_fields == std::vector<std::string>{"spec.color"});
  CHECK(w.printer_columns.size() == 3);
}

}  // namespace testapi
