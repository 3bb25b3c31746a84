#include "tests/apiserver/lists/list_paging.h"

#include "tests/apiserver/features/feature_gates.h"
#include "tests/apiserver/selectors/label_validation.h"

namespace testapi {

namespace {

// NamespaceKeyFunc / NoNamespaceKeyFunc succeed: a name that content.IsPathSegmentName
// accepts and, for a namespaced resource, a namespace in the request context.
bool objectKeyBuildable(const ResourceDef& def, std::string_view ns, std::string_view name) {
  if (def.namespaced && ns.empty()) return false;
  if (name.empty() || name == "." || name == "..") return false;
  return name.find('/') == std::string_view::npos && name.find('%') == std::string_view::npos;
}

}  // namespace

Result<ObjectFilter> ObjectFilter::make(const ServedResource& res, const std::string& ns, const std::string& name,
                                        const ListOptions& opts) {
  ObjectFilter f;
  f.scope_ns_ = ns;
  f.name_ = name;
  if (!opts.label_selector.empty()) {
    auto ls = parseLabelSelector(opts.label_selector);
    if (auto* e = std::get_if<ApiError>(&ls)) return *e;
    f.labels_ = std::get<std::shared_ptr<const LabelSelector>>(ls);
    if (f.labels_ && f.labels_->empty()) f.labels_.reset();
  }
  if (!opts.field_selector.empty()) {
    auto fs = parseFieldSelector(res.def, opts.field_selector);
    if (auto* e = std::get_if<ApiError>(&fs)) return *e;
    f.fields_ = std::get<std::shared_ptr<const FieldSelector>>(fs);
    if (f.fields_ && f.fields_->empty()) f.fields_.reset();
  }
  if (f.fields_) {
    if (!name.empty()) {
      if (auto want = f.fields_->requiredValue("metadata.name"); want && *want != name)
        return badRequest("fieldSelector metadata.name doesn't match requested name");
    }
    // Not for a continue request: MatchesSingleNamespace ignores those, so the apiserver
    // scans every namespace after the token's start, and "more" counts their keys (P6).
    if (f.scope_ns_.empty() && res.def.namespaced && opts.continue_token.empty())
      if (auto want = f.fields_->requiredValue("metadata.namespace")) f.scope_ns_ = *want;
  }
  // Store.ListPredicate: without a continue token, a required metadata.namespace puts
  // an all-namespaces request in that namespace (if it is a valid namespace name), and
  // a required metadata.name then names a single key. RequiresExactMatch takes the
  // first such term in sorted order, whatever other terms the selector has.
  if (f.fields_ && opts.continue_token.empty()) {
    std::string key_ns = ns;
    if (key_ns.empty()) {
      if (auto want = f.fields_->requiredValue("metadata.namespace"); want && isDns1123Label(*want)) {
        key_ns = *want;
        f.narrowed_ = res.def.namespaced;
      }
    }
    if (auto want = f.fields_->requiredValue("metadata.name"); want && objectKeyBuildable(res.def, key_ns, *want))
      f.single_name_ = *want;
  }
  // The registry reads shardSelector after the handler's selector checks (store.go
  // ListPredicate / Watch); a bad one is a plain error, hence a 500 without a reason.
  if (featureGates().sharded_list_and_watch && !opts.shard_selector.empty()) {
    auto parsed = parseShardSelector(opts.shard_selector);
    if (auto* error = std::get_if<std::string>(&parsed)) {
      ApiError e;
      e.code = 500;
      e.message = "invalid shard selector: " + *error;
      return e;
    }
    f.shard_ = std::make_shared<const ShardSelector>(std::get<ShardSelector>(std::move(parsed)));
  }
  f.has_selectors_ = f.labels_ || f.fields_ || f.shard_;
  return f;
}

bool ObjectFilter::matches(const StoredObject& obj) const {
  if (!scope_ns_.empty() && obj.ns != scope_ns_) return false;
  if (!name_.empty() && obj.name != name_) return false;
  if (labels_ && !labels_->matches(obj.labels)) return false;
  if (fields_ && !fields_->matches(obj.fields)) return false;
  return !shard_ || shard_->matches(obj);
}

bool watchCached(const ResourceDef& def) {
  return !(def.resource == "events" && (def.group.empty() || def.group == "events.k8s.io"));
}

Page paginate(const Storage::Snapshot& snap, const ServedResource& res, const ObjectFilter& filter, bool all_namespaces,
              const std::string& start, int64_t limit) {
  Page page;
  auto relKey = [&](const StoredObject& o) -> const std::string& { return all_namespaces ? o.key : o.name; };
  size_t i = 0;
  if (!start.empty()) {
    // Keys are in bytewise order (P9); the token's start is the last key + NUL, so
    // everything at or after it is unseen.
    while (i < snap.items.size() && relKey(*snap.items[i]) < start) ++i;
  }
  for (; i < snap.items.size(); ++i) {
    const auto& o = snap.items[i];
    if (!filter.matches(*o)) continue;
    page.items.push_back(o);
    if (limit > 0 && static_cast<int64_t>(page.items.size()) == limit) {
      ++i;
      break;
    }
  }
  // P6: "more" is decided by remaining keys, not remaining matches.
  if (limit > 0 && static_cast<int64_t>(page.items.size()) == limit && i < snap.items.size()) {
    // The watch cache's PrepareContinueToken trims the request's key ("/pods/ns", no
    // trailing '/') off the last key, so the start keeps its leading '/' (P2); etcd, which
    // serves events (no watch cache by default), trims "/events/ns/" and leaves none.
    const std::string root = watchCached(res.def) ? "/" : "";
    page.continue_token = encodeContinue(static_cast<int64_t>(snap.rv), root + relKey(*page.items.back()) + '\0');
    if (!filter.hasSelectors()) page.remaining_item_count = static_cast<int64_t>(snap.items.size() - i);  // P4
  }
  return page;
}

namespace {

// A custom resource's list is an UnstructuredList, which the apiserver encodes as one
// map: top-level keys sorted, items always an array, and in metadata the keys the
// versioner sets (UpdateList): continue always (empty on the last page),
// remainingItemCount when known, resourceVersion.
std::string renderUnstructuredList(const ServedResource& res, const std::vector<StoredObjectPtr>& items,
                                   const ListMetaOut& meta, size_t reserve) {
  std::string s;
  s.reserve(reserve);
  s += "{\"apiVersion\":";
  s += jsonQuote(res.def.groupVersion());
  s += ",\"items\":[";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) s += ',';
    items[i]->appendItem(s);  // the whole stored object, already a sorted map
  }
  s += "],\"kind\":";
  s += jsonQuote(res.def.list_kind);
  s += ",\"metadata\":{\"continue\":";
  s += jsonQuote(meta.continue_token);
  if (meta.remaining_item_count) s += ",\"remainingItemCount\":" + std::to_string(*meta.remaining_item_count);
  s += ",\"resourceVersion\":";
  s += jsonQuote(meta.resource_version);
  s += "}}";
  return s;
}

}  // namespace

std::string renderList(const ServedResource& res, const std::vector<StoredObjectPtr>& items, const ListMetaOut& meta) {
  size_t total = 256;
  for (const auto& o : items) total += o->json.size() + 1;
  if (!res.def.builtin) return renderUnstructuredList(res, items, meta, total);
  std::string s;
  s.reserve(total);
  s += "{\"kind\":";
  s += jsonQuote(res.def.list_kind);
  s += ",\"apiVersion\":";
  s += jsonQuote(res.def.groupVersion());
  s += ",\"metadata\":{\"resourceVersion\":\"";
  s += meta.resource_version;
  s += '"';
  if (!meta.continue_token.empty()) s += ",\"continue\":" + jsonQuote(meta.continue_token);
  if (meta.remaining_item_count) s += ",\"remainingItemCount\":" + std::to_string(*meta.remaining_item_count);
  if (!meta.shard_selector.empty()) s += ",\"shardInfo\":{\"selector\":" + jsonQuote(meta.shard_selector) + "}";
  s += "},\"items\":[";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) s += ',';
    items[i]->appendItem(s);
  }
  s += "]}";
  return s;
}

}  // namespace testapi
