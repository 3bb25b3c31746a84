#pragma once
// Exchange: one request on its way through the upstream, what the steps of
// forwardToUpstream share (passthrough.cpp, held_answer.cpp). Lives on the request's io
// thread.

#include <optional>
#include <string>
#include <vector>

#include "proxy/api_status.h"
#include "proxy/asio_beast.h"
#include "proxy/forward_outcome.h"
#include "proxy/http/header_filter.h"
#include "proxy/http/raw_parser.h"
#include "proxy/passthrough/write_sync.h"
#include "proxy/request.h"
#include "proxy/server/server_options.h"
#include "proxy/server/session_control.h"
#include "proxy/stream.h"
#include "proxy/upstream/upstream.h"
#include "proxy/upstream/upstream_connection.h"
#include "proxy/upstream/upstream_failure.h"
#include "proxy/upstream/upstream_pool.h"

namespace proxy::io {

// How the client's request body comes, and what the upstream may be sent of it.
struct RequestFraming {
  BodyFraming framing = BodyFraming::None;
  uint64_t length = 0;  // with ContentLength
  bool has_body = false;
  bool upgrade = false;
  uint64_t body_limit = 0;  // 0: unlimited
};

// How the upstream's answer goes to the client.
struct ResponseFraming {
  std::optional<uint64_t> content_length;
  bool no_body = false;
};

struct Exchange {
  const Request& req;
  ServerStream& out;
  UpstreamPool& pool;
  SessionControl& control;
  const ServerOptions& options;
  Upstream& upstream;
  RequestFraming in;
  std::vector<char> buf;  // relay buffer, both ways
  UpstreamConnectionPtr conn;
  std::optional<UpstreamParser> rp;  // the upstream's answer once its head is read

  // Returns the connection to the pool when the upstream keeps it open.
  void releaseConnection() {
    if (rp->keep_alive()) {
      pool.release(std::move(conn));
    } else {
      conn->close();
    }
  }
};

// A Status the proxy answers in the upstream's place (marked as the upstream's answer).
asio::awaitable<ForwardOutcome> answerInsteadOfUpstream(Exchange& x, const Status& status);
// The upstream could not be reached or failed mid-exchange: counted, and a 503 Status.
asio::awaitable<ForwardOutcome> answerFailure(Exchange& x, const UpstreamFailure& failure);

// Read-your-writes (--write-sync): a successful write's answer waits for the cache to show
// it. Bodies the proxy cannot read (compressed) or too large to hold pass unheld; `held`
// then carries what was already read. nullopt: relay the answer as usual.
asio::awaitable<std::optional<ForwardOutcome>> holdForCache(Exchange& x, const WriteSyncTarget& sync,
                                                            const ResponseFraming& framing, std::string& held);

}  // namespace proxy::io
