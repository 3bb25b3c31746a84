#include "cache/packing/compressed_run.h"

#include <atomic>

namespace cache {
namespace {

std::atomic<uint64_t> all_run_bytes{0};

}  // namespace

uint64_t compressedRunBytes() { return all_run_bytes.load(std::memory_order_relaxed); }

void CompressedRuns::count(int64_t delta) {
  all_run_bytes.fetch_add(static_cast<uint64_t>(delta), std::memory_order_relaxed);
}

}  // namespace cache
