#pragma once
// The feature gates this server answers like kube-apiserver with (--feature-gates
// "Name=true,..."): process-wide, as the apiserver's DefaultFeatureGate, set once before
// the server starts and read-only after.
//   ShardedListAndWatch (KEP-5866, alpha in 1.37, off by default): a LIST or WATCH with
//   shardSelector gets its shard and a list answer carries metadata.shardInfo; off, the
//   parameter is ignored.
#include <string>
#include <string_view>

namespace testapi {

struct FeatureGates {
  bool sharded_list_and_watch = false;
};

const FeatureGates& featureGates();
// Applies "Name=bool,Name=bool"; false with `error` set for an unknown gate or a value
// that is no bool (the apiserver refuses to start on either).
bool setFeatureGates(std::string_view spec, std::string& error);

}  // namespace testapi
