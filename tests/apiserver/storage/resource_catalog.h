#pragma once
// The set of resources kube-test-apiserver serves, loaded from the catalog YAML
// (resources.yaml). A copy of that file is compiled into the binary so it runs
// standalone; --resources overrides it.
//
// Immutable after load: share it freely across threads.

#include <string>
#include <string_view>
#include <vector>

#include "tests/apiserver/api_types.h"

namespace testapi {

// A ResourceDef plus what only the server needs.
struct ServedResource {
  ResourceDef def;
  // Members after "metadata" that the empty Go struct of a built-in type serializes
  // (W7 bookmarks), without surrounding braces; empty for custom resources.
  std::string empty_object_tail;

  bool hasSubresource(std::string_view sub) const;
};

class ResourceCatalog {
 public:
  // Throws std::runtime_error with the reason when the YAML is malformed.
  static ResourceCatalog fromYaml(const std::string& yaml_text);
  static ResourceCatalog builtinDefault();
  static const char* builtinYaml();

  const std::vector<ServedResource>& resources() const { return resources_; }
  // nullptr when the group/version does not serve `resource`.
  const ServedResource* find(std::string_view group, std::string_view version, std::string_view resource) const;
  const ServedResource* findByKind(std::string_view group, std::string_view kind) const;
  // Group versions in catalog order; "" group first.
  std::vector<std::string> groupVersions() const;
  std::vector<std::string> groups() const;

 private:
  std::vector<ServedResource> resources_;
};

}  // namespace testapi
