#pragma once
// The proxy's configuration: what `load()` returns after reading flags, the
// optional config file, and the upstream's kubeconfig or in-cluster settings.
//
// Contract: a `Config` is plain data, complete and validated. Every path has
// been checked, every PEM has been read and parsed, every duration and list
// has been parsed. Nothing in it is re-read later except the bearer token
// file, whose *path* is carried on purpose (projected tokens rotate on disk).
// cmd maps it onto each module's own Options struct; no other module includes
// this header.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config/config_error.h"
#include "config/environment.h"

namespace config {

enum class LogFormat { Text, Json };
// How the store keeps objects (--store-encoding, issue #20).
enum class StoreEncoding { Plain, History, Compressed };

// Sidecar: one client application next to the proxy, listening on loopback.
// Gateway: many clients share the proxy, typically behind a Service.
enum class Mode { Sidecar, Gateway };

// How RV-unset (consistent) GET and LIST of a cached resource are answered.
// Strict: as the apiserver guarantees (C1): from the cache once a freshness probe proves it
// current, else from the upstream. Cache: from the cache at once, as controller-runtime's
// cached client reads, with the staleness bound in a response header.
enum class ReadPolicy { Strict, Cache };

// Where the upstream settings came from, so start-up logs can say so.
enum class UpstreamSource { Flag, Kubeconfig, InCluster };

struct ListenAddress {
  std::string host;   // IP literal or name, without brackets
  uint16_t port = 0;  // 0: pick a free port at bind time
  std::string toString() const;  // "127.0.0.1:8001", "[::1]:8001"
  bool operator==(const ListenAddress&) const = default;
};

// A resource as named on the command line: "pods", "deployments.apps".
// `group` is empty for the core group.
struct GroupResource {
  std::string resource;
  std::string group;
  std::string toString() const;
  bool operator==(const GroupResource&) const = default;
};

// Per-resource caching options from the config file's `resources` list.
struct CacheResourceConfig {
  GroupResource resource;
  std::vector<std::string> namespaces;  // empty: the whole collection
  bool strip_managed_fields = false;    // drop metadata.managedFields at ingestion
  // Custom indexes: name and dotted JSON path ("spec.owner", leading '.' optional).
  std::vector<std::pair<std::string, std::string>> indexes;
  // Read-your-writes for this resource, overriding --write-sync; unset: the global value.
  std::optional<bool> write_sync;
  // RV-unset reads of this resource, overriding --read-policy; unset: the global value.
  std::optional<ReadPolicy> read_policy;
  bool operator==(const CacheResourceConfig&) const = default;
};

// kubectl proxy's request filter (--accept-hosts, --accept-paths, --reject-paths,
// --reject-methods): regular expressions, each already checked to compile. An unset list
// is a check that is not made (a gateway's default); config/request_filter.h has the rest.
struct RequestFilterConfig {
  std::optional<std::vector<std::string>> accept_hosts;
  std::optional<std::vector<std::string>> accept_paths;
  std::optional<std::vector<std::string>> reject_paths;
  std::optional<std::vector<std::string>> reject_methods;
  bool operator==(const RequestFilterConfig&) const = default;
};

// Carries exactly what proxy::UpstreamOptions needs, field for field, plus
// provenance for logging.
struct UpstreamConfig {
  std::string scheme = "https";  // "http" or "https"
  std::string host;              // DNS name or IP literal, no brackets
  uint16_t port = 443;
  std::string path_prefix;  // "" or "/k8s/clusters/c-1" (no trailing slash)

  std::string ca_pem;  // empty: the system roots
  bool insecure_skip_tls_verify = false;
  std::string tls_server_name;
  std::string client_cert_pem;
  std::string client_key_pem;

  // Both may be set (kubeconfig `token` plus `tokenFile`); the file wins.
  std::string bearer_token;
  std::string bearer_token_file;

  std::chrono::milliseconds connect_timeout{5000};

  UpstreamSource source = UpstreamSource::Flag;
  std::string origin;  // e.g. `kubeconfig /root/.kube/config, context "prod"`
};

struct Config {
  ListenAddress listen{"127.0.0.1", 8001};
  UpstreamConfig upstream;

  LogFormat log_format = LogFormat::Text;
  int verbosity = 0;  // klog-style 0..9
  // 0: let the server choose (one per core).
  unsigned io_threads = 0;
  std::chrono::milliseconds shutdown_timeout{5000};

  // Resources cached from start-up (including every entry of `cache_resources`);
  // `no_cache` is never cached. The two lists are disjoint.
  std::vector<GroupResource> cache;
  std::vector<GroupResource> no_cache;
  std::vector<CacheResourceConfig> cache_resources;
  // Other resources are cached when first read, and dropped after the idle timeout.
  bool cache_on_demand = true;
  std::chrono::milliseconds cache_idle_timeout{std::chrono::minutes(10)};
  // A read or watch that starts an on-demand cache waits this long for its sync; 0: passes through.
  std::chrono::milliseconds cache_start_wait{0};
  std::chrono::milliseconds discovery_cache_ttl{60000};
  bool write_sync = false;  // after a write, wait until the cache has seen it
  ReadPolicy read_policy = ReadPolicy::Strict;
  std::chrono::milliseconds write_sync_timeout{5000};  // how long at most
  std::string state_dir;    // empty: no on-disk state
  // --state-key-file's content (a trailing newline removed): state files are sealed with
  // HMAC-SHA256 under it; empty: a SHA-256, which a writer of state_dir can recompute.
  std::string state_key;
  // How often each cached resource's state is saved to state_dir (also on shutdown); 0: only on shutdown.
  std::chrono::milliseconds state_save_interval{std::chrono::seconds(60)};
  // How often each cached resource is compared with the upstream; 0: never.
  std::chrono::milliseconds drift_check_interval{0};
  Mode mode = Mode::Sidecar;

  // Watches served from the cache. Bookmarks every interval to clients that allow them
  // (the apiserver's 60 s); a watch without timeoutSeconds lives a random time in
  // [max/2, max), which with the default 1 h is the apiserver's --min-request-timeout
  // (1800 s) times a random factor in [1, 2); a watcher that falls this many events
  // behind is closed and resumes from its last RV.
  std::chrono::milliseconds watch_bookmark_interval{std::chrono::seconds(60)};
  std::chrono::milliseconds watch_max_lifetime{std::chrono::hours(1)};
  // A watch that passes through while its cache starts asks the upstream for at most
  // this timeoutSeconds, so its client's next watch is served from the cache (0: as asked).
  std::chrono::milliseconds unsynced_watch_timeout{std::chrono::seconds(30)};
  size_t watch_queue_capacity = 1000;
  // TLS serving (both modes; required by a gateway beyond loopback). Files are read by the
  // server at start and re-read when they change.
  std::string tls_cert_file;
  std::string tls_private_key_file;
  std::string client_ca_file;  // gateway: client certificates signed by it authenticate
  // Client certificates naming any of these groups (an O) are refused: the proxy would
  // impersonate them upstream, and system:masters bypasses all authorization.
  std::vector<std::string> refuse_client_cert_groups = {"system:masters"};
  // Gateway: how long TokenReview and SubjectAccessReview outcomes are reused, and how
  // many of each are kept.
  std::chrono::milliseconds authentication_cache_ttl{30000};
  std::chrono::milliseconds authorization_cache_ttl{10000};
  unsigned auth_cache_size = 10000;
  // Request limits, defaults as kube-apiserver's (see docs/design/server.md, "Limits").
  uint64_t max_request_body_bytes = 3 << 20;  // 0: unlimited
  uint64_t max_header_bytes = 1 << 20;        // Go's DefaultMaxHeaderBytes
  std::chrono::milliseconds read_header_timeout{32000};
  std::chrono::milliseconds idle_timeout{90000};
  uint64_t max_watches_per_client = 0;  // 0: unlimited
  uint64_t max_inflight_watches = 0;    // 0: unlimited
  // Requests in flight that are not long-running: kube-apiserver's max-requests-inflight
  // plus max-mutating-requests-inflight (400 + 200). 0: unlimited.
  uint64_t max_requests_inflight = 600;
  uint64_t max_inflight_reviews = 64;        // gateway TokenReviews + SubjectAccessReviews; 0: unlimited
  std::optional<uint64_t> max_connections;   // unset: from the descriptor limit (cmd); 0: unlimited
  uint64_t max_connections_per_client = 0;   // per client address; 0: unlimited
  // HTTP/2 downstream: offered by ALPN on TLS, prior knowledge (h2c) on plain connections.
  bool http2 = true;
  bool gzip_loopback = false;
  StoreEncoding store_encoding = StoreEncoding::Compressed;
  uint64_t http2_max_streams_per_connection = 100;  // the apiserver's default
  // Which requests are served at all, by Host, path and method (kubectl proxy's filter).
  // Sidecar: kubectl proxy's defaults; gateway: off unless set.
  RequestFilterConfig request_filter;

  // Non-fatal findings for main to log once the logger exists.
  std::vector<std::string> warnings;
};

// For sharing one loaded Config across threads.
using ConfigConstSharedPtr = std::shared_ptr<const Config>;

// Reads argv (argv[0] is the program name), the `--config` file if any, and
// the upstream's kubeconfig or in-cluster settings.
// Throws ConfigError (one-line message) or ExitRequest (--help, --version).
Config load(int argc, const char* const* argv, const Environment& env);

// The --help text, ending in a newline.
std::string helpText();

// "kube-cache-proxy <version>\n"
std::string versionText();

}  // namespace config
