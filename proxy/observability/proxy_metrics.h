#pragma once
// The proxy's Prometheus metrics, rendered in the text exposition format for
// GET /metrics. Only this file pair knows prometheus-cpp. Thread-safe.
//
// Every family is declared in metric_families.h (name, help, type) and documented in
// docs/metrics.md. The ones whose values the request path produces are registered here
// from that table; the ones read from the informers at scrape time come from the
// collector set with setCollector() (cache_metrics.h).

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace proxy {

namespace metric {
struct Family;
}

// The samples of one family (metric_families.h) read at scrape time by someone else
// (cache_metrics.h): counters and gauges only.
struct CollectedFamily {
  struct Sample {
    std::vector<std::pair<std::string, std::string>> labels;
    double value = 0;
  };
  const metric::Family* family = nullptr;
  std::vector<Sample> samples;
};
using MetricsCollector = std::function<std::vector<CollectedFamily>()>;

// The verb label of a request: the apiserver's verbs and the HTTP methods of non-resource
// requests as they are, anything else "other", so a client cannot grow the label set
// (issue 16, finding 2: 3,000 requests with made-up names grew /metrics to 180 MB).
std::string_view verbLabel(std::string_view verb);

// The product token of a User-Agent ("kubectl" of "kubectl/v1.32.4 (linux/amd64) ..."),
// or "unknown" when there is none or it holds characters a product token cannot.
std::string userAgentProduct(std::string_view user_agent);

// The metrics of one client bucket. Stable for the life of the ProxyMetrics that
// handed it out; thread-safe.
class ClientMetrics {
 public:
  virtual ~ClientMetrics() = default;
  virtual void requestAnswered() = 0;
  virtual void watchOpened() = 0;
  virtual void watchClosed() = 0;
  virtual void bytesSent(uint64_t bytes) = 0;
};

class ProxyMetrics {
 public:
  ProxyMetrics();
  ~ProxyMetrics();
  ProxyMetrics(const ProxyMetrics&) = delete;
  ProxyMetrics& operator=(const ProxyMetrics&) = delete;

  void observeRequest(std::string_view verb, std::string_view resource, unsigned code, std::string_view served_by,
                      double seconds, bool long_running);
  void upstreamError(std::string_view kind);
  void connectionOpened();
  // A connection served as HTTP/2 ("alpn" or "prior_knowledge"), and each of its requests.
  void http2ConnectionOpened(std::string_view negotiation);
  void http2StreamOpened();
  void connectionClosed();
  void streamOpened();
  void streamClosed();
  // Cached watches; `resource` is the display name ("pods", "deployments.apps").
  void cachedWatchOpened(std::string_view resource);
  void cachedWatchClosed(std::string_view resource);
  void cachedWatchEventsSent(std::string_view resource, uint64_t events);
  void cachedWatchTerminatedSlow(std::string_view resource);
  void upstreamFailedFast();
  // A bound was reached: "connections", "requests", "reviews" or "watches".
  void limitRefused(std::string_view limit);
  // A connection closed without an answer because a client was too slow: `idle` (no next
  // request within the idle timeout) or `read_header` (a head not complete in time).
  void connectionTimedOut(std::string_view timeout);
  // A gateway decision: `review` TokenReview or SubjectAccessReview; `source` cache,
  // shared (waited for an identical review in flight) or upstream; `outcome` allowed,
  // denied or error.
  void gatewayDecision(std::string_view review, std::string_view source, std::string_view outcome);
  // A write answer held for read-your-writes: waited `seconds`; `shown` false = timed out.
  // A discovery GET seen by the discovery cache: `cache`, `fetched` (its own upstream fetch),
  // `shared` (another request's fetch), `stale` (answered), or `unwatched`, `changing`,
  // `upstream` (passed through).
  void discoveryAnswered(std::string_view outcome);
  void writeSyncWaited(std::string_view resource, double seconds, bool shown);
  // A freshness probe (proxy/reads/freshness_probe.cpp) and its outcome; a request that used
  // another request's probe.
  void freshnessProbe(std::string_view resource, std::string_view outcome, std::chrono::steady_clock::duration took);
  void freshnessProbeShared(std::string_view resource);
  // A read or watch the cache could serve that passed through, and why.
  void cachePassThrough(std::string_view resource, std::string_view reason);
  // A write answer that named nothing to wait for (a Status from eviction, ...).
  void writeSyncSkipped(std::string_view resource);

  // The bucket of an admitted request (a gateway authenticated it; a sidecar's request filter
  // let it through) that sent `user_agent` from `source` (the authenticated user, else the
  // client's address): its product token for the first kMaxClientBuckets distinct tokens,
  // of which one source opens at most kMaxBucketsPerSource; "other" after that, so neither a
  // client population nor one client's made-up User-Agents can take every bucket (issue 36,
  // finding 5: unauthenticated requests with made-up User-Agents filled 31 of 32). A
  // missing or malformed User-Agent is "unknown", which takes no bucket.
  static constexpr size_t kMaxClientBuckets = 32;
  static constexpr size_t kMaxBucketsPerSource = 8;
  ClientMetrics& client(std::string_view user_agent, std::string_view source);
  // The bucket "unauthenticated": requests answered before they were admitted (a gateway's
  // 401s, its 429s before authentication, its health probes; a sidecar filter's 403s).
  ClientMetrics& unauthenticatedClient();

  // Called on every renderText(), from the thread that renders. Set it before the
  // server starts.
  void setCollector(MetricsCollector collector);

  std::string renderText() const;

  // GET/LIST/WATCH answered per `resource` label (the plural, across groups): from the
  // cache, by the upstream, and why the cache let reads pass (for /debug/status).
  struct ReadCounts {
    double cache = 0;
    double upstream = 0;
    std::map<std::string, double> pass_reasons;
  };
  std::map<std::string, ReadCounts, std::less<>> readsByResource() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace proxy
