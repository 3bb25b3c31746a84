// apimachinery checks for label keys, label values (pkg/api/validate/content, what
// labels.Parse uses) and DNS-1123 subdomains (pkg/util/validation), with the exact
// texts the apiserver reports.
#include "tests/apiserver/selectors/label_validation.h"

#include <algorithm>

namespace testapi {

namespace {

constexpr std::string_view kQualifiedNameFmt = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
constexpr std::string_view kQualifiedNameErr =
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
    "character";
constexpr std::string_view kLabelValueErr =
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start "
    "and end with an alphanumeric character";
constexpr std::string_view kDns1123SubdomainFmt = "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
constexpr std::string_view kDns1123SubdomainErr =
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start "
    "and end with an alphanumeric character";

// content.RegexError (and validation.RegexError), with its double spaces between examples.
std::string regexError(std::string_view msg, std::string_view fmt, const std::vector<std::string_view>& examples) {
  std::string out(msg);
  out += " (e.g. ";
  for (size_t i = 0; i < examples.size(); ++i) {
    if (i > 0) out += " or ";
    out += "'" + std::string(examples[i]) + "', ";
  }
  return out + "regex used for validation is '" + std::string(fmt) + "')";
}

// content.MaxLenError: the label-key and label-value limits are byte counts.
std::string maxLenBytesError(int n) { return "must be no more than " + std::to_string(n) + " bytes"; }
// validation.MaxLenError, kept by pkg/util/validation for names.
std::string maxLenCharactersError(int n) { return "must be no more than " + std::to_string(n) + " characters"; }

bool isAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }

// ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]
bool matchesQualifiedName(std::string_view s) {
  if (s.empty() || !isAlnum(s.front()) || !isAlnum(s.back())) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return isAlnum(c) || c == '-' || c == '_' || c == '.'; });
}

bool isDnsLabel(std::string_view s) {
  auto lowerAlnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (s.empty() || !lowerAlnum(s.front()) || !lowerAlnum(s.back())) return false;
  return std::all_of(s.begin(), s.end(), [&](char c) { return lowerAlnum(c) || c == '-'; });
}

bool matchesDns1123Subdomain(std::string_view s) {
  size_t pos = 0;
  while (true) {
    const size_t dot = s.find('.', pos);
    if (!isDnsLabel(s.substr(pos, dot == std::string_view::npos ? std::string_view::npos : dot - pos))) return false;
    if (dot == std::string_view::npos) return true;
    pos = dot + 1;
  }
}

// IsDNS1123Subdomain of either package; they differ only in the length message.
std::vector<std::string> dns1123SubdomainErrors(std::string_view value, const std::string& too_long) {
  std::vector<std::string> errs;
  if (value.size() > 253) errs.push_back(too_long);
  if (!matchesDns1123Subdomain(value))
    errs.push_back(regexError(kDns1123SubdomainErr, kDns1123SubdomainFmt, {"example.com"}));
  return errs;
}

}  // namespace

std::vector<std::string> isDns1123Subdomain(std::string_view value) {
  return dns1123SubdomainErrors(value, maxLenCharactersError(253));
}

bool isDns1123Label(std::string_view value) { return value.size() <= 63 && isDnsLabel(value); }

// content.IsLabelKey, as labels.validateLabelKey calls it.
std::vector<std::string> isLabelKey(std::string_view value) {
  std::vector<std::string> errs;
  const std::string nameRegex = regexError(kQualifiedNameErr, kQualifiedNameFmt, {"MyName", "my.name", "123-abc"});
  std::string_view name = value;
  const size_t slashes = static_cast<size_t>(std::count(value.begin(), value.end(), '/'));
  if (slashes > 1)
    return {"a valid label key " + nameRegex + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"};
  if (slashes == 1) {
    const size_t slash = value.find('/');
    const std::string_view prefix = value.substr(0, slash);
    name = value.substr(slash + 1);
    if (prefix.empty()) {
      errs.push_back("prefix part must be non-empty");
    } else {
      // content.IsDNS1123Subdomain: "bytes", unlike the util/validation one above.
      for (const auto& m : dns1123SubdomainErrors(prefix, maxLenBytesError(253))) errs.push_back("prefix part " + m);
    }
  }
  if (name.empty()) {
    errs.push_back("name part must be non-empty");
  } else if (name.size() > 63) {
    errs.push_back("name part " + maxLenBytesError(63));
  }
  if (!matchesQualifiedName(name)) errs.push_back("name part " + nameRegex);
  return errs;
}

// content.IsLabelValue (validation.IsValidLabelValue is an alias of it).
std::vector<std::string> isLabelValue(std::string_view value) {
  std::vector<std::string> errs;
  if (value.size() > 63) errs.push_back(maxLenBytesError(63));
  if (!value.empty() && !matchesQualifiedName(value))
    errs.push_back(regexError(kLabelValueErr, "(" + std::string(kQualifiedNameFmt) + ")?", {"MyValue", "my_value", "12345"}));
  return errs;
}

std::string joinMessages(const std::vector<std::string>& messages) {
  std::string out;
  for (size_t i = 0; i < messages.size(); ++i) {
    if (i) out += "; ";
    out += messages[i];
  }
  return out;
}

}  // namespace testapi
