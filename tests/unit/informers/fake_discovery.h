#pragma once
// A Discovery that answers from a list the test controls, and counts its calls.

#include <atomic>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "watch/discovery.h"

namespace watch::testing {

inline ApiResource apiResource(std::string group, std::string version, std::string resource, std::string kind,
                               bool namespaced = true,
                               std::vector<std::string> verbs = {"create", "delete", "get", "list", "patch",
                                                                 "update", "watch"}) {
  ApiResource r;
  r.group = std::move(group);
  r.version = std::move(version);
  r.resource = std::move(resource);
  r.kind = std::move(kind);
  r.list_kind = r.kind + "List";
  r.namespaced = namespaced;
  r.verbs = std::move(verbs);
  return r;
}

class FakeDiscovery final : public Discovery {
 public:
  void setResources(std::vector<ApiResource> resources) {
    std::lock_guard lock(mu_);
    resources_ = std::move(resources);
  }
  void setError(std::string error) {
    std::lock_guard lock(mu_);
    error_ = std::move(error);
  }
  void setCustomFields(const std::string& display_name, CustomResourceFields fields) {
    std::lock_guard lock(mu_);
    custom_[display_name] = std::move(fields);
  }

  // watch::Discovery
  DiscoveryResult discover() override {
    std::lock_guard lock(mu_);
    ++discoveries;
    DiscoveryResult result;
    if (!error_.empty()) {
      result.error = error_;
      return result;
    }
    result.resources = resources_;
    return result;
  }
  std::optional<CustomResourceFields> customResourceFields(const ApiResource& resource) override {
    std::lock_guard lock(mu_);
    auto it = custom_.find(resource.displayName());
    if (it == custom_.end()) return std::nullopt;
    return it->second;
  }

  std::atomic<int> discoveries{0};

 private:
  std::mutex mu_;
  std::vector<ApiResource> resources_;
  std::string error_;
  std::map<std::string, CustomResourceFields> custom_;
};

}  // namespace watch::testing
