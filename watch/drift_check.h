#pragma once
// Drift check (issue #7): is the cache still equal to the upstream? The store's
// snapshot at its current RV is compared, key by key and RV by RV, with the upstream's
// listing at exactly that RV (resourceVersionMatch=Exact, contract R3), paged and as
// PartialObjectMetadataList (N4) so only metadata crosses the wire. Both sides describe
// the same moment, so any difference is drift: an event the cache never applied.
//
// Blocking (upstream LISTs); run it on a background thread with the informer's own
// ListerWatcher (never the reflector's, which is single-threaded).

#include <cstdint>
#include <stop_token>
#include <string>
#include <vector>

#include "cache/thread_safe_store.h"
#include "watch/reflector/lister_watcher.h"

namespace watch {

struct DriftReport {
  enum class Outcome {
    Same,         // the upstream agrees at `resource_version`
    Differs,      // `differences` keys differ; `keys` names the first few
    Unavailable,  // the upstream could not answer at that RV (410, outage); try later
  };
  Outcome outcome = Outcome::Unavailable;
  uint64_t resource_version = 0;
  size_t differences = 0;
  std::vector<std::string> keys;  // "ns/name (cache RV a, upstream RV b)"
  std::string error;              // why Unavailable
};

struct DriftCheckOptions {
  std::string label_selector;  // what the informer caches
  std::string field_selector;
  int64_t page_size = 500;
  size_t max_reported_keys = 10;
};

DriftReport checkDrift(ListerWatcher& upstream, const cache::ThreadSafeStore& store, const DriftCheckOptions& options,
                       std::stop_token stop);

}  // namespace watch
