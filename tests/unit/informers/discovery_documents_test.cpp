// Reading the upstream's discovery documents, the CRD and APIService lists (contract N5,
// S6), with bodies shaped as kube-apiserver 1.34 sends them.

#include <doctest/doctest.h>

#include "proxy/upstream/discovery_documents.h"

using namespace proxy::upstream;

TEST_CASE("Aggregated discovery yields every top-level resource with kind, scope and verbs, skipping subresources") {
  const auto resources = parseAggregatedDiscovery(R"({"kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2","metadata":{},"items":[
    {"metadata":{"name":"apps","creationTimestamp":null},"versions":[
      {"version":"v1","resources":[
        {"resource":"deployments","responseKind":{"group":"apps","version":"v1","kind":"Deployment"},"scope":"Namespaced",
         "singularResource":"deployment","verbs":["create","delete","get","list","patch","update","watch"],
         "subresources":[{"subresource":"scale","responseKind":{"group":"autoscaling","version":"v1","kind":"Scale"},"verbs":["get","patch","update"]}]},
        {"resource":"controllerrevisions","responseKind":{"group":"apps","version":"v1","kind":"ControllerRevision"},"scope":"Namespaced","verbs":["get","list","watch"]}],
       "freshness":"Current"}]},
    {"metadata":{"name":"rbac.authorization.k8s.io"},"versions":[
      {"version":"v1","resources":[{"resource":"clusterroles","responseKind":{"group":"rbac.authorization.k8s.io","version":"v1","kind":"ClusterRole"},"scope":"Cluster","verbs":["get","list","watch"]}]}]}]})");
  REQUIRE(resources);
  REQUIRE(resources->size() == 3);
  const auto& deployments = (*resources)[0];
  CHECK(deployments.group == "apps");
  CHECK(deployments.version == "v1");
  CHECK(deployments.resource == "deployments");
  CHECK(deployments.kind == "Deployment");
  CHECK(deployments.list_kind == "DeploymentList");
  CHECK(deployments.namespaced);
  CHECK(deployments.verbs.size() == 7);
  CHECK((*resources)[1].resource == "controllerrevisions");
  CHECK_FALSE((*resources)[2].namespaced);
  CHECK((*resources)[2].apiVersion() == "rbac.authorization.k8s.io/v1");
}

TEST_CASE("The core group of aggregated discovery has no name") {
  const auto resources = parseAggregatedDiscovery(R"({"kind":"APIGroupDiscoveryList","items":[{"metadata":{"creationTimestamp":null},"versions":[{"version":"v1","resources":[{"resource":"pods","responseKind":{"group":"","version":"v1","kind":"Pod"},"scope":"Namespaced","verbs":["list","watch"]},{"resource":"nodes","responseKind":{"kind":"Node"},"scope":"Cluster","verbs":["list","watch"]}]}]}]})");
  REQUIRE(resources);
  REQUIRE(resources->size() == 2);
  CHECK((*resources)[0].group.empty());
  CHECK((*resources)[0].displayName() == "pods");
  CHECK_FALSE((*resources)[1].namespaced);
}

TEST_CASE("A document that is not an APIGroupDiscoveryList is not read as one") {
  CHECK_FALSE(parseAggregatedDiscovery(R"({"kind":"APIVersions","versions":["v1"]})"));
  CHECK_FALSE(parseAggregatedDiscovery("not json"));
}

TEST_CASE("Legacy discovery: the group list puts each group's preferred version first") {
  const auto gvs = parseGroupVersions(R"({"kind":"APIGroupList","apiVersion":"v1","groups":[
    {"name":"autoscaling","versions":[{"groupVersion":"autoscaling/v1","version":"v1"},{"groupVersion":"autoscaling/v2","version":"v2"}],
     "preferredVersion":{"groupVersion":"autoscaling/v2","version":"v2"}},
    {"name":"apps","versions":[{"groupVersion":"apps/v1","version":"v1"}],"preferredVersion":{"groupVersion":"apps/v1","version":"v1"}}]})");
  REQUIRE(gvs);
  CHECK(*gvs == std::vector<std::string>{"autoscaling/v2", "autoscaling/v1", "apps/v1"});
  CHECK(*parseCoreVersions(R"({"kind":"APIVersions","versions":["v1"]})") == std::vector<std::string>{"v1"});
}

TEST_CASE("Legacy discovery: an APIResourceList yields resources and skips subresources") {
  const auto resources = parseResourceList(R"({"kind":"APIResourceList","groupVersion":"v1","resources":[
    {"name":"pods","singularName":"pod","namespaced":true,"kind":"Pod","verbs":["create","get","list","watch"]},
    {"name":"pods/log","singularName":"","namespaced":true,"kind":"Pod","verbs":["get"]},
    {"name":"namespaces","singularName":"namespace","namespaced":false,"kind":"Namespace","verbs":["get","list","watch"]}]})",
                                           "", "v1");
  REQUIRE(resources);
  REQUIRE(resources->size() == 2);
  CHECK((*resources)[0].resource == "pods");
  CHECK((*resources)[0].namespaced);
  CHECK((*resources)[1].resource == "namespaces");
  CHECK_FALSE((*resources)[1].namespaced);
  CHECK((*resources)[1].list_kind == "NamespaceList");
}

TEST_CASE("APIServices with a service are aggregated APIs; local ones are not") {
  const auto aggregated = parseAggregatedGroupVersions(R"({"kind":"APIServiceList","items":[
    {"metadata":{"name":"v1.apps"},"spec":{"group":"apps","version":"v1","service":null,"groupPriorityMinimum":17800}},
    {"metadata":{"name":"v1beta1.metrics.k8s.io"},"spec":{"group":"metrics.k8s.io","version":"v1beta1","service":{"namespace":"kube-system","name":"metrics-server","port":443}}}]})");
  REQUIRE(aggregated);
  CHECK(*aggregated == std::set<std::string>{"metrics.k8s.io/v1beta1"});
}

TEST_CASE("The CRD list names the custom resources; one CRD gives its list kind and selectable fields (S6)") {
  const auto keys = parseCustomResourceKeys(R"({"kind":"CustomResourceDefinitionList","items":[
    {"metadata":{"name":"widgets.example.com"},"spec":{"group":"example.com","names":{"plural":"widgets","kind":"Widget"}}},
    {"metadata":{"name":"gateways.gateway.networking.k8s.io"},"spec":{"group":"gateway.networking.k8s.io","names":{"plural":"gateways","kind":"Gateway"}}}]})");
  REQUIRE(keys);
  CHECK(keys->count(groupResourceKey("example.com", "widgets")) == 1);
  CHECK(keys->count(groupResourceKey("gateway.networking.k8s.io", "gateways")) == 1);

  const std::string crd = R"({"kind":"CustomResourceDefinition","spec":{"group":"example.com",
    "names":{"plural":"widgets","kind":"Widget","listKind":"WidgetList"},"scope":"Namespaced",
    "versions":[{"name":"v1beta1","served":true,"storage":false},
                {"name":"v1","served":true,"storage":true,"selectableFields":[{"jsonPath":".spec.color"},{"jsonPath":".spec.size"}]}]}})";
  const auto v1 = parseCustomResourceDefinition(crd, "v1");
  REQUIRE(v1);
  CHECK(v1->list_kind == "WidgetList");
  CHECK(v1->json_paths == std::vector<std::string>{"spec.color", "spec.size"});
  const auto v1beta1 = parseCustomResourceDefinition(crd, "v1beta1");
  REQUIRE(v1beta1);
  CHECK(v1beta1->json_paths.empty());
  CHECK_FALSE(parseCustomResourceDefinition(R"({"kind":"Status","code":404})", "v1"));
}
