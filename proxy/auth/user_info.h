#pragma once
// The authenticated caller in gateway mode, as the apiserver's user.Info has it:
// from a TokenReview's status.user, or from a verified client certificate (CN = name,
// O = groups, as the apiserver's x509 authenticator maps them).

#include <map>
#include <string>
#include <vector>

namespace proxy::auth {

struct UserInfo {
  std::string name;
  std::string uid;
  std::vector<std::string> groups;
  std::map<std::string, std::vector<std::string>> extra;
};

// What a request asks to do, in SubjectAccessReview terms (authorizer.Attributes).
struct AccessAttributes {
  bool resource_request = true;
  std::string verb;
  std::string group;
  std::string version;
  std::string resource;
  std::string subresource;
  std::string namespace_;
  std::string name;
  std::string path;  // non-resource requests
  // list, watch and deletecollection: the raw fieldSelector and labelSelector (first
  // values), which the apiserver's authorizers may allow on (AuthorizeWithSelectors).
  std::string field_selector;
  std::string label_selector;
};

}  // namespace proxy::auth
