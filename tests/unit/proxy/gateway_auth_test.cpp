// Gateway mode's decision caches, review bodies and 401/403 Status (docs/security.md).
#include "parse_request_info.h"
#include "proxy/auth/gateway_auth.h"
#include "proxy/auth/failure_limiter.h"
#include "proxy/auth/gateway_admission.h"

#include <doctest/doctest.h>

#include "tests/fakes/fake_clock.h"

using namespace proxy;
using namespace proxy::auth;
using namespace std::chrono_literals;

TEST_CASE("A decision is reused until its TTL passes, never after") {
  cache::testing::FakeClock clock;
  DecisionCache<int> c(10s, 100, clock);
  c.put("k", 1);
  CHECK(c.find("k") == 1);
  clock.advance(9s);
  CHECK(c.find("k") == 1);  // a hit does not extend the lifetime
  clock.advance(1s);
  CHECK_FALSE(c.find("k"));
  CHECK(c.size() == 0);
}

TEST_CASE("Storing again restarts the TTL and replaces the outcome") {
  cache::testing::FakeClock clock;
  DecisionCache<int> c(10s, 100, clock);
  c.put("k", 1);
  clock.advance(8s);
  c.put("k", 2);
  clock.advance(8s);
  CHECK(c.find("k") == 2);
}

TEST_CASE("Beyond the size bound the least recently used decision goes") {
  cache::testing::FakeClock clock;
  DecisionCache<int> c(1h, 3, clock);
  c.put("a", 1);
  c.put("b", 2);
  c.put("c", 3);
  CHECK(c.find("a") == 1);  // a is now the most recently used
  c.put("d", 4);
  CHECK(c.size() == 3);
  CHECK_FALSE(c.find("b"));
  CHECK(c.find("a") == 1);
  CHECK(c.find("c") == 3);
  CHECK(c.find("d") == 4);
}

TEST_CASE("A zero TTL or size turns caching off") {
  DecisionCache<int> off(0s, 100);
  off.put("k", 1);
  CHECK_FALSE(off.find("k"));
  DecisionCache<int> empty(1h, 0);
  empty.put("k", 1);
  CHECK_FALSE(empty.find("k"));
}

TEST_CASE("Token keys are digests: the raw token is never stored") {
  const std::string key = GatewayAuth::tokenKey("alice-token");
  CHECK(key.size() == 64);
  CHECK(key.find("alice") == std::string::npos);
  CHECK(key != GatewayAuth::tokenKey("alice-token2"));
}

TEST_CASE("Access keys tell apart every field of user and attributes") {
  UserInfo alice{"alice", "u1", {"team-a"}, {{"scopes", {"x"}}}};
  AccessAttributes list{true, "list", "", "v1", "pods", "", "a", "", ""};
  const std::string base = GatewayAuth::accessKey(alice, list);
  auto differs = [&](UserInfo u, AccessAttributes a) { return GatewayAuth::accessKey(u, a) != base; };
  UserInfo other = alice;
  other.groups = {"team-b"};
  CHECK(differs(other, list));
  other = alice;
  other.extra["scopes"] = {"y"};
  CHECK(differs(other, list));
  other = alice;
  other.uid = "u2";
  CHECK(differs(other, list));
  AccessAttributes a = list;
  a.namespace_ = "b";
  CHECK(differs(alice, a));
  a = list;
  a.verb = "watch";
  CHECK(differs(alice, a));
  a = list;
  a.name = "p";
  CHECK(differs(alice, a));
  a = list;
  a.field_selector = "spec.nodeName=n1";
  CHECK(differs(alice, a));
  a = list;
  a.label_selector = "app=web";
  CHECK(differs(alice, a));
  // Length-prefixed: moving a character between neighbouring fields changes the key.
  CHECK(GatewayAuth::accessKey({"ab", "", {}, {}}, list) != GatewayAuth::accessKey({"a", "b", {}, {}}, list));
  CHECK(GatewayAuth::accessKey(alice, list) == base);
}

TEST_CASE("Bearer tokens are read as the apiserver reads them") {
  CHECK(GatewayAuth::bearerToken({{"Authorization", "Bearer abc"}}) == "abc");
  CHECK(GatewayAuth::bearerToken({{"authorization", "bearer abc"}}) == "abc");
  CHECK(GatewayAuth::bearerToken({{"Authorization", "Basic abc"}}) == "");
  CHECK(GatewayAuth::bearerToken({{"Authorization", "Bearer a b"}}) == "");
  CHECK(GatewayAuth::bearerToken({}) == "");
  CHECK(GatewayAuth::wantsImpersonation({{"impersonate-user", "x"}}));
  CHECK_FALSE(GatewayAuth::wantsImpersonation({{"Accept", "x"}}));
}

TEST_CASE("SubjectAccessReview carries user, groups, extra, uid and the resource attributes") {
  UserInfo alice{"alice", "uid-alice", {"team-a", "system:authenticated"}, {{"scopes", {"namespace-a"}}}};
  const RequestInfo info = parseRequestInfo("GET", "/api/v1/namespaces/a/pods?watch=1&fieldSelector=metadata.name%3Dp");
  CHECK(subjectAccessReviewRequest(alice, GatewayAuth::attributesOf(info, "GET")) ==
        R"({"kind":"SubjectAccessReview","apiVersion":"authorization.k8s.io/v1","spec":{"resourceAttributes":)"
        R"({"namespace":"a","verb":"watch","version":"v1","resource":"pods","name":"p",)"
        R"("fieldSelector":{"rawSelector":"metadata.name=p"}},"user":"alice",)"
        R"("groups":["team-a","system:authenticated"],"extra":{"scopes":["namespace-a"]},"uid":"uid-alice"}})");
  const RequestInfo metrics = parseRequestInfo("GET", "/metrics");
  CHECK(subjectAccessReviewRequest({"bob", "", {}, {}}, GatewayAuth::attributesOf(metrics, "GET")) ==
        R"({"kind":"SubjectAccessReview","apiVersion":"authorization.k8s.io/v1","spec":{"nonResourceAttributes":)"
        R"({"path":"/metrics","verb":"get"},"user":"bob"}})");
}

TEST_CASE("Reviews of lists and watches carry their selectors as the apiserver authorizes them (issue 16)") {
  auto attrs = [](const char* method, const char* target) {
    return GatewayAuth::attributesOf(parseRequestInfo(method, target), method);
  };
  auto a = attrs("GET", "/api/v1/pods?fieldSelector=spec.nodeName%3Dn1&labelSelector=app%3Dweb&fieldSelector=x%3Dy");
  CHECK(a.field_selector == "spec.nodeName=n1");  // the first value, raw
  CHECK(a.label_selector == "app=web");
  CHECK(subjectAccessReviewRequest({"system:node:n1", "", {}, {}}, a) ==
        R"({"kind":"SubjectAccessReview","apiVersion":"authorization.k8s.io/v1","spec":{"resourceAttributes":)"
        R"({"verb":"list","version":"v1","resource":"pods","fieldSelector":{"rawSelector":"spec.nodeName=n1"},)"
        R"("labelSelector":{"rawSelector":"app=web"}},"user":"system:node:n1"}})");
  CHECK(attrs("DELETE", "/api/v1/namespaces/a/pods?labelSelector=app").label_selector == "app");
  // Not for single objects, nor for the deprecated /watch/ prefix (no selector authorization there).
  CHECK(attrs("GET", "/api/v1/namespaces/a/pods/p?fieldSelector=spec.nodeName%3Dn1").field_selector.empty());
  CHECK(attrs("GET", "/api/v1/watch/pods?fieldSelector=spec.nodeName%3Dn1").field_selector.empty());
}

TEST_CASE("Review answers: only a created review is definitive") {
  auto t = parseTokenReview(201, R"({"status":{"authenticated":true,"user":{"username":"alice","uid":"u",)"
                                 R"("groups":["g"],"extra":{"k":["v"]}}}})");
  CHECK(t.definitive);
  CHECK(t.authenticated);
  CHECK(t.user.name == "alice");
  CHECK(t.user.groups == std::vector<std::string>{"g"});
  CHECK(t.user.extra["k"] == std::vector<std::string>{"v"});
  auto bad = parseTokenReview(201, R"({"status":{"user":{},"error":"invalid bearer token"}})");
  CHECK(bad.definitive);
  CHECK_FALSE(bad.authenticated);
  CHECK_FALSE(parseTokenReview(201, R"({"status":{"authenticated":true,"user":{}}})").authenticated);
  CHECK_FALSE(parseTokenReview(500, "{}").definitive);
  CHECK_FALSE(parseTokenReview(201, "not json").definitive);
  CHECK(parseSubjectAccessReview(201, R"({"status":{"allowed":true}})").allowed);
  CHECK_FALSE(parseSubjectAccessReview(201, R"({"status":{"allowed":true,"denied":true}})").allowed);
  auto denied = parseSubjectAccessReview(201, R"({"status":{}})");
  CHECK(denied.definitive);
  CHECK_FALSE(denied.allowed);
  CHECK_FALSE(parseSubjectAccessReview(403, "{}").definitive);
}

TEST_CASE("A node's denial is not remembered: the Node authorizer's graph changes with every binding (issue 35)") {
  AccessReviewResult allowed, denied;
  allowed.definitive = denied.definitive = true;
  allowed.allowed = true;
  const UserInfo kubelet{"system:node:node-1", "", {"system:nodes", "system:authenticated"}, {}};
  const UserInfo controller{"system:serviceaccount:ns:sa", "", {"system:serviceaccounts", "system:authenticated"}, {}};
  // A kubelet asks for a new pod's secret before the apiserver's graph binds the pod to it:
  // the next ask must reach the apiserver again, not a denial kept for the TTL.
  CHECK_FALSE(GatewayAuth::keepsDecision(kubelet, denied));
  CHECK(GatewayAuth::keepsDecision(kubelet, allowed));
  CHECK(GatewayAuth::keepsDecision(controller, denied));
  CHECK(GatewayAuth::keepsDecision(controller, allowed));
}

TEST_CASE("401 and 403 are worded as the apiserver words them (E1)") {
  CHECK(toHttpAnswer(unauthorizedStatus()).body ==
        R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401})"
        "\n");
  UserInfo alice{"alice", "", {}, {}};
  auto attrs = [](const char* method, const char* target) {
    return GatewayAuth::attributesOf(parseRequestInfo(method, target), method);
  };
  HttpAnswer a = toHttpAnswer(forbiddenStatus(alice, attrs("GET", "/api/v1/namespaces/b/pods"), ""));
  CHECK(a.code == 403);
  CHECK(a.body ==
        R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"pods is forbidden: User \"alice\" cannot list resource \"pods\" in API group \"\" in the namespace \"b\"","reason":"Forbidden","details":{"kind":"pods"},"code":403})"
        "\n");
  CHECK(forbiddenStatus(alice, attrs("GET", "/api/v1/pods"), "").message ==
        R"(pods is forbidden: User "alice" cannot list resource "pods" in API group "" at the cluster scope)");
  Status named = forbiddenStatus(alice, attrs("GET", "/apis/apps/v1/namespaces/b/deployments/web"), "no rule");
  CHECK(named.message == R"(deployments.apps "web" is forbidden: User "alice" cannot get resource "deployments" )"
                         R"(in API group "apps" in the namespace "b": no rule)");
  CHECK(named.details_name == "web");
  CHECK(named.details_group == "apps");
  CHECK(named.details_kind == "deployments");
  CHECK(forbiddenStatus(alice, attrs("GET", "/metrics"), "").message ==
        R"(forbidden: User "alice" cannot get path "/metrics")");
}

TEST_CASE("The decision cache is bounded in bytes, not only entries: long keys evict (issue 16, finding 5)") {
  cache::testing::FakeClock clock;
  DecisionCache<int> c(1h, 100000, clock, 256 * 1024);
  for (int i = 0; i < 1000; ++i) c.put(std::to_string(i) + std::string(4 * 1024, 'k'), i);
  CHECK(c.bytes() <= 256 * 1024);
  CHECK(c.size() < 40);
  CHECK(c.find("999" + std::string(4 * 1024, 'k')) == 999);  // the newest stay
  CHECK_FALSE(c.find("0" + std::string(4 * 1024, 'k')));
  // A key of more than a sixteenth of the bound is not cached at all.
  c.put(std::string(32 * 1024, 'x'), 1);
  CHECK_FALSE(c.find(std::string(32 * 1024, 'x')));
}

TEST_CASE("Failed authentications per address: a burst, then a steady rate (issue 16, finding 8)") {
  cache::testing::FakeClock clock;
  FailureLimiter limiter(2.0, 5.0, 100, clock);
  for (int i = 0; i < 5; ++i) {
    CHECK_FALSE(limiter.exhausted("10.0.0.1"));
    limiter.failed("10.0.0.1");
  }
  CHECK(limiter.exhausted("10.0.0.1"));
  CHECK_FALSE(limiter.exhausted("10.0.0.2"));  // other addresses keep their budget
  clock.advance(500ms);                       // one failure's worth at 2/s
  CHECK_FALSE(limiter.exhausted("10.0.0.1"));
  limiter.failed("10.0.0.1");
  CHECK(limiter.exhausted("10.0.0.1"));
  clock.advance(1h);  // refills up to the burst only
  for (int i = 0; i < 5; ++i) limiter.failed("10.0.0.1");
  CHECK(limiter.exhausted("10.0.0.1"));
}

TEST_CASE("Bad-token lockout: a token seen to succeed is never held back by its address's budget") {
  cache::testing::FakeClock clock;
  FailureLimiter failures(2.0, 5.0, 100, clock);
  GatewayAuth gateway(GatewayAuthOptions{});  // nothing cached: its answers expired
  TokenReviewResult good;
  good.authenticated = good.definitive = true;
  good.user.name = "alice";
  CHECK(std::holds_alternative<UserInfo>(afterTokenReview(good, true, failures, "alice-token", "10.0.0.1")));
  for (int i = 0; i < 5; ++i) failures.failed("10.0.0.1");  // an attacker on the same address
  CHECK(failures.exhausted("10.0.0.1"));
  CHECK_FALSE(refuseNewToken(gateway, failures, "alice-token", "10.0.0.1"));  // reviewed again, not 429
  CHECK(refuseNewToken(gateway, failures, "never-seen", "10.0.0.1"));
}

TEST_CASE("Bad-token lockout: a remembered denial costs the attacker, not the address") {
  cache::testing::FakeClock clock;
  FailureLimiter failures(2.0, 5.0, 100, clock);
  TokenReviewResult denied;
  denied.definitive = true;
  CHECK(std::holds_alternative<Status>(afterTokenReview(denied, true, failures, "bad", "10.0.0.1")));
  for (int i = 0; i < 100; ++i) afterTokenReview(denied, false, failures, "bad", "10.0.0.1");  // remembered
  CHECK_FALSE(failures.exhausted("10.0.0.1"));
}

TEST_CASE("Only names an object could have are reviewed (issue 16, finding 5)") {
  auto reviewable = [](const std::string& path) {
    return GatewayAuth::reviewableNames(parseRequestInfo("GET", path));
  };
  CHECK(reviewable("/api/v1/namespaces/kube-system/pods/coredns-5d78c9869d-x2x7k"));
  CHECK(reviewable("/api/v1/namespaces/a/pods"));
  CHECK(reviewable("/apis/rbac.authorization.k8s.io/v1/clusterroles/system:aggregate-to-view"));
  CHECK(reviewable("/api/v1/namespaces/" + std::string(63, 'n') + "/pods/" + std::string(253, 'p')));
  CHECK_FALSE(reviewable("/api/v1/namespaces/" + std::string(64, 'n') + "/pods"));
  CHECK_FALSE(reviewable("/api/v1/namespaces/a/pods/" + std::string(254, 'p')));
  CHECK_FALSE(reviewable("/api/v1/namespaces/a/pods?fieldSelector=metadata.name%3D" + std::string(254, 'p')));
  for (const char* ns : {"Upper", "-a", "a-", "a_b", "a.b", "%C3%A9"}) {
    CAPTURE(ns);
    CHECK_FALSE(reviewable(std::string("/api/v1/namespaces/") + ns + "/pods"));
  }
  for (const char* name : {"a%20b", "%C3%A9", "a%0Ab"}) {
    CAPTURE(name);
    CHECK_FALSE(reviewable(std::string("/api/v1/namespaces/a/pods/") + name));
  }
}
