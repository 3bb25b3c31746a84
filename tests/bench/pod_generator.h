#pragma once
// Deterministic, realistic pods for benchmarks: 6 labels, annotations with an escaped
// last-applied configuration, an ownerReference, two managedFields entries, a container
// with env/ports/resources, and a status with conditions. 4-6 KB each.

#include <cstdint>
#include <string>

namespace bench {

// One pod as the apiserver writes it in a list item (no kind/apiVersion).
std::string generatePod(int index, uint64_t resource_version, int pods_total);
// `{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":..},"items":[...]}`
// with pods [first, first + count).
std::string generatePodList(int first, int count, uint64_t list_rv, int pods_total);

}  // namespace bench
