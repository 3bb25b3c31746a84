#pragma once
// LIST from the cache without the I/O: which state a LIST must read according to its
// options (R3, P5, P7, P8, C1), and the read itself against a snapshot or, when they
// narrow an unpaginated read, the store's indexes (S1-S6), with the apiserver's page
// semantics (P1, P2, P4, P6, P9). cached_read.cpp does the waiting and the writing.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cache/query/list_options.h"
#include "cache/thread_safe_store.h"

namespace proxy {

struct ListPlan {
  enum class Read {
    Consistent,    // RV unset (C1): upstream fence, then the current state
    Current,       // RV=0 (Any): the current state as it is
    NotOlderThan,  // wait (bounded) until the cache reaches `rv`, then the current state
    Exact,         // the snapshot at `rv` (Exact, legacy limit+RV, continue tokens)
    PassThrough,   // the cache cannot answer this one (rv -1 continuation)
  };
  Read read = Read::Consistent;
  uint64_t rv = 0;
  // limit applies; RV=0 ignores it like the apiserver's cache (P5).
  bool paginate = true;
  // Absolute store key to start from (a continue token's start), "" = the beginning.
  std::string start_key;
  // The upstream lists this resource from etcd, not a watch cache (ApiResource::
  // upstreamWatchCached): continue keys without their leading slash.
  bool etcd_keys = false;
};

// `ns` is the store namespace the request reads ("" = all namespaces / cluster-scoped).
// `namespaced`: the resource is namespaced (a single-key read needs a namespace).
// `watch_cached`: the upstream serves the resource from its watch cache (else from etcd,
// which honours a limit at RV=0 too).
ListPlan planList(const cache::ListOptions& options, std::string_view ns, bool namespaced = true,
                  bool watch_cached = true);

struct ListResult {
  std::vector<cache::ObjectConstSharedPtr> items;  // key order (P9)
  std::vector<cache::WholeChunk> whole_chunks;     // runs of items that are whole chunks
  uint64_t resource_version = 0;                   // the list RV
  std::string continue_token;                      // "" on the last page
  std::optional<int64_t> remaining_item_count;     // P4
  bool used_index = false;
};

// Reads one page of `snapshot`.
ListResult listSnapshot(const cache::Snapshot& snapshot, const cache::ListOptions& options, std::string_view ns,
                        const ListPlan& plan);

// Reads the current state. An unpaginated read whose selector pins an indexed value
// (label k=v, spec.nodeName=v) walks that index instead of the whole store.
ListResult listCurrent(const cache::ThreadSafeStore& store, const cache::ListOptions& options, std::string_view ns,
                       const ListPlan& plan);

}  // namespace proxy
