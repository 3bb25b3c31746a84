#include "proxy/discovery/discovery_cache.h"

#include <algorithm>
#include <array>
#include <vector>

namespace proxy {
namespace {

// Splits "/a/b/c" into its segments; false when a segment is empty ("//", a trailing "/").
bool segments(std::string_view path, std::vector<std::string_view>& out) {
  if (path.size() < 2 || path[0] != '/') return false;
  size_t start = 1;
  while (true) {
    const size_t slash = path.find('/', start);
    const std::string_view segment = path.substr(start, slash == std::string_view::npos ? slash : slash - start);
    if (segment.empty()) return false;
    out.push_back(segment);
    if (slash == std::string_view::npos) return true;
    start = slash + 1;
  }
}

}  // namespace

bool DiscoveryCache::isDiscoveryPath(std::string_view path) {
  std::vector<std::string_view> parts;
  if (!segments(path, parts)) return false;
  if (parts[0] == "version") return parts.size() == 1;
  if (parts[0] == "api") return parts.size() <= 2;   // /api, /api/v1
  if (parts[0] == "apis") return parts.size() <= 3;  // /apis, /apis/<group>, /apis/<group>/<version>
  return false;
}

bool DiscoveryCache::answerIgnoresQuery(std::string_view query) {
  if (query.empty()) return true;
  constexpr std::string_view kTimeout = "timeout=";
  if (query.substr(0, kTimeout.size()) != kTimeout) return false;
  std::string_view d = query.substr(kTimeout.size());
  // One or more <digits>[.<digits>]<unit>, units h, m, s, ms, us, ns ("1m30s", "500ms").
  if (d.empty()) return false;
  while (!d.empty()) {
    size_t i = 0;
    while (i < d.size() && d[i] >= '0' && d[i] <= '9') ++i;
    if (i == 0) return false;
    if (i < d.size() && d[i] == '.') {
      const size_t fraction = ++i;
      while (i < d.size() && d[i] >= '0' && d[i] <= '9') ++i;
      if (i == fraction) return false;
    }
    d.remove_prefix(i);
    size_t unit = 0;
    for (std::string_view u : {"ms", "us", "ns", "h", "m", "s"}) {
      if (d.substr(0, u.size()) == u) {
        unit = u.size();
        break;
      }
    }
    if (unit == 0) return false;
    d.remove_prefix(unit);
  }
  return true;
}

std::string DiscoveryCache::key(std::string_view path, const DiscoveryForm& form) {
  std::string k;
  k.reserve(path.size() + 1 + form.name().size());
  k.append(path).append(1, '\n').append(form.name());
  return k;
}

bool DiscoveryCache::settled(uint64_t fingerprint, TimePoint now) {
  std::lock_guard lock(mu_);
  if (!fingerprint_) {
    fingerprint_ = fingerprint;
    still_since_ = TimePoint{};
  } else if (*fingerprint_ != fingerprint) {
    fingerprint_ = fingerprint;
    still_since_ = now;
  }
  return now - still_since_ >= options_.settle;
}

DiscoveryDocumentPtr DiscoveryCache::find(const std::string& key) const {
  std::lock_guard lock(mu_);
  auto it = documents_.find(key);
  return it == documents_.end() ? nullptr : it->second;
}

bool DiscoveryCache::valid(const DiscoveryDocument& doc, uint64_t fingerprint, TimePoint now) const {
  return doc.fingerprint == fingerprint && now - doc.fetched < options_.ttl;
}

void DiscoveryCache::put(const std::string& key, DiscoveryDocumentPtr doc) {
  std::lock_guard lock(mu_);
  documents_[key] = std::move(doc);
  while (documents_.size() > options_.max_documents) {
    auto oldest = std::min_element(documents_.begin(), documents_.end(),
                                   [](const auto& a, const auto& b) { return a.second->fetched < b.second->fetched; });
    documents_.erase(oldest);
  }
}

size_t DiscoveryCache::size() const {
  std::lock_guard lock(mu_);
  return documents_.size();
}

HeaderList documentHeaders(const HeaderList& upstream) {
  // Go's server writes Date; the apiserver's filters add Audit-Id and the priority-and-
  // fairness UIDs per request; framing and encoding are the proxy's to choose per answer.
  static constexpr std::array<std::string_view, 7> kExchange = {
      "Date", "Audit-Id", "Content-Length", "Content-Encoding", "Transfer-Encoding",
      "X-Kubernetes-Pf-Flowschema-Uid", "X-Kubernetes-Pf-Prioritylevel-Uid"};
  HeaderList kept;
  for (const auto& [name, value] : upstream) {
    if (isHopByHopHeader(name)) continue;
    const bool exchange = std::any_of(kExchange.begin(), kExchange.end(),
                                      [&](std::string_view e) { return headerNameEquals(name, e); });
    if (!exchange) kept.emplace_back(name, value);
  }
  return kept;
}

bool notModified(const DiscoveryDocument& doc, std::string_view if_none_match) {
  const std::string_view etag = findHeader(doc.headers, "ETag");
  return !etag.empty() && etag == if_none_match;
}

void StateFingerprint::mix(const void* data, size_t size) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < size; ++i) {
    hash_ ^= p[i];
    hash_ *= 1099511628211ull;
  }
}

void StateFingerprint::add(std::string_view key, uint64_t resource_version) {
  mix(key.data(), key.size());
  const unsigned char separator = 0;
  mix(&separator, 1);
  mix(&resource_version, sizeof resource_version);
}

}  // namespace proxy
