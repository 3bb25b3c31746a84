#include <algorithm>

#include "config/config.h"
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

void warnAboutExposure(Config& config) {
  if (config.mode == Mode::Sidecar && !isLoopback(config.listen.host)) {
    config.warnings.push_back("sidecar mode listens on " + config.listen.toString() +
                              ", not loopback: anyone who can reach it uses the proxy's credentials");
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

Config load(int argc, const char* const* argv, const Environment& env) {
  const Settings flags = parseFlags(argc, argv);
  const Settings settings = flags.config_file ? overlay(flags, readConfigFile(flags.config_file->value)) : flags;

  Config config;
  if (settings.listen) config.listen = parseListen(*settings.listen);
  if (settings.log_format) config.log_format = parseLogFormat(*settings.log_format);
  if (settings.verbosity) config.verbosity = parseVerbosity(*settings.verbosity);
  if (settings.io_threads) config.io_threads = parseIoThreads(*settings.io_threads);
  if (settings.shutdown_timeout) config.shutdown_timeout = parseTimeout(*settings.shutdown_timeout);
  if (settings.write_sync) config.write_sync = parseBool(*settings.write_sync);
  if (settings.mode) config.mode = parseMode(*settings.mode);
  if (settings.state_dir) {
    if (settings.state_dir->value.empty()) throw ConfigError(settings.state_dir->origin + ": must not be empty");
    config.state_dir = settings.state_dir->value;
  }
  if (settings.cache) config.cache = parseResourceList(*settings.cache);
  if (settings.no_cache) config.no_cache = parseResourceList(*settings.no_cache);
  if (settings.cache_on_demand) config.cache_on_demand = parseBool(*settings.cache_on_demand);
  if (settings.cache_idle_timeout) config.cache_idle_timeout = parseTimeout(*settings.cache_idle_timeout);
  if (settings.max_request_body_bytes) config.max_request_body_bytes = parseCount(*settings.max_request_body_bytes);
  if (settings.max_header_bytes) {
    config.max_header_bytes = parseCount(*settings.max_header_bytes);
    if (config.max_header_bytes == 0) {
      throw ConfigError(settings.max_header_bytes->origin + " \"0\": want a positive number of bytes");
    }
  }
  if (settings.read_header_timeout) config.read_header_timeout = parsePositiveTimeout(*settings.read_header_timeout);
  if (settings.idle_timeout) config.idle_timeout = parsePositiveTimeout(*settings.idle_timeout);
  if (settings.max_watches_per_client) config.max_watches_per_client = parseCount(*settings.max_watches_per_client);
  if (settings.max_inflight_watches) config.max_inflight_watches = parseCount(*settings.max_inflight_watches);
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

  config.upstream = resolveUpstream(settings, env, config.warnings);
  warnAboutExposure(config);
  return config;
}

}  // namespace config
