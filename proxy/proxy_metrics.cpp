#include "proxy/proxy_metrics.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <sstream>

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

namespace proxy {

struct ProxyMetrics::Impl {
  prometheus::Registry registry;
  prometheus::Family<prometheus::Counter>& requests =
      prometheus::BuildCounter().Name("kube_cache_proxy_requests_total").Help("Requests answered, by verb, resource, code and origin.").Register(registry);
  prometheus::Family<prometheus::Histogram>& latency =
      prometheus::BuildHistogram()
          .Name("kube_cache_proxy_request_duration_seconds")
          .Help("Time to the end of the response for requests that are not long-running.")
          .Register(registry);
  prometheus::Family<prometheus::Counter>& upstream_errors =
      prometheus::BuildCounter().Name("kube_cache_proxy_upstream_errors_total").Help("Failures reaching the upstream apiserver.").Register(registry);
  prometheus::Gauge& open_connections = prometheus::BuildGauge()
                                             .Name("kube_cache_proxy_open_connections")
                                             .Help("Open downstream client connections.")
                                             .Register(registry)
                                             .Add({});
  prometheus::Family<prometheus::Counter>& limit_refusals =
      prometheus::BuildCounter()
          .Name("kube_cache_proxy_limit_refusals_total")
          .Help("Connections closed and requests answered 429 because a bound was reached, by bound.")
          .Register(registry);
  prometheus::Family<prometheus::Counter>& connection_timeouts =
      prometheus::BuildCounter()
          .Name("kube_cache_proxy_connection_timeouts_total")
          .Help("Connections closed without an answer at the idle or read-header timeout, by timeout.")
          .Register(registry);
  prometheus::Gauge& open_streams = prometheus::BuildGauge()
                                         .Name("kube_cache_proxy_open_streams")
                                         .Help("Open long-running responses: watches, unbounded streams, upgrades.")
                                         .Register(registry)
                                         .Add({});
  prometheus::Family<prometheus::Gauge>& cached_watchers =
      prometheus::BuildGauge().Name("kube_cache_proxy_cached_watchers").Help("Open watches served from the cache.").Register(registry);
  prometheus::Family<prometheus::Counter>& cached_watch_events =
      prometheus::BuildCounter()
          .Name("kube_cache_proxy_cached_watch_events_sent_total")
          .Help("Events and bookmarks written to watches served from the cache.")
          .Register(registry);
  prometheus::Family<prometheus::Counter>& cached_watch_slow =
      prometheus::BuildCounter()
          .Name("kube_cache_proxy_cached_watchers_terminated_slow_total")
          .Help("Cached watches closed because their client did not keep up.")
          .Register(registry);
  prometheus::Family<prometheus::Counter>& client_requests =
      prometheus::BuildCounter()
          .Name("kube_cache_proxy_client_requests_total")
          .Help("Requests answered, by the client's User-Agent product token.")
          .Register(registry);
  prometheus::Family<prometheus::Gauge>& client_watches =
      prometheus::BuildGauge()
          .Name("kube_cache_proxy_client_watches")
          .Help("Open watches, by the client's User-Agent product token.")
          .Register(registry);
  prometheus::Family<prometheus::Counter>& client_bytes =
      prometheus::BuildCounter()
          .Name("kube_cache_proxy_client_response_bytes_total")
          .Help("Bytes written to clients, by the client's User-Agent product token.")
          .Register(registry);

  struct Client final : ClientMetrics {
    Client(Impl& m, const std::string& label)
        : requests(m.client_requests.Add({{"client", label}})),
          watches(m.client_watches.Add({{"client", label}})),
          bytes(m.client_bytes.Add({{"client", label}})) {}
    void requestAnswered() override { requests.Increment(); }
    void watchOpened() override { watches.Increment(); }
    void watchClosed() override { watches.Decrement(); }
    void bytesSent(uint64_t n) override { bytes.Increment(static_cast<double>(n)); }
    prometheus::Counter& requests;
    prometheus::Gauge& watches;
    prometheus::Counter& bytes;
  };
  std::mutex clients_mu;
  std::map<std::string, std::unique_ptr<Client>, std::less<>> clients;  // product token -> bucket

  prometheus::Counter& upstream_failed_fast =
      prometheus::BuildCounter()
          .Name("kube_cache_proxy_upstream_failed_fast_total")
          .Help("Requests answered 503 at once because the upstream apiserver was known to be unreachable.")
          .Register(registry)
          .Add({});
  prometheus::Family<prometheus::Counter>& gateway_decisions =
      prometheus::BuildCounter()
          .Name("kube_cache_proxy_gateway_decisions_total")
          .Help("Gateway authentication and authorization decisions, by review, source (cache, shared, upstream) and "
                "outcome.")
          .Register(registry);
  prometheus::Family<prometheus::Counter>& write_sync_held =
      prometheus::BuildCounter()
          .Name("kube_cache_proxy_write_sync_held_total")
          .Help("Write answers held until the cache showed the write (outcome shown, timeout, skipped).")
          .Register(registry);
  prometheus::Family<prometheus::Histogram>& write_sync_wait =
      prometheus::BuildHistogram()
          .Name("kube_cache_proxy_write_sync_wait_seconds")
          .Help("Time a held write answer waited for the cache to show the write.")
          .Register(registry);
  prometheus::Family<prometheus::Counter>& freshness_probes =
      prometheus::BuildCounter()
          .Name("kube_cache_proxy_freshness_probes_total")
          .Help("Freshness probes, by resource and outcome: fence (the store reached the upstream's revision), "
                "metadata (the store matched a consistent metadata list), unproven (the requests passed through), "
                "shared (a request answered by another's probe).")
          .Register(registry);
  prometheus::Family<prometheus::Histogram>& freshness_probe_seconds =
      prometheus::BuildHistogram()
          .Name("kube_cache_proxy_freshness_probe_seconds")
          .Help("Time from a freshness probe's upstream request to its answer.")
          .Register(registry);
  prometheus::Family<prometheus::Counter>& cache_misses =
      prometheus::BuildCounter()
          .Name("kube_cache_proxy_cache_passthrough_total")
          .Help("Cacheable reads and watches that passed through, by resource and reason.")
          .Register(registry);
  MetricsCollector collector;
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
  impl_->requests
      .Add({{"verb", std::string(verb)},
            {"resource", std::string(resource)},
            {"code", std::to_string(code)},
            {"served_by", std::string(served_by)}})
      .Increment();
  if (!long_running) {
    impl_->latency.Add({{"verb", std::string(verb)}, {"served_by", std::string(served_by)}}, kLatencyBuckets)
        .Observe(seconds);
  }
}

void ProxyMetrics::upstreamError(std::string_view kind) {
  impl_->upstream_errors.Add({{"kind", std::string(kind)}}).Increment();
}

void ProxyMetrics::connectionOpened() { impl_->open_connections.Increment(); }
void ProxyMetrics::connectionClosed() { impl_->open_connections.Decrement(); }
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

ClientMetrics& ProxyMetrics::client(std::string_view user_agent) {
  std::string label = userAgentProduct(user_agent);
  std::lock_guard lock(impl_->clients_mu);
  auto it = impl_->clients.find(label);
  if (it != impl_->clients.end()) return *it->second;
  // "other" and "unknown" do not take one of the named buckets.
  const size_t named = impl_->clients.size() - impl_->clients.count("other") - impl_->clients.count("unknown");
  if (label != "unknown" && named >= kMaxClientBuckets) label = "other";
  auto& slot = impl_->clients[label];
  if (!slot) slot = std::make_unique<Impl::Client>(*impl_, label);
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
      family.name = std::move(collected.name);
      family.help = std::move(collected.help);
      family.type = collected.counter ? prometheus::MetricType::Counter : prometheus::MetricType::Gauge;
      for (CollectedFamily::Sample& sample : collected.samples) {
        prometheus::ClientMetric metric;
        for (auto& [name, value] : sample.labels) metric.label.push_back({std::move(name), std::move(value)});
        (collected.counter ? metric.counter.value : metric.gauge.value) = sample.value;
        family.metric.push_back(std::move(metric));
      }
      families.push_back(std::move(family));
    }
  }
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, families);
  return out.str();
}

}  // namespace proxy
