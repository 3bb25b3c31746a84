#pragma once
// Builders for the JSON an apiserver sends, so tests read as event sequences.

#include <string>
#include <vector>

namespace watch::testing {

inline std::string pod(const std::string& name, uint64_t rv) {
  return R"({"kind":"Pod","apiVersion":"v1","metadata":{"name":")" + name +
         R"(","namespace":"default","resourceVersion":")" + std::to_string(rv) +
         R"(","labels":{"app":"web"}},"spec":{"containers":[{"name":"c","image":"nginx"}]},"status":{}})";
}

inline std::string event(const std::string& type, const std::string& object) {
  return R"({"type":")" + type + R"(","object":)" + object + "}";
}

inline std::string bookmark(uint64_t rv, bool initial_events_end = false) {
  std::string annotations =
      initial_events_end ? R"(,"annotations":{"k8s.io/initial-events-end":"true"})" : "";
  return R"({"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":")" +
         std::to_string(rv) + "\"" + annotations + R"(},"spec":{"containers":null},"status":{}}})";
}

inline std::string statusJson(int code, const std::string& reason, const std::string& message) {
  return R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":")" + message +
         R"(","reason":")" + reason + R"(","code":)" + std::to_string(code) + "}";
}

inline std::string errorEvent(int code, const std::string& reason, const std::string& message) {
  return event("ERROR", statusJson(code, reason, message));
}

inline std::string expiredEvent() { return errorEvent(410, "Expired", "too old resource version: 5 (11874)"); }

inline std::string tooLargeStatus() {
  return R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Timeout: Too large resource version: 99999, current: 12500","reason":"Timeout","details":{"causes":[{"reason":"ResourceVersionTooLarge","message":"Too large resource version"}],"retryAfterSeconds":1},"code":504})";
}

inline std::string listBody(const std::vector<std::string>& items, uint64_t rv, const std::string& continue_token = "") {
  std::string body = R"({"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":")" + std::to_string(rv) + "\"";
  if (!continue_token.empty()) body += R"(,"continue":")" + continue_token + "\"";
  body += R"(},"items":[)";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) body += ",";
    body += items[i];
  }
  return body + "]}";
}

}  // namespace watch::testing
