#include "config/values.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <stdexcept>

#include "config/duration.h"
#include "config/server_url.h"

namespace config {

namespace {

// More I/O threads than this is a typo rather than a tuning choice: the
// proxy is built for a handful of cores.
constexpr unsigned kMaxIoThreads = 1024;

[[noreturn]] void fail(const Setting& setting, const std::string& reason) {
  throw ConfigError(setting.origin + " \"" + setting.value + "\": " + reason);
}

bool isDecimal(const std::string& text) {
  return !text.empty() && text.size() <= 9 &&
         std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c); });
}

// A DNS label: lower-case letters, digits and '-', not starting or ending in '-'.
bool isLabel(std::string_view text) {
  if (text.empty() || text.size() > 63 || text.front() == '-' || text.back() == '-') return false;
  return std::all_of(text.begin(), text.end(),
                     [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'; });
}

// "pods", "deployments.apps", "certificatesigningrequests.certificates.k8s.io"
std::optional<GroupResource> parseGroupResource(std::string_view text) {
  const size_t dot = text.find('.');
  GroupResource out{std::string(text.substr(0, dot)), ""};
  if (!isLabel(out.resource)) return std::nullopt;
  if (dot == std::string_view::npos) return out;
  std::string_view group = text.substr(dot + 1);
  out.group = std::string(group);
  while (true) {
    const size_t next = group.find('.');
    if (!isLabel(group.substr(0, next))) return std::nullopt;
    if (next == std::string_view::npos) return out;
    group.remove_prefix(next + 1);
  }
}

std::string trim(const std::string& text) {
  const size_t begin = text.find_first_not_of(" \t");
  if (begin == std::string::npos) return "";
  return text.substr(begin, text.find_last_not_of(" \t") - begin + 1);
}

}  // namespace

ListenAddress parseListen(const Setting& setting) {
  const std::string& text = setting.value;
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos) fail(setting, "want host:port, e.g. 127.0.0.1:8001");
  ListenAddress out;
  out.host = text.substr(0, colon);
  if (out.host.size() >= 2 && out.host.front() == '[' && out.host.back() == ']') {
    out.host = out.host.substr(1, out.host.size() - 2);
    in6_addr address{};
    if (inet_pton(AF_INET6, out.host.c_str(), &address) != 1) fail(setting, "invalid IPv6 address");
  } else if (!out.host.empty() && out.host.front() == '[') {
    fail(setting, "want host:port, e.g. [::1]:8001");
  } else if (out.host.find(':') != std::string::npos) {
    fail(setting, "IPv6 addresses go in brackets, e.g. [::1]:8001");
  } else if (!std::all_of(out.host.begin(), out.host.end(),
                          [](unsigned char c) { return std::isalnum(c) || c == '-' || c == '.' || c == '_'; })) {
    fail(setting, "invalid host");
  }
  // Go's ":8001" means every interface.
  if (out.host.empty()) out.host = "0.0.0.0";
  try {
    out.port = parsePort(text.substr(colon + 1), true);
  } catch (const std::invalid_argument& e) {
    fail(setting, e.what());
  }
  return out;
}

LogFormat parseLogFormat(const Setting& setting) {
  if (setting.value == "text") return LogFormat::Text;
  if (setting.value == "json") return LogFormat::Json;
  fail(setting, "want text or json");
}

StoreEncoding parseStoreEncoding(const Setting& setting) {
  if (setting.value == "plain") return StoreEncoding::Plain;
  if (setting.value == "history") return StoreEncoding::History;
  if (setting.value == "compressed") return StoreEncoding::Compressed;
  fail(setting, "want plain, history or compressed");
}

Mode parseMode(const Setting& setting) {
  if (setting.value == "sidecar") return Mode::Sidecar;
  if (setting.value == "gateway") return Mode::Gateway;
  fail(setting, "want sidecar or gateway");
}

ReadPolicy parseReadPolicy(const Setting& setting) {
  if (setting.value == "strict") return ReadPolicy::Strict;
  if (setting.value == "cache") return ReadPolicy::Cache;
  fail(setting, "want strict or cache");
}

int parseVerbosity(const Setting& setting) {
  if (!isDecimal(setting.value) || std::stoi(setting.value) > 9) fail(setting, "want a level from 0 to 9");
  return std::stoi(setting.value);
}

unsigned parseIoThreads(const Setting& setting) {
  if (!isDecimal(setting.value) || std::stoul(setting.value) > kMaxIoThreads) {
    fail(setting, "want a thread count from 0 (one per core) to " + std::to_string(kMaxIoThreads));
  }
  return static_cast<unsigned>(std::stoul(setting.value));
}

unsigned parseCount(const Setting& setting) {
  constexpr unsigned long kMaxCount = 10'000'000;
  if (!isDecimal(setting.value) || setting.value.size() > 8 || std::stoul(setting.value) > kMaxCount) {
    fail(setting, "want a count from 0 to " + std::to_string(kMaxCount));
  }
  return static_cast<unsigned>(std::stoul(setting.value));
}

uint64_t parseWholeNumber(const Setting& setting) {
  if (!isDecimal(setting.value) || setting.value.size() > 9) fail(setting, "want a whole number from 0 to 999999999");
  return std::stoull(setting.value);
}

std::chrono::milliseconds parseTimeout(const Setting& setting) {
  std::chrono::nanoseconds value{};
  try {
    value = parseDuration(setting.value);
  } catch (const std::invalid_argument& e) {
    fail(setting, std::string(e.what()) + " (use Go syntax such as 5s, 1m30s, 250ms)");
  }
  if (value.count() < 0) fail(setting, "must not be negative");
  // Rounded up so that a tiny positive timeout never becomes "no wait".
  return std::chrono::ceil<std::chrono::milliseconds>(value);
}

std::chrono::milliseconds parsePositiveDuration(const Setting& setting) {
  const auto value = parseTimeout(setting);
  if (value.count() == 0) fail(setting, "must be positive");
  return value;
}

size_t parsePositiveCount(const Setting& setting) {
  if (!isDecimal(setting.value) || setting.value.size() > 9 || std::stoul(setting.value) == 0) {
    fail(setting, "want a count from 1 to 999999999");
  }
  return std::stoul(setting.value);
}

bool parseBool(const Setting& setting) {
  static const char* const kTrue[] = {"1", "t", "T", "TRUE", "true", "True"};
  static const char* const kFalse[] = {"0", "f", "F", "FALSE", "false", "False"};
  for (const char* spelling : kTrue) {
    if (setting.value == spelling) return true;
  }
  for (const char* spelling : kFalse) {
    if (setting.value == spelling) return false;
  }
  fail(setting, "want true or false");
}

std::vector<GroupResource> parseResourceList(const ListSetting& setting) {
  std::vector<GroupResource> out;
  for (const std::string& raw : setting.values) {
    const std::string entry = trim(raw);
    if (entry.empty()) continue;
    std::optional<GroupResource> resource = parseGroupResource(entry);
    if (!resource) {
      throw ConfigError(setting.origin + " \"" + entry +
                        "\": want a lower-case resource name such as pods or deployments.apps");
    }
    if (std::find(out.begin(), out.end(), *resource) == out.end()) out.push_back(std::move(*resource));
  }
  return out;
}

bool isLoopback(const std::string& host) {
  if (host == "localhost" || host == "::1") return true;
  in_addr v4{};
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  return false;
}

}  // namespace config
