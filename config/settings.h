#pragma once
// Settings as text, before validation: what the command line or the config
// file said, and where it said it. Both sources produce this shape so that one
// set of value parsers serves both and "flag wins over file" is a field-wise
// merge.

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace config {

// One value and where it came from, for error messages:
// `--listen` or `/etc/kube-cache-proxy.yaml: listen`.
struct Setting {
  std::string value;
  std::string origin;
};

struct ListSetting {
  std::vector<std::string> values;
  std::string origin;
};

// One entry of the config file's `resources` list, before validation.
struct ResourceSetting {
  std::string resource;  // "pods", "deployments.apps"
  std::vector<std::string> namespaces;
  std::optional<Setting> strip_managed_fields;
  std::optional<Setting> write_sync;
  std::optional<Setting> read_policy;
  std::vector<std::pair<std::string, std::string>> indexes;  // name, JSON path
  std::string origin;    // "<file>: resources[2]"
};

struct Settings {
  std::optional<Setting> listen;
  std::optional<Setting> upstream;
  std::optional<Setting> kubeconfig;
  std::optional<Setting> context;
  std::optional<Setting> token_file;
  // kubectl's global credential flags; they override the kubeconfig, the
  // service account or bare --upstream field by field.
  std::optional<Setting> certificate_authority;
  std::optional<Setting> client_certificate;
  std::optional<Setting> client_key;
  std::optional<Setting> token;
  std::optional<Setting> tls_server_name;
  std::optional<Setting> insecure_skip_tls_verify;
  std::optional<Setting> connect_timeout;
  std::optional<Setting> log_format;
  std::optional<Setting> verbosity;
  std::optional<Setting> io_threads;
  std::optional<Setting> shutdown_timeout;
  std::optional<Setting> write_sync;
  std::optional<Setting> write_sync_timeout;
  std::optional<Setting> read_policy;
  std::optional<Setting> state_dir;
  std::optional<Setting> state_key_file;
  std::optional<Setting> mode;
  std::optional<ListSetting> cache;
  std::optional<ListSetting> no_cache;
  std::optional<ListSetting> refuse_client_cert_groups;
  // kubectl proxy's request filter: comma-separated regular expressions.
  std::optional<ListSetting> accept_hosts;
  std::optional<ListSetting> accept_paths;
  std::optional<ListSetting> reject_paths;
  std::optional<ListSetting> reject_methods;
  std::optional<Setting> cache_on_demand;
  std::optional<Setting> cache_idle_timeout;
  std::optional<Setting> cache_start_wait;
  std::optional<Setting> discovery_cache_ttl;
  std::optional<Setting> watch_bookmark_interval;
  std::optional<Setting> watch_max_lifetime;
  std::optional<Setting> unsynced_watch_timeout;
  std::optional<Setting> watch_queue_capacity;
  // Gateway mode: serving TLS and the decision caches of authentication/authorization.
  std::optional<Setting> tls_cert_file;
  std::optional<Setting> tls_private_key_file;
  std::optional<Setting> client_ca_file;
  std::optional<Setting> authentication_cache_ttl;
  std::optional<Setting> authorization_cache_ttl;
  std::optional<Setting> auth_cache_size;
  std::optional<Setting> state_save_interval;
  std::optional<Setting> drift_check_interval;
  // Request limits (both modes).
  std::optional<Setting> max_request_body_bytes;
  std::optional<Setting> max_header_bytes;
  std::optional<Setting> read_header_timeout;
  std::optional<Setting> idle_timeout;
  std::optional<Setting> max_watches_per_client;
  std::optional<Setting> max_inflight_watches;
  std::optional<Setting> max_requests_inflight;
  std::optional<Setting> max_inflight_reviews;
  std::optional<Setting> max_connections;
  std::optional<Setting> max_connections_per_client;
  std::optional<Setting> http2;
  std::optional<Setting> gzip_loopback;
  std::optional<Setting> store_encoding;
  std::optional<Setting> http2_max_streams_per_connection;
  std::optional<std::vector<ResourceSetting>> resources;  // config file only
  std::optional<Setting> config_file;  // command line only
};

// Describes one scalar setting once, for the flag parser, the config file
// reader and the merge. `name` is the long flag without dashes and also the
// config file key.
struct ScalarField {
  const char* name;
  std::optional<Setting> Settings::*member;
  bool is_path;  // relative paths in the config file are resolved against its directory
  bool is_boolean;  // a flag without value means true; `=false` and YAML booleans also work
};

struct ListField {
  const char* name;
  std::optional<ListSetting> Settings::*member;
};

// Everything settable in both places (so not `config`, nor the file's `resources`).
inline constexpr ScalarField kScalarFields[] = {
    {"listen", &Settings::listen, false, false},
    {"upstream", &Settings::upstream, false, false},
    {"kubeconfig", &Settings::kubeconfig, true, false},
    {"context", &Settings::context, false, false},
    {"token-file", &Settings::token_file, true, false},
    {"certificate-authority", &Settings::certificate_authority, true, false},
    {"client-certificate", &Settings::client_certificate, true, false},
    {"client-key", &Settings::client_key, true, false},
    {"token", &Settings::token, false, false},
    {"tls-server-name", &Settings::tls_server_name, false, false},
    {"insecure-skip-tls-verify", &Settings::insecure_skip_tls_verify, false, true},
    {"connect-timeout", &Settings::connect_timeout, false, false},
    {"log-format", &Settings::log_format, false, false},
    {"v", &Settings::verbosity, false, false},
    {"io-threads", &Settings::io_threads, false, false},
    {"shutdown-timeout", &Settings::shutdown_timeout, false, false},
    {"write-sync", &Settings::write_sync, false, true},
    {"read-policy", &Settings::read_policy, false, false},
    {"state-dir", &Settings::state_dir, true, false},
    {"state-key-file", &Settings::state_key_file, true, false},
    {"mode", &Settings::mode, false, false},
    {"cache-on-demand", &Settings::cache_on_demand, false, true},
    {"cache-idle-timeout", &Settings::cache_idle_timeout, false, false},
    {"cache-start-wait", &Settings::cache_start_wait, false, false},
    {"discovery-cache-ttl", &Settings::discovery_cache_ttl, false, false},
    {"watch-bookmark-interval", &Settings::watch_bookmark_interval, false, false},
    {"watch-max-lifetime", &Settings::watch_max_lifetime, false, false},
    {"watch-queue-capacity", &Settings::watch_queue_capacity, false, false},
    {"unsynced-watch-timeout", &Settings::unsynced_watch_timeout, false, false},
    {"tls-cert-file", &Settings::tls_cert_file, true, false},
    {"tls-private-key-file", &Settings::tls_private_key_file, true, false},
    {"client-ca-file", &Settings::client_ca_file, true, false},
    {"authentication-cache-ttl", &Settings::authentication_cache_ttl, false, false},
    {"authorization-cache-ttl", &Settings::authorization_cache_ttl, false, false},
    {"auth-cache-size", &Settings::auth_cache_size, false, false},
    {"state-save-interval", &Settings::state_save_interval, false, false},
    {"drift-check-interval", &Settings::drift_check_interval, false, false},
    {"write-sync-timeout", &Settings::write_sync_timeout, false, false},
    {"max-request-body-bytes", &Settings::max_request_body_bytes, false, false},
    {"max-header-bytes", &Settings::max_header_bytes, false, false},
    {"read-header-timeout", &Settings::read_header_timeout, false, false},
    {"idle-timeout", &Settings::idle_timeout, false, false},
    {"max-watches-per-client", &Settings::max_watches_per_client, false, false},
    {"max-inflight-watches", &Settings::max_inflight_watches, false, false},
    {"max-requests-inflight", &Settings::max_requests_inflight, false, false},
    {"max-inflight-reviews", &Settings::max_inflight_reviews, false, false},
    {"max-connections", &Settings::max_connections, false, false},
    {"max-connections-per-client", &Settings::max_connections_per_client, false, false},
    {"http2", &Settings::http2, false, true},
    {"gzip-loopback", &Settings::gzip_loopback, false, true},
    {"store-encoding", &Settings::store_encoding, false, false},
    {"http2-max-streams-per-connection", &Settings::http2_max_streams_per_connection, false, false},
};

inline constexpr ListField kListFields[] = {
    {"cache", &Settings::cache},
    {"no-cache", &Settings::no_cache},
    {"refuse-client-cert-groups", &Settings::refuse_client_cert_groups},
    {"accept-hosts", &Settings::accept_hosts},
    {"accept-paths", &Settings::accept_paths},
    {"reject-paths", &Settings::reject_paths},
    {"reject-methods", &Settings::reject_methods},
};

// Each field of `flags` that is set, else the field of `file`; and a
// --kubeconfig or --context flag drops the file's `upstream`.
Settings overlay(const Settings& flags, const Settings& file);

// Parses argv. Throws ExitRequest for --help/--version, ConfigError otherwise.
Settings parseFlags(int argc, const char* const* argv);

// Reads the YAML config file named by `path` (keys are the long flag names).
Settings readConfigFile(const std::string& path);

}  // namespace config
