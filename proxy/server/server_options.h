#pragma once
// How the downstream server listens and what it tolerates from clients.
// Filled by cmd; the defaults mirror kube-apiserver's secure serving so that
// clients meet the same limits through the proxy as without it.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "proxy/server/request_filter.h"

namespace proxy {

struct ServerOptions {
  std::string listen_host = "127.0.0.1";
  uint16_t listen_port = 0;  // 0: the kernel picks a free port
  int io_threads = 2;        // event-loop threads; no thread per connection

  // Go net/http DefaultMaxHeaderBytes (1 MiB), which the apiserver uses; beyond
  // it the client gets 431 and the connection closes, as Go answers.
  size_t max_header_bytes = 1 << 20;
  // The apiserver's MaxRequestBodyBytes (3 MiB): a larger body of an API request
  // (create, update, patch, delete options, subresources other than proxy) gets
  // 413 RequestEntityTooLarge without reaching the upstream. 0: unlimited.
  size_t max_request_body_bytes = 3 << 20;

  // apiserver: ReadHeaderTimeout 32 s, IdleTimeout 90 s. Go's meaning: the idle
  // timeout runs until the first byte of the next request on a keep-alive
  // connection, then the whole head must arrive within the read-header timeout.
  std::chrono::milliseconds read_header_timeout{32000};
  std::chrono::milliseconds idle_timeout{90000};
  // A read or watch whose cache is starting waits this long for its sync (--cache-start-wait).
  std::chrono::milliseconds cache_start_wait{0};
  // Discovery documents and /version are served from memory for at most this long, while
  // the CRDs and APIServices they list do not change (proxy/discovery/discovery_cache.h); 0 passes
  // them through (--discovery-cache-ttl).
  std::chrono::milliseconds discovery_cache_ttl{60000};
  // A client that accepts no bytes for this long is dropped; it only bounds
  // stalled writes, so long-lived streams are not affected while they flow.
  std::chrono::milliseconds write_timeout{60000};

  // Bytes in flight per stream direction. The relay reads at most this much
  // from one side before the write to the other side completes, which is the
  // per-connection back-pressure bound.
  size_t stream_buffer_bytes = 64 * 1024;
  // Idle keep-alive connections kept to the upstream for reuse.
  size_t max_idle_upstream_connections = 64;
  std::chrono::milliseconds upstream_idle_timeout{90000};

  // Watches served from the cache (W7, W8): bookmark period for clients that allow
  // bookmarks (the apiserver's defaultBookmarkFrequency), the longest lifetime (a watch
  // without timeoutSeconds lives a random time in [max/2, max), the apiserver's
  // [1800 s, 3600 s)), and the events a watcher may fall behind before it is closed.
  std::chrono::milliseconds watch_bookmark_interval{60000};
  std::chrono::milliseconds watch_max_lifetime{3600000};
  // A watch passing through while its cache starts: the upstream's timeoutSeconds at most
  // this (0: as the client asked), so the client's next watch finds the cache.
  std::chrono::milliseconds unsynced_watch_timeout{30000};
  size_t watch_queue_capacity = 1000;

  // Gateway mode (docs/security.md): TLS serving, every request authenticated
  // (TokenReview or client certificate), every request served from the cache authorized
  // (SubjectAccessReview), pass-through requests carrying the caller's identity.
  bool gateway = false;
  std::string tls_cert_file;  // serve TLS when set; reloaded when the files change
  std::string tls_key_file;
  std::string client_ca_file;  // verify client certificates against this CA bundle
  std::vector<std::string> refused_certificate_groups;  // certificates naming these groups are refused
  std::chrono::milliseconds authentication_cache_ttl{30000};
  std::chrono::milliseconds authorization_cache_ttl{10000};
  size_t auth_cache_max_entries = 10000;
  std::chrono::milliseconds review_timeout{10000};  // one TokenReview/SubjectAccessReview
  // Read-your-writes (proxy/passthrough/write_sync.h): a successful write to a cached resource is
  // answered once its cache shows the write, or after write_sync_timeout with a Warning.
  // `write_sync_resources` ("pods", "deployments.apps") overrides `write_sync` per resource.
  bool write_sync = false;
  std::map<std::string, bool> write_sync_resources;
  // RV-unset GET/LIST (C1): strict = from the cache only once proven current (else the
  // upstream); cache = from the cache at once, with the staleness bound in a header.
  // `read_from_cache_resources` ("pods", "deployments.apps") overrides it per resource.
  bool read_from_cache = false;
  std::map<std::string, bool> read_from_cache_resources;
  std::chrono::milliseconds write_sync_timeout{5000};
  // Watches open at once (cached or passed through) per client, keyed by the
  // authenticated user when there is one, else by the client's address, and in
  // total. Beyond either: 429 with Retry-After, the apiserver's max-in-flight
  // answer. 0: unlimited.
  size_t max_watches_per_client = 0;
  size_t max_inflight_watches = 0;
  // Requests in flight that are not long-running (watch, exec, attach, portforward,
  // proxy, log are), as the apiserver's max-in-flight filter counts them; beyond: its 429.
  // Each one passed through holds an upstream connection, so this also bounds those.
  // 0: unlimited.
  size_t max_requests_inflight = 600;
  // Gateway reviews in flight to the upstream at once (identical ones share a flight and
  // count once); beyond: 429 without a review, so a flood of random tokens cannot spend
  // the proxy's API priority-and-fairness share. 0: unlimited.
  size_t max_inflight_reviews = 64;
  // Client connections open at once, per client address and in total; beyond either a
  // new connection is closed at once. 0: unlimited.
  size_t max_connections = 0;
  size_t max_connections_per_client = 0;
  // HTTP/2 (proxy/http2/http2_session.h): offered by ALPN on TLS, accepted by prior knowledge
  // on plain connections; the apiserver's concurrent-stream bound.
  bool http2 = true;
  // Answers from memory to a loopback client of a sidecar are not gzip'd (the bytes
  // never cross a network, and compressing costs the CPU the client then spends to
  // inflate); true compresses them as the apiserver would (N1). Gateway clients always
  // get the apiserver's compression.
  bool gzip_loopback = false;
  uint32_t http2_max_streams = 100;
  // kubectl proxy's request filter (proxy/server/request_filter.h); every list unset: off.
  // Health probes (/healthz, /livez, /readyz) are never filtered.
  RequestFilterPatterns request_filter;
};

// Half the soft open-file limit: each client connection may hold an upstream connection
// too, and the rest is room for informers, state files and the listener.
size_t defaultMaxConnections();
// Raises the soft open-file limit to the hard one, as Go programs (the apiserver
// included) do at start since Go 1.19; the default connection bound follows from it.
void raiseOpenFileLimit();

}  // namespace proxy
