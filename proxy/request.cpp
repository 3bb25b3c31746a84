#include "proxy/request.h"

#include <utility>

namespace proxy {
namespace {

// wsstream.IsWebSocketRequest: Upgrade is "websocket" in any case and Connection asks for
// an upgrade (x/net/websocket refuses other methods itself, with 405).
bool asksForWebSocket(const HeaderFields& headers) {
  return isUpgradeRequest(headers) && asciiLower(findHeader(headers, "Upgrade")) == "websocket";
}

}  // namespace

Request Request::make(std::string method, std::string target, HeaderFields headers, std::string client_ip) {
  Request req;
  req.method = std::move(method);
  req.target = std::move(target);
  req.headers = std::move(headers);
  req.client_ip = std::move(client_ip);
  req.query = cache::QueryValues::parse(req.rawQuery());
  req.info = RequestInfo::parse(req.method, req.target, req.query);
  req.accept = AcceptHeader::parse(req.header("Accept"));
  req.websocket = req.method == "GET" && asksForWebSocket(req.headers);
  return req;
}

std::string_view Request::rawQuery() const {
  const size_t qmark = target.find('?');
  return qmark == std::string::npos ? std::string_view{} : std::string_view(target).substr(qmark + 1);
}

}  // namespace proxy
