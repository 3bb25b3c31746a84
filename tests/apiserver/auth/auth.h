#pragma once
// Authentication and authorization of kube-test-apiserver (--authn): fixed test
// identities behind bearer tokens, fixed RBAC-like rules, the TokenReview and
// SubjectAccessReview APIs that expose both, impersonation, and the 401/403 Status
// the apiserver answers (k8s.io/apiserver endpoints/filters and responsewriters).
//
// Identities (token -> user; every one also has group system:authenticated):
//   admin-token   admin                                       group system:masters: everything
//   proxy-token   system:serviceaccount:kube-system:kube-cache-proxy   everything (a cache
//                 proxy lists and watches all, creates reviews, impersonates)
//   alice-token   alice, uid uid-alice, group team-a, extra scopes=[namespace-a]
//   bob-token     bob                                         group cluster-readers
//   nobody-token  nobody                                      nothing
//   node-1-token  system:node:node-1                          group system:nodes
// Rules (allow only; no match is a denial with an empty reason, as RBAC answers):
//   group system:masters, user system:serviceaccount:kube-system:kube-cache-proxy: all
//   group team-a:          get, list, watch pods in namespace "a"
//   group cluster-readers: get, list, watch pods and namespaces in every namespace
//   any authenticated user: get of non-resource paths except /metrics (discovery, version)
//   group system:nodes:    list, watch pods in every namespace with a field selector
//                          requiring spec.nodeName=<its node> (the Node authorizer with
//                          AuthorizeNodeWithSelectors; selectors reach it through
//                          AuthorizeWithSelectors, also in SubjectAccessReviews)

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tests/apiserver/api_types.h"
#include "tests/apiserver/http/http_types.h"
#include "tests/apiserver/http/request_info.h"

namespace testapi {

struct UserIdentity {
  std::string name;
  std::string uid;
  std::vector<std::string> groups;
  std::map<std::string, std::vector<std::string>> extra;
};

// What a request asks to do (authorizer.Attributes).
struct AccessAttributes {
  bool resource_request = true;
  std::string verb;
  std::string group;
  std::string version;
  std::string resource;
  std::string subresource;
  std::string ns;
  std::string name;
  std::string path;  // non-resource requests
  std::string field_selector;  // list, watch, deletecollection: the raw fieldSelector
};

// The identity behind a bearer token, nullopt when the token is unknown.
std::optional<UserIdentity> authenticateToken(const std::string& token);
bool isAllowed(const UserIdentity& user, const AccessAttributes& attrs);
// apierrors.NewForbidden with responsewriters' forbiddenMessage.
ApiError forbidden(const UserIdentity& user, const AccessAttributes& attrs);
ApiError unauthorized();

// websocket.ProtocolAuthenticator's reading of a WebSocket request: its bearer token may
// come as the subprotocol "base64url.bearer.authorization.k8s.io.<token, RawURL base64>"
// beside the subprotocols it speaks.
struct WebSocketProtocolToken {
  std::string token;            // "" when none is offered
  std::string other_protocols;  // the offered subprotocols without it, trimmed, joined with ","
  bool malformed = false;       // two tokens, bad base64 or UTF-8, or no other subprotocol: 401
};
WebSocketProtocolToken webSocketProtocolToken(const HttpRequest& req);

// The acting identity of `req` after authentication and impersonation, or the 401/403
// to answer instead.
struct AuthOutcome {
  std::optional<UserIdentity> user;
  std::optional<ApiError> error;
  // Set when the token came from a WebSocket subprotocol: the Sec-WebSocket-Protocol the
  // request goes on with, the token's subprotocol taken out (the 101 echoes no token).
  std::optional<std::string> websocket_protocols;
};
AuthOutcome authenticateRequest(const HttpRequest& req);
AccessAttributes attributesOf(const HttpRequest& req, const RequestInfo& info);

// POST bodies of the review APIs -> (status code, response body).
std::pair<int, std::string> tokenReview(const std::string& body);
std::pair<int, std::string> subjectAccessReview(const std::string& body);

}  // namespace testapi
