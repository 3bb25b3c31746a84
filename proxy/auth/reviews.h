#pragma once
// TokenReview and SubjectAccessReview bodies (authentication.k8s.io/v1,
// authorization.k8s.io/v1): what the gateway sends to the upstream and how it reads the
// answer. Pure functions; the io code posts them with the proxy's own credentials.

#include <optional>
#include <string>

#include "proxy/auth/user_info.h"

namespace proxy::auth {

inline constexpr const char* kTokenReviewPath = "/apis/authentication.k8s.io/v1/tokenreviews";
inline constexpr const char* kSubjectAccessReviewPath = "/apis/authorization.k8s.io/v1/subjectaccessreviews";

std::string tokenReviewRequest(const std::string& token);
std::string subjectAccessReviewRequest(const UserInfo& user, const AccessAttributes& attrs);

// A review's outcome. `definitive` is false when the upstream did not answer the review
// (an error status or an unreadable body): such outcomes are not cached.
struct TokenReviewResult {
  bool definitive = false;
  bool throttled = false;  // not asked: too many reviews in flight (answer 429)
  bool authenticated = false;
  UserInfo user;
  std::string error;  // why not, for the log
};
struct AccessReviewResult {
  bool definitive = false;
  bool throttled = false;  // not asked: too many reviews in flight (answer 429)
  bool allowed = false;
  std::string reason;  // status.reason (denials append it to the 403 message)
  std::string error;
};

TokenReviewResult parseTokenReview(unsigned code, const std::string& body);
AccessReviewResult parseSubjectAccessReview(unsigned code, const std::string& body);

}  // namespace proxy::auth
