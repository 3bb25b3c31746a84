#pragma once
// Pods made from the API fixtures' fully populated Pod (every field set, managedFields
// included; ../shared/testdata/k8s-api-fixtures/core.v1.Pod.json), minified, with the
// identity varied per pod: name, namespace (10), uid, resourceVersion, node (50), pod IP.
// The worst case of real pods for memory: ~32 KB each.

#include <cstdint>
#include <string>

namespace bench {

// The fixture's path: KCP_FIXTURES_DIR from the environment, else next to the repository.
std::string fixturePodPath();
// A PodList of pods [first, first + count) made from `fixture` (the file's contents);
// "" when the fixture lacks a field this varies.
std::string fixturePodList(const std::string& fixture, int first, int count, uint64_t list_rv);

}  // namespace bench
