// The upstream's ShardedListAndWatch gate (proxy/upstream/upstream_features.h), learned
// from its own answer: a LIST with a shard selector covering the whole hash space carries
// metadata.shardInfo exactly when the gate is on (an apiserver with it off ignores the
// parameter). Asked of a built-in collection, since a custom resource's list never
// carries shardInfo (an UnstructuredList has no ListMeta to set it on): core/v1 events
// first, the revision fence's collection, else the request's own.
#include <simdjson.h>
#include <spdlog/spdlog.h>

#include "proxy/reads/cache_serving.h"
#include "proxy/upstream/upstream_failure.h"

namespace proxy::io {
namespace {

constexpr std::string_view kWholeHashSpace =
    "shardSelector=shardRange%28object.metadata.uid%2C%270x0000000000000000%27%2C%270x10000000000000000%27%29";
constexpr const char* kEventsPath = "/api/v1/namespaces/default/events";

// The gate as `body` (a JSON list answer) shows it.
bool carriesShardInfo(const std::string& body) {
  simdjson::padded_string padded(body);
  simdjson::ondemand::parser parser;
  simdjson::ondemand::document doc;
  simdjson::ondemand::object metadata;
  if (parser.iterate(padded).get(doc) != simdjson::SUCCESS) return false;
  if (doc["metadata"].get_object().get(metadata) != simdjson::SUCCESS) return false;
  simdjson::ondemand::value shard_info;
  return metadata["shardInfo"].get(shard_info) == simdjson::SUCCESS;
}

asio::awaitable<std::optional<bool>> askShardInfo(CacheContext& ctx, const std::string& collection) {
  // Named, not temporaries in the co_await: GCC 12 destroys those twice.
  const std::string path = collection + "?limit=1&" + std::string(kWholeHashSpace);
  const std::string method = "GET";
  const std::string no_body;
  const std::chrono::milliseconds timeout = std::chrono::seconds(10);
  try {
    const UpstreamReply reply = co_await callUpstream(ctx.pool, method, path, no_body, timeout, 4 << 20, ctx.options);
    if (reply.code == 200) co_return carriesShardInfo(reply.body);
    spdlog::debug("learning the ShardedListAndWatch gate: {} answered {}", path, reply.code);
  } catch (const std::exception& e) {
    spdlog::debug("learning the ShardedListAndWatch gate: {}: {}", path, e.what());
  }
  co_return std::nullopt;
}

}  // namespace

asio::awaitable<UpstreamFeatures::Gate> shardingGate(CacheContext& ctx, const watch::ApiResource& resource,
                                                     const std::string& collection) {
  UpstreamFeatures& features = ctx.pool.upstream().features();
  const UpstreamFeatures::Gate known = features.sharding(ctx.clock.now());
  if (known != UpstreamFeatures::Gate::Unknown) co_return known;
  const std::string events = kEventsPath;
  std::optional<bool> on = co_await askShardInfo(ctx, events);
  if (!on && !resource.custom) on = co_await askShardInfo(ctx, collection);
  if (!on) co_return UpstreamFeatures::Gate::Unknown;
  features.learnedSharding(*on, ctx.clock.now());
  spdlog::info("the upstream's ShardedListAndWatch gate is {}: shardSelector is {}", *on ? "on" : "off",
               *on ? "answered from the cache" : "ignored, as the upstream ignores it");
  co_return *on ? UpstreamFeatures::Gate::On : UpstreamFeatures::Gate::Off;
}

asio::awaitable<std::optional<std::string>> shardOf(CacheContext& ctx, const watch::ApiResource& resource,
                                                    const std::string& collection, cache::ListOptions& options) {
  if (!options.hasShardSelector()) co_return std::string();
  const UpstreamFeatures::Gate gate = co_await shardingGate(ctx, resource, collection);
  if (gate == UpstreamFeatures::Gate::Unknown) co_return std::nullopt;
  if (gate == UpstreamFeatures::Gate::Off) {
    options.ignoreShardSelector();
    co_return std::string();
  }
  if (!options.shard_selector) co_return std::nullopt;
  co_return options.shard_selector->canonical();
}

asio::awaitable<std::optional<bool>> shardsApply(const Request& req, CacheContext& ctx,
                                                 const watch::CachedResource& cached, const std::string& collection) {
  const std::string_view selector = req.query.get("shardSelector").value_or("");
  if (selector.empty()) co_return false;
  const UpstreamFeatures::Gate gate = co_await shardingGate(ctx, cached.resource(), collection);
  if (gate == UpstreamFeatures::Gate::Unknown) co_return std::nullopt;
  if (gate == UpstreamFeatures::Gate::Off) co_return false;
  if (!cache::ShardSelector::parse(selector)) co_return std::nullopt;
  co_return true;
}

}  // namespace proxy::io
