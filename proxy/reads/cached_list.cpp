#include "proxy/reads/cached_list.h"

#include <algorithm>
#include <functional>
#include <string>

namespace proxy {
namespace {

std::function<bool(const cache::Object&)> predicateFor(const cache::ListOptions& options) {
  if (!options.hasSelectors()) return nullptr;
  return [&options](const cache::Object& object) {
    const cache::ObjectMeta& meta = object.meta();
    // A packed object's bytes up to its uid; predicates run on the lister's thread.
    thread_local std::string buffer;
    return options.label_selector.matches(meta.labels) &&
           options.field_selector.matches(meta.fields, meta.name, meta.namespace_name) &&
           (!options.shard_selector || options.shard_selector->matches(object.uid(buffer), meta.namespace_name));
  };
}

// ValidateNamespaceName: a DNS-1123 label.
bool isNamespaceName(std::string_view s) {
  if (s.empty() || s.size() > 63) return false;
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!alnum(s.front()) || !alnum(s.back())) return false;
  for (char c : s) {
    if (!alnum(c) && c != '-') return false;
  }
  return true;
}

// The key range a LIST scans. Like the apiserver's registry (MatchesSingleNamespace), an
// all-namespaces LIST whose field selector pins metadata.namespace scans only that
// namespace, which decides whether a page has "more" (P6). The first page's token is then
// relative to that namespace too ("/<name>\0"), as kube-apiserver 1.37 writes it; a
// continue request is not narrowed (MatchesSingleNamespace ignores it), so its token
// reads, and its next token is written, relative to the request's own prefix.
std::string_view rangeNamespace(const cache::ListOptions& options, std::string_view ns) {
  if (!ns.empty()) return ns;
  // A continue request scans the request's own range: there "more" counts the keys of the
  // namespaces after this one too (P6), as the apiserver answers.
  if (options.continuation) return {};
  const auto pinned = options.field_selector.requiredValue("metadata.namespace");
  return pinned && isNamespaceName(*pinned) ? *pinned : std::string_view{};
}

// The store key relative to the list prefix, as continue tokens carry it (P2).
std::string_view relativeKey(std::string_view key, std::string_view ns) {
  return ns.empty() ? key : key.substr(ns.size() + 1);
}

// An index lookup that yields a superset of the selector's matches, if any.
struct IndexProbe {
  std::string index;
  std::string value;
};

std::optional<IndexProbe> indexFor(const cache::ThreadSafeStore& store, const cache::ListOptions& options) {
  if (auto node = options.field_selector.requiredValue("spec.nodeName"); node && !node->empty()) {
    const std::string index = cache::indexes::fieldIndexName("spec.nodeName");
    if (store.hasIndex(index)) return IndexProbe{index, std::string(*node)};
  }
  const auto exact = options.label_selector.exactMatches();
  if (!exact.empty() && store.hasIndex(cache::indexes::kLabels)) {
    return IndexProbe{std::string(cache::indexes::kLabels), exact.front().first + "=" + exact.front().second};
  }
  return std::nullopt;
}

// A field selector pinning metadata.name (client-go single-object informers, `kubectl
// get pod X --watch`) reads one key in a namespace, or one key per namespace across
// all of them, instead of scanning.
std::optional<ListResult> byNameSelector(const cache::ThreadSafeStore& store, const cache::ListOptions& options,
                                         std::string_view ns) {
  const auto name = options.field_selector.requiredValue("metadata.name");
  if (!name || name->empty()) return std::nullopt;
  const auto matches = predicateFor(options);
  ListResult result;
  result.used_index = true;
  const std::string_view range = rangeNamespace(options, ns);
  if (!range.empty()) {
    // Same RV before and after the lookup: the item is the state at that RV.
    for (int attempt = 0; attempt < 3; ++attempt) {
      const uint64_t before = store.currentRV();
      cache::ObjectConstSharedPtr object = store.get(cache::makeKey(range, *name));
      if (store.currentRV() != before) continue;
      result.resource_version = before;
      if (object && matches(*object)) result.items.push_back(std::move(object));
      return result;
    }
    return std::nullopt;
  }
  auto named = store.byName(*name);
  if (!named) return std::nullopt;
  result.resource_version = named->resource_version;
  for (auto& object : named->items) {
    if (matches(*object)) result.items.push_back(std::move(object));
  }
  return result;
}

// path.IsValidPathSegmentName: what the registry's key functions accept as a name.
bool validPathSegmentName(std::string_view name) {
  return !name.empty() && name != "." && name != ".." && name.find_first_of("/%") == std::string_view::npos;
}

// The registry's ListPredicate reads a single key, non-recursively, when the field
// selector names one object (SelectionPredicate.MatchesSingle, no continue token) and the
// key can be built: the namespace comes from the path, or from a metadata.namespace term
// of a cluster-wide request. A non-recursive read takes a legacy RV=N as "not older than"
// even with a limit (storage.ValidateListOptions): kube-apiserver 1.37 answers it at its
// current RV, not at N.
bool readsSingleKey(const cache::ListOptions& options, std::string_view ns, bool namespaced) {
  if (options.continuation) return false;
  const auto name = options.field_selector.requiredValue("metadata.name");
  if (!name || !validPathSegmentName(*name)) return false;
  if (!namespaced || !ns.empty()) return true;
  const auto selected = options.field_selector.requiredValue("metadata.namespace");
  return selected && isNamespaceName(*selected);
}

}  // namespace

ListPlan planList(const cache::ListOptions& options, std::string_view ns, bool namespaced, bool watch_cached) {
  ListPlan plan;
  plan.etcd_keys = !watch_cached;
  cache::ListSemantics semantics = options.listSemantics();
  const bool single_key = readsSingleKey(options, ns, namespaced);
  if (semantics == cache::ListSemantics::Exact && options.resource_version_match == cache::ResourceVersionMatch::Unset &&
      single_key) {
    semantics = cache::ListSemantics::NotOlderThan;
  }
  switch (semantics) {
    case cache::ListSemantics::MostRecent: plan.read = ListPlan::Read::Consistent; break;
    case cache::ListSemantics::Any:
      plan.read = ListPlan::Read::Current;
      plan.paginate = !watch_cached;  // P5: the watch cache drops the limit; etcd does not
      break;
    case cache::ListSemantics::NotOlderThan:
      plan.read = ListPlan::Read::NotOlderThan;
      plan.rv = options.parsed_resource_version->value();
      break;
    case cache::ListSemantics::Exact:
      plan.read = ListPlan::Read::Exact;
      if (options.continuation) {
        plan.rv = static_cast<uint64_t>(options.continuation->resource_version);
        plan.start_key = ns.empty() ? options.continuation->start : std::string(ns) + "/" + options.continuation->start;
      } else {
        plan.rv = options.parsed_resource_version->value();
      }
      break;
    case cache::ListSemantics::Latest: plan.read = ListPlan::Read::PassThrough; break;
  }
  // One key holds one object at most: such a read never has more to page (no continue
  // token, no remainingItemCount, whatever the limit). A continue token with RV=0 reads
  // the rest in one page: the watch cache drops the limit for RV=0 (P5) even then.
  if (single_key || (watch_cached && options.continuation && options.resource_version == "0")) plan.paginate = false;
  return plan;
}

ListResult listSnapshot(const cache::Snapshot& snapshot, const cache::ListOptions& options, std::string_view ns,
                        const ListPlan& plan) {
  cache::ListRequest request;
  request.namespace_name = rangeNamespace(options, ns);
  request.start_key = plan.start_key;
  request.limit = plan.paginate && options.limit > 0 ? static_cast<size_t>(options.limit) : 0;
  request.predicate = predicateFor(options);
  cache::ListPage page = snapshot.list(request);

  ListResult result;
  result.resource_version = snapshot.resourceVersion();
  if (page.has_more && !page.items.empty()) {
    const std::string_view prefix_ns = rangeNamespace(options, ns);
    result.continue_token = cache::ContinueToken::encode(static_cast<int64_t>(result.resource_version),
                                                         relativeKey(page.items.back()->key(), prefix_ns),
                                                         !plan.etcd_keys);
    // P4: an estimate the apiserver gives only without selectors.
    if (!options.hasSelectors()) result.remaining_item_count = static_cast<int64_t>(page.remaining);
  }
  result.items = std::move(page.items);
  result.whole_chunks = std::move(page.whole_chunks);
  return result;
}

ListResult listCurrent(const cache::ThreadSafeStore& store, const cache::ListOptions& options, std::string_view ns,
                       const ListPlan& plan) {
  const bool paginated = plan.paginate && options.limit > 0;
  // Unpaginated only: with a limit, whether a page has "more" depends on the keys after
  // the match in the scanned range (P6), which a lookup does not see.
  if (!paginated && plan.start_key.empty()) {
    if (auto named = byNameSelector(store, options, ns)) return std::move(*named);
    if (auto probe = indexFor(store, options)) {
      // The index reads the live state, which has no RV of its own: an RV that did not
      // move across the lookup proves the items are exactly the state at that RV (every
      // write advances it). Under heavy churn fall back to a snapshot.
      for (int attempt = 0; attempt < 3; ++attempt) {
        const uint64_t before = store.currentRV();
        std::vector<cache::ObjectConstSharedPtr> candidates = store.byIndex(probe->index, probe->value);
        if (store.currentRV() != before) continue;
        ListResult result;
        result.resource_version = before;
        result.used_index = true;
        const auto matches = predicateFor(options);
        for (auto& object : candidates) {
          if (!ns.empty() && object->meta().namespace_name != ns) continue;
          if (matches(*object)) result.items.push_back(std::move(object));
        }
        return result;
      }
    }
  }
  return listSnapshot(*store.snapshot(), options, ns, plan);
}

}  // namespace proxy
