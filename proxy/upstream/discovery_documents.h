#pragma once
// Readers for the upstream's discovery documents (contract N5) and the two registries
// that tell us which resources are custom (CRDs) and which group versions are served by
// another server (APIServices with a service: aggregated APIs). Pure functions over
// bodies, so they are tested without HTTP; HttpDiscovery does the requests.
//
// Every reader returns nullopt for a body it cannot read (not JSON, wrong shape).

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "watch/api_resource.h"

namespace proxy::upstream {

// "group/resource" keys as used by the sets below ("" group for core).
std::string groupResourceKey(std::string_view group, std::string_view resource);

// apidiscovery.k8s.io/v2 APIGroupDiscoveryList (from /api or /apis): top-level resources
// of every group version, versions in the document's (preference) order. Subresources
// are not resources and are skipped.
std::optional<std::vector<watch::ApiResource>> parseAggregatedDiscovery(std::string_view body);

// Legacy APIGroupList (/apis): per group, its group versions with the preferred first.
std::optional<std::vector<std::string>> parseGroupVersions(std::string_view body);

// Legacy APIVersions (/api): the core versions, e.g. {"v1"}.
std::optional<std::vector<std::string>> parseCoreVersions(std::string_view body);

// Legacy APIResourceList (/api/v1, /apis/<g>/<v>): top-level resources (names with '/'
// are subresources and are skipped).
std::optional<std::vector<watch::ApiResource>> parseResourceList(std::string_view body, std::string_view group,
                                                                 std::string_view version);

// APIServiceList: the group versions ("group/version") served by another server
// (spec.service set). Local ones (spec.service null) are the upstream's own.
std::optional<std::set<std::string>> parseAggregatedGroupVersions(std::string_view body);

// CustomResourceDefinitionList: "group/plural" of every CRD.
std::optional<std::set<std::string>> parseCustomResourceKeys(std::string_view body);

// One CustomResourceDefinition: spec.names.listKind and the selectableFields of `version`.
struct CustomResourceDefinitionFacts {
  std::string list_kind;
  std::vector<std::string> json_paths;  // without the leading '.'
};
std::optional<CustomResourceDefinitionFacts> parseCustomResourceDefinition(std::string_view body,
                                                                           std::string_view version);

}  // namespace proxy::upstream
