#include "proxy/observability/proxy_metrics.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <type_traits>
#include <unordered_map>

#include <fmt/format.h>

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include "proxy/observability/metric_families.h"

namespace proxy {

namespace {
// Registers `spec` with the registry: the only way a pushed family comes to exist.
template <class Metric>
prometheus::Family<Metric>& registerFamily(prometheus::Registry& registry, const metric::Family& spec) {
  constexpr metric::Type type = std::is_same_v<Metric, prometheus::Counter> ? metric::Type::Counter
                                : std::is_same_v<Metric, prometheus::Gauge> ? metric::Type::Gauge
                                                                            : metric::Type::Histogram;
  if (spec.type != type) throw std::logic_error("metric family registered as the wrong type: " + std::string(spec.name));
  return prometheus::detail::Builder<Metric>().Name(std::string(spec.name)).Help(std::string(spec.help)).Register(registry);
}
using prometheus::Counter;
using prometheus::Gauge;
using prometheus::Histogram;
}  // namespace

struct ProxyMetrics::Impl {
  prometheus::Registry registry;
  prometheus::Family<Counter>& requests = registerFamily<Counter>(registry, metric::kRequests);
  prometheus::Family<Histogram>& latency = registerFamily<Histogram>(registry, metric::kRequestDuration);
  prometheus::Family<Counter>& upstream_errors = registerFamily<Counter>(registry, metric::kUpstreamErrors);
  Gauge& open_connections = registerFamily<Gauge>(registry, metric::kOpenConnections).Add({});
  prometheus::Family<Counter>& limit_refusals = registerFamily<Counter>(registry, metric::kLimitRefusals);
  prometheus::Family<Counter>& connection_timeouts = registerFamily<Counter>(registry, metric::kConnectionTimeouts);
  Gauge& open_streams = registerFamily<Gauge>(registry, metric::kOpenStreams).Add({});
  prometheus::Family<Counter>& http2_connections = registerFamily<Counter>(registry, metric::kHttp2Connections);
  Counter& http2_streams = registerFamily<Counter>(registry, metric::kHttp2Streams).Add({});
  prometheus::Family<Gauge>& cached_watchers = registerFamily<Gauge>(registry, metric::kCachedWatchers);
  prometheus::Family<Counter>& cached_watch_events = registerFamily<Counter>(registry, metric::kCachedWatchEventsSent);
  prometheus::Family<Counter>& cached_watch_slow =
      registerFamily<Counter>(registry, metric::kCachedWatchersTerminatedSlow);
  prometheus::Family<Counter>& client_requests = registerFamily<Counter>(registry, metric::kClientRequests);
  prometheus::Family<Gauge>& client_watches = registerFamily<Gauge>(registry, metric::kClientWatches);
  prometheus::Family<Counter>& client_bytes = registerFamily<Counter>(registry, metric::kClientResponseBytes);

  struct Client final : ClientMetrics {
    Client(Impl& m, const std::string& label)
        : requests(m.client_requests.Add({{"client", label}})),
          watches(m.client_watches.Add({{"client", label}})),
          bytes(m.client_bytes.Add({{"client", label}})) {}
    void requestAnswered() override { requests.Increment(); }
    void watchOpened() override { watches.Increment(); }
    void watchClosed() override { watches.Decrement(); }
    void bytesSent(uint64_t n) override { bytes.Increment(static_cast<double>(n)); }
    Counter& requests;
    Gauge& watches;
    Counter& bytes;
  };
  std::mutex clients_mu;
  std::map<std::string, std::unique_ptr<Client>, std::less<>> clients;  // product token -> bucket
  // Named bucket -> the source that opened it (at most kMaxClientBuckets entries).
  std::map<std::string, std::string, std::less<>> opened_by;

  Counter& upstream_failed_fast = registerFamily<Counter>(registry, metric::kUpstreamFailedFast).Add({});
  prometheus::Family<Counter>& gateway_decisions = registerFamily<Counter>(registry, metric::kGatewayDecisions);
  prometheus::Family<Counter>& discovery_requests = registerFamily<Counter>(registry, metric::kDiscoveryRequests);
  prometheus::Family<Counter>& write_sync_held = registerFamily<Counter>(registry, metric::kWriteSyncHeld);
  prometheus::Family<Histogram>& write_sync_wait = registerFamily<Histogram>(registry, metric::kWriteSyncWait);
  prometheus::Family<Counter>& freshness_probes = registerFamily<Counter>(registry, metric::kFreshnessProbes);
  prometheus::Family<Histogram>& freshness_probe_seconds =
      registerFamily<Histogram>(registry, metric::kFreshnessProbeSeconds);
  prometheus::Family<Counter>& cache_misses = registerFamily<Counter>(registry, metric::kCachePassThrough);
  MetricsCollector collector;

  // Every request's series, found once: prometheus-cpp's Family::Add builds a label map,
  // hashes it and locks the family on each call, a tenth of a cached GET's CPU. Bounded
  // as the labels are (verbs, resources, codes, who served).
  struct RequestSeries {
    Counter* requests;
    Histogram* latency;  // null until a request that is not long-running
  };
  std::mutex request_series_mu;
  std::unordered_map<std::string, RequestSeries> request_series;
};

namespace {
// A subset of apiserver_request_duration_seconds buckets: fine below 1 s where
// cache hits land, coarse up to the apiserver's 60 s request timeout.
const prometheus::Histogram::BucketBoundaries kLatencyBuckets = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                                                 0.25,  0.5,    1,     2.5,  5,     10,  30, 60};
// Read-your-writes waits: a watch event normally lands within milliseconds; the top
// buckets are the --write-sync-timeout range.
const prometheus::Histogram::BucketBoundaries kWriteSyncBuckets = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                                                   0.05,   0.1,   0.25,   0.5,   1,    2.5, 5, 10};
}  // namespace

ProxyMetrics::ProxyMetrics() : impl_(std::make_unique<Impl>()) {}
ProxyMetrics::~ProxyMetrics() = default;

std::string_view verbLabel(std::string_view verb) {
  static constexpr std::string_view kVerbs[] = {"get",  "list",   "watch", "create", "update", "patch",
                                                "delete", "deletecollection", "proxy", "post", "put",
                                                "head", "options"};
  for (std::string_view known : kVerbs) {
    if (verb == known) return known;
  }
  return "other";
}

void ProxyMetrics::observeRequest(std::string_view verb, std::string_view resource, unsigned code,
                                  std::string_view served_by, double seconds, bool long_running) {
  verb = verbLabel(verb);
  thread_local std::string key;  // keeps its capacity: no allocation once warm
  key.clear();
  fmt::format_to(std::back_inserter(key), "{}\n{}\n{}\n{}", verb, resource, code, served_by);
  Counter* requests;
  Histogram* latency;
  {
    std::lock_guard lock(impl_->request_series_mu);
    auto [it, added] = impl_->request_series.try_emplace(key, Impl::RequestSeries{nullptr, nullptr});
    if (added) {
      it->second.requests = &impl_->requests.Add({{"verb", std::string(verb)},
                                                  {"resource", std::string(resource)},
                                                  {"code", std::to_string(code)},
                                                  {"served_by", std::string(served_by)}});
    }
    if (!long_running && !it->second.latency) {
      it->second.latency =
          &impl_->latency.Add({{"verb", std::string(verb)}, {"served_by", std::string(served_by)}}, kLatencyBuckets);
    }
    requests = it->second.requests;
    latency = it->second.latency;
  }
  requests->Increment();
  if (!long_running) latency->Observe(seconds);
}

void ProxyMetrics::upstreamError(std::string_view kind) {
  impl_->upstream_errors.Add({{"kind", std::string(kind)}}).Increment();
}

void ProxyMetrics::connectionOpened() { impl_->open_connections.Increment(); }
void ProxyMetrics::connectionClosed() { impl_->open_connections.Decrement(); }
void ProxyMetrics::http2ConnectionOpened(std::string_view negotiation) {
  impl_->http2_connections.Add({{"negotiation", std::string(negotiation)}}).Increment();
}
void ProxyMetrics::http2StreamOpened() { impl_->http2_streams.Increment(); }
void ProxyMetrics::streamOpened() { impl_->open_streams.Increment(); }
void ProxyMetrics::streamClosed() { impl_->open_streams.Decrement(); }

void ProxyMetrics::cachedWatchOpened(std::string_view resource) {
  impl_->cached_watchers.Add({{"resource", std::string(resource)}}).Increment();
}
void ProxyMetrics::cachedWatchClosed(std::string_view resource) {
  impl_->cached_watchers.Add({{"resource", std::string(resource)}}).Decrement();
}
void ProxyMetrics::cachedWatchEventsSent(std::string_view resource, uint64_t events) {
  if (events > 0) impl_->cached_watch_events.Add({{"resource", std::string(resource)}}).Increment(static_cast<double>(events));
}
void ProxyMetrics::cachedWatchTerminatedSlow(std::string_view resource) {
  impl_->cached_watch_slow.Add({{"resource", std::string(resource)}}).Increment();
}
std::string userAgentProduct(std::string_view user_agent) {
  // RFC 9110 product = token ["/" version]; a token is tchar+.
  const std::string_view token = user_agent.substr(0, user_agent.find_first_of("/ "));
  constexpr size_t kMaxTokenLength = 64;
  const auto tchar = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
  };
  if (token.empty() || token.size() > kMaxTokenLength || !std::all_of(token.begin(), token.end(), tchar)) {
    return "unknown";
  }
  return std::string(token);
}

ClientMetrics& ProxyMetrics::client(std::string_view user_agent, std::string_view source) {
  std::string label = userAgentProduct(user_agent);
  std::lock_guard lock(impl_->clients_mu);
  auto it = impl_->clients.find(label);
  if (it != impl_->clients.end()) return *it->second;
  // Only named buckets count: "other", "unknown" and "unauthenticated" take none.
  const auto& opened_by = impl_->opened_by;
  const size_t by_source = static_cast<size_t>(
      std::count_if(opened_by.begin(), opened_by.end(), [&](const auto& entry) { return entry.second == source; }));
  if (label != "unknown" && (opened_by.size() >= kMaxClientBuckets || by_source >= kMaxBucketsPerSource)) {
    label = "other";
  } else if (label != "unknown") {
    impl_->opened_by.emplace(label, source);
  }
  auto& slot = impl_->clients[label];
  if (!slot) slot = std::make_unique<Impl::Client>(*impl_, label);
  return *slot;
}

ClientMetrics& ProxyMetrics::unauthenticatedClient() {
  constexpr std::string_view kLabel = "unauthenticated";
  std::lock_guard lock(impl_->clients_mu);
  auto& slot = impl_->clients[std::string(kLabel)];
  if (!slot) slot = std::make_unique<Impl::Client>(*impl_, std::string(kLabel));
  return *slot;
}

void ProxyMetrics::upstreamFailedFast() { impl_->upstream_failed_fast.Increment(); }

void ProxyMetrics::limitRefused(std::string_view limit) {
  impl_->limit_refusals.Add({{"limit", std::string(limit)}}).Increment();
}
void ProxyMetrics::connectionTimedOut(std::string_view timeout) {
  impl_->connection_timeouts.Add({{"timeout", std::string(timeout)}}).Increment();
}
void ProxyMetrics::gatewayDecision(std::string_view review, std::string_view source, std::string_view outcome) {
  impl_->gateway_decisions
      .Add({{"review", std::string(review)}, {"source", std::string(source)}, {"outcome", std::string(outcome)}})
      .Increment();
}
void ProxyMetrics::discoveryAnswered(std::string_view outcome) {
  impl_->discovery_requests.Add({{"outcome", std::string(outcome)}}).Increment();
}
void ProxyMetrics::writeSyncWaited(std::string_view resource, double seconds, bool shown) {
  impl_->write_sync_held.Add({{"resource", std::string(resource)}, {"outcome", shown ? "shown" : "timeout"}}).Increment();
  impl_->write_sync_wait.Add({{"resource", std::string(resource)}}, kWriteSyncBuckets).Observe(seconds);
}
void ProxyMetrics::freshnessProbe(std::string_view resource, std::string_view outcome,
                                  std::chrono::steady_clock::duration took) {
  impl_->freshness_probes.Add({{"resource", std::string(resource)}, {"outcome", std::string(outcome)}}).Increment();
  impl_->freshness_probe_seconds.Add({{"resource", std::string(resource)}}, kWriteSyncBuckets)
      .Observe(std::chrono::duration<double>(took).count());
}
void ProxyMetrics::freshnessProbeShared(std::string_view resource) {
  impl_->freshness_probes.Add({{"resource", std::string(resource)}, {"outcome", "shared"}}).Increment();
}
std::map<std::string, ProxyMetrics::ReadCounts, std::less<>> ProxyMetrics::readsByResource() const {
  auto label = [](const prometheus::ClientMetric& m, std::string_view name) -> std::string {
    for (const auto& l : m.label) {
      if (l.name == name) return l.value;
    }
    return {};
  };
  std::map<std::string, ReadCounts, std::less<>> out;
  for (const auto& family : impl_->requests.Collect()) {
    for (const auto& m : family.metric) {
      const std::string verb = label(m, "verb"), resource = label(m, "resource"), by = label(m, "served_by");
      if (resource.empty() || (verb != "get" && verb != "list" && verb != "watch")) continue;
      if (by == "cache") out[resource].cache += m.counter.value;
      if (by == "upstream") out[resource].upstream += m.counter.value;
    }
  }
  for (const auto& family : impl_->cache_misses.Collect()) {
    for (const auto& m : family.metric) out[label(m, "resource")].pass_reasons[label(m, "reason")] += m.counter.value;
  }
  return out;
}

void ProxyMetrics::cachePassThrough(std::string_view resource, std::string_view reason) {
  impl_->cache_misses.Add({{"resource", std::string(resource)}, {"reason", std::string(reason)}}).Increment();
}
void ProxyMetrics::writeSyncSkipped(std::string_view resource) {
  impl_->write_sync_held.Add({{"resource", std::string(resource)}, {"outcome", "skipped"}}).Increment();
}
void ProxyMetrics::setCollector(MetricsCollector collector) { impl_->collector = std::move(collector); }

std::string ProxyMetrics::renderText() const {
  std::vector<prometheus::MetricFamily> families = impl_->registry.Collect();
  if (impl_->collector) {
    for (CollectedFamily& collected : impl_->collector()) {
      prometheus::MetricFamily family;
      const bool counter = collected.family->type == metric::Type::Counter;
      family.name = std::string(collected.family->name);
      family.help = std::string(collected.family->help);
      family.type = counter ? prometheus::MetricType::Counter : prometheus::MetricType::Gauge;
      for (CollectedFamily::Sample& sample : collected.samples) {
        prometheus::ClientMetric point;
        for (auto& [name, value] : sample.labels) point.label.push_back({std::move(name), std::move(value)});
        (counter ? point.counter.value : point.gauge.value) = sample.value;
        family.metric.push_back(std::move(point));
      }
      families.push_back(std::move(family));
    }
  }
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, families);
  return out.str();
}

}  // namespace proxy
