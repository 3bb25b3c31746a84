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
  if (settings.cache && settings.no_cache) rejectOverlap(config, settings.cache->origin, settings.no_cache->origin);

  config.upstream = resolveUpstream(settings, env, config.warnings);
  warnAboutExposure(config);
  return config;
}

}  // namespace config
