#include <algorithm>

#include "config/config.h"
#include "config/files.h"
#include "config/request_filter.h"
#include "config/server_url.h"
#include "config/settings.h"
#include "config/upstream_resolver.h"
#include "config/values.h"

namespace config {

namespace {

void rejectOverlap(const Config& config, const std::string& cache_origin, const std::string& no_cache_origin) {
  for (const GroupResource& resource : config.cache) {
    if (std::find(config.no_cache.begin(), config.no_cache.end(), resource) != config.no_cache.end()) {
      throw ConfigError(resource.toString() + " is in both " + cache_origin + " and " + no_cache_origin);
    }
  }
}

// A sidecar answers with the proxy's own credentials, so only its pod may reach it; a
// gateway checks every caller and must not take bearer tokens over plain HTTP.
void checkExposure(const Config& config, const Settings& settings) {
  if (config.mode == Mode::Sidecar && !isLoopback(config.listen.host)) {
    throw ConfigError("--listen " + config.listen.toString() +
                      ": sidecar mode listens on loopback only (anyone reaching it would use the proxy's "
                      "credentials); use --mode gateway to serve other hosts");
  }
  if (config.tls_cert_file.empty() != config.tls_private_key_file.empty()) {
    throw ConfigError("--tls-cert-file and --tls-private-key-file go together");
  }
  if (!config.client_ca_file.empty() && (config.mode != Mode::Gateway || config.tls_cert_file.empty())) {
    throw ConfigError((settings.client_ca_file ? settings.client_ca_file->origin : std::string("--client-ca-file")) +
                      ": client certificates need --mode gateway and --tls-cert-file");
  }
  if (config.mode == Mode::Gateway && !isLoopback(config.listen.host) && config.tls_cert_file.empty()) {
    throw ConfigError("--listen " + config.listen.toString() +
                      ": a gateway beyond loopback needs --tls-cert-file and --tls-private-key-file "
                      "(bearer tokens must not cross the network in clear text)");
  }
}

bool isNamespaceName(const std::string& name) {
  if (name.empty() || name.size() > 63 || name.front() == '-' || name.back() == '-') return false;
  return std::all_of(name.begin(), name.end(), [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'; });
}

CacheResourceConfig parseResourceSetting(const ResourceSetting& setting) {
  CacheResourceConfig out;
  const auto parsed = parseResourceList(ListSetting{{setting.resource}, setting.origin + ".resource"});
  out.resource = parsed.front();
  for (const std::string& name : setting.namespaces) {
    if (!isNamespaceName(name)) throw ConfigError(setting.origin + ".namespaces \"" + name + "\": not a namespace name");
    if (std::find(out.namespaces.begin(), out.namespaces.end(), name) == out.namespaces.end()) out.namespaces.push_back(name);
  }
  if (setting.strip_managed_fields) out.strip_managed_fields = parseBool(*setting.strip_managed_fields);
  if (setting.write_sync) out.write_sync = parseBool(*setting.write_sync);
  if (setting.read_policy) out.read_policy = parseReadPolicy(*setting.read_policy);
  for (const auto& [name, path] : setting.indexes) {
    const std::string trimmed = !path.empty() && path.front() == '.' ? path.substr(1) : path;
    if (name.empty() || trimmed.empty() || trimmed.find("..") != std::string::npos || trimmed.back() == '.') {
      throw ConfigError(setting.origin + ".indexes \"" + name + "\": want a name and a dotted JSON path such as spec.owner");
    }
    out.indexes.emplace_back(name, trimmed);
  }
  return out;
}

// A timeout that must elapse: 0 would cut every connection off at once.
std::chrono::milliseconds parsePositiveTimeout(const Setting& setting) {
  const auto value = parseTimeout(setting);
  if (value.count() == 0) throw ConfigError(setting.origin + " \"" + setting.value + "\": must be positive");
  return value;
}

}  // namespace

std::string ListenAddress::toString() const { return joinHostPort(host, port); }

std::string GroupResource::toString() const { return group.empty() ? resource : resource + "." + group; }

namespace {

// HMAC keys shorter than SHA-256's output weaken it (RFC 2104 section 3).
constexpr size_t kMinStateKeyBytes = 32;

// The key that seals state files: the file's bytes, one trailing newline removed (a Secret
// written by `kubectl create secret --from-file` or an editor keeps the bytes as they are).
std::string readStateKey(const Setting& setting, const std::string& state_dir) {
  if (state_dir.empty()) throw ConfigError(setting.origin + ": needs --state-dir");
  if (setting.value.empty()) throw ConfigError(setting.origin + ": must not be empty");
  std::string key = readFile(setting.value, setting.origin);
  if (!key.empty() && key.back() == '\n') key.pop_back();
  if (!key.empty() && key.back() == '\r') key.pop_back();
  if (key.size() < kMinStateKeyBytes) {
    throw ConfigError(setting.origin + " " + setting.value + ": a key of " + std::to_string(key.size()) +
                      " bytes; at least " + std::to_string(kMinStateKeyBytes) +
                      " are needed (e.g. head -c 32 /dev/urandom | base64 > FILE)");
  }
  return key;
}

// The process and serving settings: listen address, logging, threads, shutdown, modes.
void applyServing(Config& config, const Settings& settings) {
  if (settings.listen) config.listen = parseListen(*settings.listen);
  if (settings.log_format) config.log_format = parseLogFormat(*settings.log_format);
  if (settings.verbosity) config.verbosity = parseVerbosity(*settings.verbosity);
  if (settings.io_threads) config.io_threads = parseIoThreads(*settings.io_threads);
  if (settings.shutdown_timeout) config.shutdown_timeout = parseTimeout(*settings.shutdown_timeout);
  if (settings.write_sync) config.write_sync = parseBool(*settings.write_sync);
  if (settings.write_sync_timeout) config.write_sync_timeout = parseTimeout(*settings.write_sync_timeout);
  if (settings.read_policy) config.read_policy = parseReadPolicy(*settings.read_policy);
  if (settings.mode) config.mode = parseMode(*settings.mode);
}

// What is cached and how: state, resources, on-demand caching, watch delivery.
void applyCaching(Config& config, const Settings& settings) {
  if (settings.state_dir) {
    if (settings.state_dir->value.empty()) throw ConfigError(settings.state_dir->origin + ": must not be empty");
    config.state_dir = settings.state_dir->value;
  }
  if (settings.state_key_file) config.state_key = readStateKey(*settings.state_key_file, config.state_dir);
  if (settings.cache) config.cache = parseResourceList(*settings.cache);
  if (settings.no_cache) config.no_cache = parseResourceList(*settings.no_cache);
  if (settings.cache_on_demand) config.cache_on_demand = parseBool(*settings.cache_on_demand);
  if (settings.cache_idle_timeout) config.cache_idle_timeout = parseTimeout(*settings.cache_idle_timeout);
  if (settings.cache_start_wait) config.cache_start_wait = parseTimeout(*settings.cache_start_wait);
  if (settings.discovery_cache_ttl) config.discovery_cache_ttl = parseTimeout(*settings.discovery_cache_ttl);
  if (settings.watch_bookmark_interval) {
    config.watch_bookmark_interval = parsePositiveDuration(*settings.watch_bookmark_interval);
  }
  if (settings.watch_max_lifetime) config.watch_max_lifetime = parsePositiveDuration(*settings.watch_max_lifetime);
  if (settings.watch_queue_capacity) config.watch_queue_capacity = parsePositiveCount(*settings.watch_queue_capacity);
  if (settings.unsynced_watch_timeout) config.unsynced_watch_timeout = parseTimeout(*settings.unsynced_watch_timeout);
  if (settings.state_save_interval) config.state_save_interval = parseTimeout(*settings.state_save_interval);
  if (settings.drift_check_interval) config.drift_check_interval = parseTimeout(*settings.drift_check_interval);
}

// The bounds on what clients may send and hold, and the HTTP/2 and gzip settings.
void applyLimits(Config& config, const Settings& settings) {
  if (settings.max_request_body_bytes) config.max_request_body_bytes = parseWholeNumber(*settings.max_request_body_bytes);
  if (settings.max_header_bytes) {
    config.max_header_bytes = parseWholeNumber(*settings.max_header_bytes);
    if (config.max_header_bytes == 0) {
      throw ConfigError(settings.max_header_bytes->origin + " \"0\": want a positive number of bytes");
    }
  }
  if (settings.read_header_timeout) config.read_header_timeout = parsePositiveTimeout(*settings.read_header_timeout);
  if (settings.idle_timeout) config.idle_timeout = parsePositiveTimeout(*settings.idle_timeout);
  if (settings.max_watches_per_client) config.max_watches_per_client = parseWholeNumber(*settings.max_watches_per_client);
  if (settings.max_inflight_watches) config.max_inflight_watches = parseWholeNumber(*settings.max_inflight_watches);
  if (settings.max_requests_inflight) config.max_requests_inflight = parseWholeNumber(*settings.max_requests_inflight);
  if (settings.max_inflight_reviews) config.max_inflight_reviews = parseWholeNumber(*settings.max_inflight_reviews);
  if (settings.max_connections) config.max_connections = parseWholeNumber(*settings.max_connections);
  if (settings.max_connections_per_client) {
    config.max_connections_per_client = parseWholeNumber(*settings.max_connections_per_client);
  }
  if (settings.http2) config.http2 = parseBool(*settings.http2);
  if (settings.gzip_loopback) config.gzip_loopback = parseBool(*settings.gzip_loopback);
  if (settings.store_encoding) config.store_encoding = parseStoreEncoding(*settings.store_encoding);
  if (settings.http2_max_streams_per_connection) {
    config.http2_max_streams_per_connection = parseWholeNumber(*settings.http2_max_streams_per_connection);
    if (config.http2_max_streams_per_connection == 0 || config.http2_max_streams_per_connection > 0x7fffffff) {
      throw ConfigError(settings.http2_max_streams_per_connection->origin + " \"" +
                        settings.http2_max_streams_per_connection->value + "\": want 1 to 2147483647");
    }
  }
}

// Per-resource settings of the config file (`resources:`), which add to --cache.
void applyResources(Config& config, const Settings& settings) {
  if (settings.resources) {
    for (const ResourceSetting& setting : *settings.resources) {
      CacheResourceConfig resource = parseResourceSetting(setting);
      if (std::find(config.no_cache.begin(), config.no_cache.end(), resource.resource) != config.no_cache.end()) {
        throw ConfigError(resource.resource.toString() + " is in both " + setting.origin + " and " +
                          (settings.no_cache ? settings.no_cache->origin : "--no-cache"));
      }
      if (std::find(config.cache.begin(), config.cache.end(), resource.resource) == config.cache.end()) {
        config.cache.push_back(resource.resource);
      }
      config.cache_resources.push_back(std::move(resource));
    }
  }
  if (settings.cache && settings.no_cache) rejectOverlap(config, settings.cache->origin, settings.no_cache->origin);

}

// The gateway's serving TLS and client authentication.
void applyTls(Config& config, const Settings& settings) {
  if (settings.tls_cert_file) config.tls_cert_file = settings.tls_cert_file->value;
  if (settings.tls_private_key_file) config.tls_private_key_file = settings.tls_private_key_file->value;
  if (settings.client_ca_file) config.client_ca_file = settings.client_ca_file->value;
  if (settings.refuse_client_cert_groups) {
    config.refuse_client_cert_groups.clear();
    for (const std::string& group : settings.refuse_client_cert_groups->values) {
      if (!group.empty()) config.refuse_client_cert_groups.push_back(group);
    }
  }
  if (settings.authentication_cache_ttl) config.authentication_cache_ttl = parseTimeout(*settings.authentication_cache_ttl);
  if (settings.authorization_cache_ttl) config.authorization_cache_ttl = parseTimeout(*settings.authorization_cache_ttl);
  if (settings.auth_cache_size) config.auth_cache_size = parseCount(*settings.auth_cache_size);
}

}  // namespace

Config load(int argc, const char* const* argv, const Environment& env) {
  const Settings flags = parseFlags(argc, argv);
  const Settings settings = flags.config_file ? overlay(flags, readConfigFile(flags.config_file->value)) : flags;

  Config config;
  applyServing(config, settings);
  applyCaching(config, settings);
  applyLimits(config, settings);
  applyResources(config, settings);
  applyTls(config, settings);
  checkExposure(config, settings);
  config.request_filter = requestFilter(settings, config.mode, config.listen);

  config.upstream = resolveUpstream(settings, env, config.warnings);
  return config;
}

}  // namespace config
