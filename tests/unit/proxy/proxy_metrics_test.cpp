#include "proxy/observability/proxy_metrics.h"

#include <doctest/doctest.h>

#include <string>

using namespace proxy;

TEST_CASE("A client is named by the product token of its User-Agent") {
  CHECK(userAgentProduct("kubectl/v1.32.4 (linux/amd64) kubernetes/4cb5f07") == "kubectl");
  CHECK(userAgentProduct("my-controller/v0.0.0 (linux/amd64) kubernetes/$Format") == "my-controller");
  CHECK(userAgentProduct("Python-urllib/3.11") == "Python-urllib");
  CHECK(userAgentProduct("OpenAPI-Generator/31.0.0/python") == "OpenAPI-Generator");
  CHECK(userAgentProduct("node-fetch") == "node-fetch");
  CHECK(userAgentProduct("") == "unknown");
  CHECK(userAgentProduct("/v1") == "unknown");
  CHECK(userAgentProduct("bad\"quote/1") == "unknown");
  CHECK(userAgentProduct("x{}/1") == "unknown");
  CHECK(userAgentProduct(std::string(65, 'a')) == "unknown");
  CHECK(userAgentProduct(std::string(64, 'a')) == std::string(64, 'a'));
}

TEST_CASE("Per-client metrics count requests, open watches and bytes in their own bucket") {
  ProxyMetrics metrics;
  ClientMetrics& kubectl = metrics.client("kubectl/v1.32.4 (linux/amd64)", "alice");
  CHECK(&metrics.client("kubectl/v1.31.0", "bob") == &kubectl);
  kubectl.requestAnswered();
  kubectl.requestAnswered();
  kubectl.watchOpened();
  kubectl.watchOpened();
  kubectl.watchClosed();
  kubectl.bytesSent(1000);
  kubectl.bytesSent(24);
  const std::string text = metrics.renderText();
  CHECK(text.find("kube_cache_proxy_client_requests_total{client=\"kubectl\"} 2") != std::string::npos);
  CHECK(text.find("kube_cache_proxy_client_watches{client=\"kubectl\"} 1") != std::string::npos);
  CHECK(text.find("kube_cache_proxy_client_response_bytes_total{client=\"kubectl\"} 1024") != std::string::npos);
}

TEST_CASE("Clients beyond the bucket limit share the \"other\" bucket") {
  ProxyMetrics metrics;
  for (size_t i = 0; i < ProxyMetrics::kMaxClientBuckets; ++i) {
    metrics.client("client-" + std::to_string(i) + "/1", "source-" + std::to_string(i)).requestAnswered();
  }
  ClientMetrics& unknown = metrics.client("", "x");  // does not use up a named bucket
  ClientMetrics& late = metrics.client("late-comer/1", "y");
  CHECK(&late != &unknown);
  CHECK(&metrics.client("another/2", "z") == &late);
  CHECK(&metrics.client("client-3/9", "w") != &late);  // known clients keep their bucket
  late.requestAnswered();
  const std::string text = metrics.renderText();
  CHECK(text.find("client=\"other\"") != std::string::npos);
  CHECK(text.find("late-comer") == std::string::npos);
  CHECK(text.find("client=\"unknown\"") != std::string::npos);
}

TEST_CASE("One source opens at most 8 buckets; requests before admission take none (issue 36, finding 5)") {
  ProxyMetrics metrics;
  ClientMetrics& unauthenticated = metrics.unauthenticatedClient();
  for (int i = 0; i < 40; ++i) CHECK(&metrics.unauthenticatedClient() == &unauthenticated);
  for (size_t i = 0; i < 40; ++i) metrics.client("tool-" + std::to_string(i) + "/1", "user:mallory").requestAnswered();
  ClientMetrics& other = metrics.client("tool-39/1", "user:mallory");
  ClientMetrics& newcomer = metrics.client("newcomer/1", "user:bob");
  CHECK(&newcomer != &other);
  CHECK(&metrics.client("tool-3/2", "user:bob") != &other);  // opened by mallory, shared by anyone
  newcomer.requestAnswered();
  unauthenticated.requestAnswered();
  const std::string text = metrics.renderText();
  size_t named = 0;
  for (size_t at = text.find("client=\"tool-"); at != std::string::npos; at = text.find("client=\"tool-", at + 1)) ++named;
  CHECK(named == 3 * ProxyMetrics::kMaxBucketsPerSource);  // requests, watches and bytes per bucket
  CHECK(text.find("kube_cache_proxy_client_requests_total{client=\"newcomer\"} 1") != std::string::npos);
  CHECK(text.find("kube_cache_proxy_client_requests_total{client=\"unauthenticated\"} 1") != std::string::npos);
}

TEST_CASE("Requests are counted per series, and long-running ones stay out of the latency histogram") {
  // The series are looked up once and remembered: repeated, interleaved and long-running
  // observations must land exactly where a fresh lookup would put them, in every instance.
  ProxyMetrics a, b;
  for (int i = 0; i < 3; ++i) a.observeRequest("get", "pods", 200, "cache", 0.0001, false);
  a.observeRequest("get", "pods", 404, "cache", 0.0001, false);
  a.observeRequest("watch", "pods", 200, "cache", 30, true);
  a.observeRequest("watch", "pods", 200, "cache", 0.002, false);  // a watch that ended at once
  b.observeRequest("get", "pods", 200, "cache", 0.0001, false);
  b.observeRequest("bogus", "pods", 200, "upstream", 0.0001, false);
  const std::string text = a.renderText();
  CHECK(text.find("kube_cache_proxy_requests_total{code=\"200\",resource=\"pods\",served_by=\"cache\",verb=\"get\"} 3") !=
        std::string::npos);
  CHECK(text.find("kube_cache_proxy_requests_total{code=\"404\",resource=\"pods\",served_by=\"cache\",verb=\"get\"} 1") !=
        std::string::npos);
  CHECK(text.find("kube_cache_proxy_requests_total{code=\"200\",resource=\"pods\",served_by=\"cache\",verb=\"watch\"} 2") !=
        std::string::npos);
  CHECK(text.find("kube_cache_proxy_request_duration_seconds_count{served_by=\"cache\",verb=\"get\"} 4") !=
        std::string::npos);
  CHECK(text.find("kube_cache_proxy_request_duration_seconds_count{served_by=\"cache\",verb=\"watch\"} 1") !=
        std::string::npos);
  const std::string other = b.renderText();
  CHECK(other.find("kube_cache_proxy_requests_total{code=\"200\",resource=\"pods\",served_by=\"cache\",verb=\"get\"} 1") !=
        std::string::npos);
  CHECK(other.find("served_by=\"upstream\",verb=\"other\"} 1") != std::string::npos);
}
