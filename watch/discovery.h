#pragma once
// Discovery: what the upstream serves, as the informer manager needs it (kind, list kind,
// namespaced-ness, verbs). Always asked of the upstream, never taken from a table of
// built-ins, so custom resources work like any other (client-go discovery client).
//
// watch/ declares it; proxy/upstream/ implements it over HTTP and cmd injects it.
// Calls block; the manager makes them from its own thread only.

#include <optional>
#include <string>
#include <vector>

#include "watch/api_resource.h"

namespace watch {

struct DiscoveryResult {
  // Top-level resources served by the upstream itself: subresources ("pods/log") and
  // resources of aggregated APIs (served by another server behind the upstream) are left
  // out, since neither can be cached. Per group, the preferred version comes first.
  // field_spec is not set here (see selectableFields()).
  std::vector<ApiResource> resources;
  // Why discovery failed; empty on success.
  std::string error;

  bool ok() const { return error.empty(); }
};

// What the CRD behind a custom resource says about field selectors (contract S6).
struct CustomResourceFields {
  // spec.names.listKind; "" when the CRD leaves it to the default (kind + "List").
  std::string list_kind;
  // spec.versions[name == version].selectableFields[].jsonPath, without the leading '.'.
  std::vector<std::string> json_paths;
};

class Discovery {
 public:
  virtual ~Discovery() = default;

  virtual DiscoveryResult discover() = 0;
  // Reads the CRD of a custom resource (`resource.custom`). nullopt when it cannot be read
  // (forbidden, gone, upstream down): the resource then gets metadata-only field selectors.
  virtual std::optional<CustomResourceFields> customResourceFields(const ApiResource& resource) = 0;
};

}  // namespace watch
