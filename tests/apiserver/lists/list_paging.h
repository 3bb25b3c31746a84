#pragma once
// Which stored objects a LIST/WATCH request sees (namespace, S1-S7 selectors, named
// watches) and how a LIST result is cut into pages (P1-P6) and rendered (L1).

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tests/apiserver/media/media.h"
#include "tests/apiserver/selectors/shard_selector.h"
#include "tests/apiserver/storage/object_codec.h"
#include "tests/apiserver/storage/storage.h"

namespace testapi {

class ObjectFilter {
 public:
  // name: the object name of a named watch path ("" otherwise); a disagreeing
  // metadata.name field selector is the 400 of W1.
  static Result<ObjectFilter> make(const ServedResource& res, const std::string& ns, const std::string& name,
                                   const ListOptions& opts);
  bool matches(const StoredObject& obj) const;
  // The namespace the request is confined to: the path's, else a metadata.namespace=
  // field selector's (W11), else "" (all).
  const std::string& namespaceScope() const { return scope_ns_; }
  bool hasSelectors() const { return has_selectors_; }
  // Store.ListPredicate's MatchesSingle: the name a LIST's field selector requires
  // (metadata.name= or ==) when no continue token is given and the object's key can be
  // built, so storage serves the LIST as a non-recursive GetList of that one key.
  const std::optional<std::string>& singleObjectName() const { return single_name_; }
  // Store.ListPredicate's MatchesSingleNamespace: an all-namespaces LIST without a
  // continue token that a valid metadata.namespace= selector puts in that namespace. Its
  // storage key is the namespace's, so its continue token is relative to it ("/<name>\0"),
  // while the continue request that brings it back is not narrowed and reads it relative
  // to the all-namespaces key: the apiserver's own quirk, reproduced.
  bool narrowedToNamespace() const { return narrowed_; }
  // The canonical shard selector the list answers (metadata.shardInfo), "" = none.
  std::string shardSelector() const { return shard_ ? shard_->str() : std::string(); }

 private:
  std::string scope_ns_;
  std::string name_;
  std::optional<std::string> single_name_;
  bool narrowed_ = false;
  std::shared_ptr<const LabelSelector> labels_;
  std::shared_ptr<const FieldSelector> fields_;
  std::shared_ptr<const ShardSelector> shard_;
  bool has_selectors_ = false;
};

struct Page {
  std::vector<StoredObjectPtr> items;
  std::string continue_token;
  std::optional<int64_t> remaining_item_count;
};

// False for the resources kube-apiserver keeps no watch cache of (events): their lists
// come from etcd, which pages at RV=0 too and writes continue keys without a leading /.
bool watchCached(const ResourceDef& def);

// Cuts one page out of `snap` (key order). `all_namespaces`: keys in tokens are
// "/<ns>/<name>" rather than "/<name>" (P2; "<ns>/<name>" for events). `start` is the
// decoded token position (ContinueToken::start, no leading '/').
Page paginate(const Storage::Snapshot& snap, const ServedResource& res, const ObjectFilter& filter,
              bool all_namespaces, const std::string& start, int64_t limit);

// The L1 list envelope around `items` (concatenated stored bytes): ListMeta in struct
// order for a built-in type; for a custom resource the UnstructuredList map, keys
// sorted, metadata.continue always present.
std::string renderList(const ServedResource& res, const std::vector<StoredObjectPtr>& items, const ListMetaOut& meta);

}  // namespace testapi
