#include "cache/selectors/name_validation.h"

#include <algorithm>
#include <initializer_list>

namespace cache {

namespace {

// Limits and wording from apimachinery pkg/api/validate/content (kube.go, dns.go,
// errors.go), which labels.Parse uses since v0.37.
constexpr size_t kQualifiedNameMaxLength = 63;
constexpr size_t kLabelValueMaxLength = 63;
constexpr size_t kDNS1123SubdomainMaxLength = 253;

constexpr std::string_view kQualifiedNameFmt = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
constexpr std::string_view kQualifiedNameErrMsg =
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
constexpr std::string_view kLabelValueFmt = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
constexpr std::string_view kLabelValueErrMsg =
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start "
    "and end with an alphanumeric character";
constexpr std::string_view kDNS1123SubdomainFmt = "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
constexpr std::string_view kDNS1123SubdomainErrMsg =
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start "
    "and end with an alphanumeric character";

bool isAlnum(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
bool isLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

// ^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$
bool matchesQualifiedName(std::string_view s) {
  if (s.empty() || !isAlnum(s.front()) || !isAlnum(s.back())) return false;
  for (char c : s) {
    if (!isAlnum(c) && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

// ^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$ : dot-separated
// non-empty labels, each starting and ending with a lowercase alphanumeric.
bool matchesDNS1123Subdomain(std::string_view s) {
  if (s.empty()) return false;
  size_t start = 0;
  while (true) {
    size_t dot = s.find('.', start);
    std::string_view label = s.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    if (label.empty() || !isLowerAlnum(label.front()) || !isLowerAlnum(label.back())) return false;
    for (char c : label) {
      if (!isLowerAlnum(c) && c != '-') return false;
    }
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

// content.MaxLenError. (validation.MaxLenError says "characters"; see the header.)
std::string maxLenError(size_t n) { return "must be no more than " + std::to_string(n) + " bytes"; }

// content.RegexError with examples.
std::string regexError(std::string_view msg, std::string_view fmt, std::initializer_list<std::string_view> examples) {
  std::string out(msg);
  out.append(" (e.g. ");
  bool first = true;
  for (auto example : examples) {
    if (!first) out.append(" or ");
    first = false;
    out.append("'").append(example).append("', ");
  }
  out.append("regex used for validation is '").append(fmt).append("')");
  return out;
}

}  // namespace

std::vector<std::string> isDNS1123Subdomain(std::string_view value) {
  std::vector<std::string> errs;
  if (value.size() > kDNS1123SubdomainMaxLength) errs.push_back(maxLenError(kDNS1123SubdomainMaxLength));
  if (!matchesDNS1123Subdomain(value)) {
    errs.push_back(regexError(kDNS1123SubdomainErrMsg, kDNS1123SubdomainFmt, {"example.com"}));
  }
  return errs;
}

bool isDNS1123Label(std::string_view value) {
  constexpr size_t kMaxLength = 63;
  auto alphanumeric = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (value.empty() || value.size() > kMaxLength || !alphanumeric(value.front()) || !alphanumeric(value.back())) {
    return false;
  }
  return std::all_of(value.begin(), value.end(), [&](char c) { return alphanumeric(c) || c == '-'; });
}

std::vector<std::string> isQualifiedName(std::string_view value) {
  std::vector<std::string> errs;
  std::string_view name = value;
  const size_t slash = value.find('/');
  if (slash != std::string_view::npos) {
    if (value.find('/', slash + 1) != std::string_view::npos) {
      errs.push_back("a valid label key " +
                     regexError(kQualifiedNameErrMsg, kQualifiedNameFmt, {"MyName", "my.name", "123-abc"}) +
                     " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')");
      return errs;
    }
    std::string_view prefix = value.substr(0, slash);
    name = value.substr(slash + 1);
    if (prefix.empty()) {
      errs.push_back("prefix part must be non-empty");
    } else {
      for (auto& msg : isDNS1123Subdomain(prefix)) errs.push_back("prefix part " + msg);
    }
  }
  if (name.empty()) {
    errs.push_back("name part must be non-empty");
  } else if (name.size() > kQualifiedNameMaxLength) {
    errs.push_back("name part " + maxLenError(kQualifiedNameMaxLength));
  }
  if (!matchesQualifiedName(name)) {
    errs.push_back("name part " + regexError(kQualifiedNameErrMsg, kQualifiedNameFmt, {"MyName", "my.name", "123-abc"}));
  }
  return errs;
}

std::vector<std::string> isValidLabelValue(std::string_view value) {
  std::vector<std::string> errs;
  if (value.size() > kLabelValueMaxLength) errs.push_back(maxLenError(kLabelValueMaxLength));
  if (!value.empty() && !matchesQualifiedName(value)) {
    errs.push_back(regexError(kLabelValueErrMsg, kLabelValueFmt, {"MyValue", "my_value", "12345"}));
  }
  return errs;
}

}  // namespace cache
