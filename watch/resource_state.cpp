#include "watch/resource_state.h"

#include <chrono>
#include <cstdio>
#include <utility>

namespace watch {

cache::StateIdentity stateIdentity(const ApiResource& resource, const std::string& namespace_scope,
                                   bool strip_managed_fields, cache::Encoding encoding) {
  std::string transform = encoding == cache::Encoding::Protobuf ? "protobuf" : "";
  if (strip_managed_fields) transform += transform.empty() ? "strip-managed-fields" : "+strip-managed-fields";
  return {resource.group, resource.version, resource.resource, namespace_scope, std::move(transform)};
}

ResourceState::ResourceState(std::string dir, cache::StateFileOptions options, cache::StateIdentity identity,
                             std::string name, LogSink log, const cache::Clock& clock)
    : path_(dir + "/" + cache::stateFileName(identity)),
      options_(std::move(options)),
      identity_(std::move(identity)),
      name_(std::move(name)),
      log_(std::move(log)),
      clock_(clock) {}

uint64_t ResourceState::load(ReflectorStore& store) {
  const auto started = clock_.now();
  cache::StateReadResult read = cache::readStateFile(path_, options_, identity_);
  if (read.problem == cache::StateFileProblem::Missing) {
    log(LogLevel::Info, "no saved state in " + path_ + "; listing");
    return 0;
  }
  if (!read.ok()) {
    stats_.load_failures_total.fetch_add(1, std::memory_order_relaxed);
    log(LogLevel::Warning, "saved state " + path_ + " refused (" + std::string(cache::problemName(read.problem)) +
                               ": " + read.message + "); listing");
    return 0;
  }
  const uint64_t rv = read.state.resource_version;
  const size_t count = read.state.objects.size();
  const std::chrono::duration<double> read_took = clock_.now() - started;
  if (rv == 0) {
    stats_.load_failures_total.fetch_add(1, std::memory_order_relaxed);
    log(LogLevel::Warning, "saved state " + path_ + " has no resourceVersion; listing");
    return 0;
  }
  StoreOutcome status = store.replace(std::move(read.state.objects), rv);
  if (!status.ok()) {
    stats_.load_failures_total.fetch_add(1, std::memory_order_relaxed);
    log(LogLevel::Warning, "saved state " + path_ + " refused by the store (" + status.message + "); listing");
    return 0;
  }
  stats_.loads_total.fetch_add(1, std::memory_order_relaxed);
  const std::chrono::duration<double> took = clock_.now() - started;
  char text[200];
  std::snprintf(text, sizeof text, "loaded %zu saved objects at resourceVersion %llu in %.2f s (%.2f s reading and verifying)",
                count, static_cast<unsigned long long>(rv), took.count(), read_took.count());
  log(LogLevel::Info, text);
  return rv;
}

bool ResourceState::save(const cache::ThreadSafeStore& store) {
  if (!store.hasSynced()) return false;
  // A file that names no cluster could never be loaded (nor told from another's).
  if (options_.upstream.cluster_uid.empty()) {
    log(LogLevel::Debug, "state not saved: the upstream's cluster identity is not known");
    return false;
  }
  std::lock_guard lock(save_mu_);
  // The snapshot is immutable and shares its objects with the live store: the writer
  // is blocked only for the moment it takes to build it.
  const cache::SnapshotConstSharedPtr snapshot = store.snapshot();
  auto written = cache::writeStateFile(path_, options_, identity_, snapshot->resourceVersion(), snapshot->size(),
                                       [&](const auto& emit) {
                                         std::string buffer;  // packed objects, one at a time
                                         snapshot->forEach([&](const cache::ObjectConstSharedPtr& object) {
                                           emit(object->bytes(buffer));
                                           return true;
                                         });
                                       });
  if (!written) {
    stats_.save_failures_total.fetch_add(1, std::memory_order_relaxed);
    log(LogLevel::Warning, "cannot save state: " + written.error().message);
    return false;
  }
  stats_.saves_total.fetch_add(1, std::memory_order_relaxed);
  stats_.last_save_bytes.store(*written, std::memory_order_relaxed);
  stats_.last_save_unix_seconds.store(
      std::chrono::duration_cast<std::chrono::seconds>(clock_.wallNow().time_since_epoch()).count(),
      std::memory_order_relaxed);
  log(LogLevel::Debug, "saved " + std::to_string(snapshot->size()) + " objects at resourceVersion " +
                           std::to_string(snapshot->resourceVersion()) + " to " + path_);
  return true;
}

void ResourceState::log(LogLevel level, const std::string& message) const {
  if (log_) log_(level, name_ + ": " + message);
}

}  // namespace watch
