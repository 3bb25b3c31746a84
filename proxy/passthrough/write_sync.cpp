#include "proxy/passthrough/write_sync.h"

#include <array>

#include <fmt/format.h>
#include <simdjson.h>

#include "cache/object.h"
#include "cache/resource_version.h"
#include "watch/cached_resource.h"
#include "watch/informer_registry.h"

namespace proxy {
namespace {

// Subresources whose writes change the parent object (and so its cache entry).
constexpr std::array<std::string_view, 8> kObjectSubresources = {
    "status", "scale", "ephemeralcontainers", "resize", "approval", "finalize", "eviction", "binding"};

std::optional<uint64_t> parseRV(simdjson::dom::element meta) {
  std::string_view text;
  if (meta["resourceVersion"].get(text) != simdjson::SUCCESS) return std::nullopt;
  const auto rv = cache::ResourceVersion::parse(text);
  if (!rv || rv->isZero()) return std::nullopt;
  return rv->value();
}

std::string_view stringAt(simdjson::dom::element object, std::string_view field) {
  std::string_view out;
  if (object[field].get(out) != simdjson::SUCCESS) return {};
  return out;
}

// The deleted (or marked) object an answer item describes.
std::optional<DeletedObject> deletedObject(simdjson::dom::element object) {
  simdjson::dom::element meta;
  if (object["metadata"].get(meta) != simdjson::SUCCESS) return std::nullopt;
  const std::string_view name = stringAt(meta, "name");
  if (name.empty()) return std::nullopt;
  DeletedObject out;
  out.key = cache::makeKey(stringAt(meta, "namespace"), name);
  out.uid = stringAt(meta, "uid");
  out.resource_version = parseRV(meta).value_or(0);
  simdjson::dom::array finalizers;
  const bool has_finalizers = meta["finalizers"].get(finalizers) == simdjson::SUCCESS && finalizers.size() > 0;
  int64_t grace = 0;
  const bool graceful = meta["deletionGracePeriodSeconds"].get(grace) == simdjson::SUCCESS && grace > 0;
  // A namespace is terminated by its spec.finalizers, after the delete answered.
  const bool terminating_namespace = stringAt(object, "kind") == "Namespace";
  out.stays = out.resource_version > 0 && (has_finalizers || graceful || terminating_namespace);
  return out;
}

}  // namespace

bool isObjectWrite(const RequestInfo& info, const cache::QueryValues& query) {
  if (!info.is_resource_request) return false;
  const std::string& v = info.verb;
  if (v != "create" && v != "update" && v != "patch" && v != "delete" && v != "deletecollection") return false;
  if (!info.subresource.empty()) {
    bool known = false;
    for (std::string_view s : kObjectSubresources) known = known || s == info.subresource;
    if (!known) return false;
  }
  // dryRun=All (any value the apiserver accepts) persists nothing.
  return !query.get("dryRun").has_value();
}

std::optional<WriteExpectation> expectationFor(const RequestInfo& info, std::string_view request_namespace,
                                               std::string_view body) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(body.data(), body.size()).get(doc) != simdjson::SUCCESS || !doc.is_object()) return std::nullopt;
  const std::string_view kind = stringAt(doc, "kind");
  WriteExpectation out;
  if (kind == "Status") {
    // A delete answered with a Status names what it removed in details.
    simdjson::dom::element details;
    if (info.verb != "delete" || doc["details"].get(details) != simdjson::SUCCESS) return std::nullopt;
    const std::string_view name = stringAt(details, "name");
    if (name.empty()) return std::nullopt;
    out.deleted.push_back({cache::makeKey(request_namespace, name), std::string(stringAt(details, "uid")), 0, false});
    return out;
  }
  if (info.verb == "deletecollection") {
    simdjson::dom::array items;
    if (doc["items"].get(items) != simdjson::SUCCESS) return std::nullopt;
    for (simdjson::dom::element item : items) {
      if (auto deleted = deletedObject(item)) out.deleted.push_back(std::move(*deleted));
    }
    return out;
  }
  if (info.verb == "delete" && info.subresource.empty()) {
    auto deleted = deletedObject(doc);
    if (!deleted) return std::nullopt;
    out.deleted.push_back(std::move(*deleted));
    return out;
  }
  simdjson::dom::element meta;
  if (doc["metadata"].get(meta) != simdjson::SUCCESS) return std::nullopt;
  const auto rv = parseRV(meta);
  if (!rv) return std::nullopt;
  out.min_rv = *rv;
  return out;
}

bool satisfiedBy(const WriteExpectation& expected, const cache::ThreadSafeStore& store) {
  if (store.currentRV() < expected.min_rv) return false;
  for (const DeletedObject& deleted : expected.deleted) {
    const cache::ObjectConstSharedPtr object = store.get(deleted.key);
    if (!object) continue;
    std::string buffer;  // a packed object's bytes, for its uid
    if (!deleted.uid.empty() && object->uid(buffer) != deleted.uid) continue;
    if (deleted.stays && object->resourceVersion() >= deleted.resource_version) continue;
    return false;
  }
  return true;
}

std::string writeSyncTimeoutWarning(std::string_view resource, std::chrono::milliseconds waited) {
  return fmt::format(
      "299 - \"kube-cache-proxy: the cache of {} did not show this write within {} ms; reads through the proxy "
      "with resourceVersion=0 may not see it yet\"",
      resource, waited.count());
}

std::optional<WriteSyncTarget> writeSyncTargetFor(const RequestInfo& info, std::string_view target,
                                                  const ServerOptions& options, watch::InformerRegistry* registry,
                                                  ProxyMetrics& metrics) {
  if (!registry || !info.is_resource_request) return std::nullopt;
  if (!options.write_sync && options.write_sync_resources.empty()) return std::nullopt;
  const std::string display = info.api_group.empty() ? info.resource : info.resource + "." + info.api_group;
  bool on = options.write_sync;
  if (auto it = options.write_sync_resources.find(display); it != options.write_sync_resources.end()) on = it->second;
  if (!on) return std::nullopt;
  const size_t qmark = target.find('?');
  const cache::QueryValues query =
      cache::QueryValues::parse(qmark == std::string_view::npos ? std::string_view{} : target.substr(qmark + 1));
  if (!isObjectWrite(info, query)) return std::nullopt;
  // The namespace object is cluster-scoped: /api/v1/namespaces/<n> names it, not a namespace.
  const bool namespace_object = info.api_group.empty() && info.resource == "namespaces";
  std::shared_ptr<watch::CachedResource> cached =
      registry->findRunning(info.api_group, info.api_version, info.resource, namespace_object ? "" : info.namespace_);
  if (!cached || !cached->hasSynced()) return std::nullopt;
  std::string ns = cached->resource().namespaced ? info.namespace_ : "";
  return WriteSyncTarget{std::move(cached), std::move(ns), options.write_sync_timeout, metrics};
}

}  // namespace proxy
