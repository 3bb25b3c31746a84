// Row printers for the flat built-in types, and the JSON readers and formatting
// helpers (ages, label sets, selectors) all printers use.
#include "tests/apiserver/table/table_printer_util.h"

#include <algorithm>
#include <ctime>
#include <map>
#include <set>

#include "tests/apiserver/status/status_util.h"

namespace testapi {

namespace tablejson {

const rapidjson::Value* at(const rapidjson::Value& obj, std::initializer_list<const char*> path) {
  const rapidjson::Value* v = &obj;
  for (const char* key : path) {
    if (!v->IsObject()) return nullptr;
    auto it = v->FindMember(key);
    if (it == v->MemberEnd()) return nullptr;
    v = &it->value;
  }
  return v;
}

std::string str(const rapidjson::Value& obj, std::initializer_list<const char*> path) {
  const auto* v = at(obj, path);
  return v && v->IsString() ? std::string(v->GetString(), v->GetStringLength()) : std::string();
}

int64_t integer(const rapidjson::Value& obj, std::initializer_list<const char*> path, int64_t fallback) {
  const auto* v = at(obj, path);
  if (!v || v->IsNull()) return fallback;
  if (v->IsInt64()) return v->GetInt64();
  if (v->IsNumber()) return static_cast<int64_t>(v->GetDouble());
  return fallback;
}

bool boolean(const rapidjson::Value& obj, std::initializer_list<const char*> path) {
  const auto* v = at(obj, path);
  return v && v->IsBool() && v->GetBool();
}

std::optional<PrinterClock::time_point> time(const rapidjson::Value& obj, std::initializer_list<const char*> path) {
  const auto* v = at(obj, path);
  if (!v || !v->IsString()) return std::nullopt;
  return parseRfc3339(std::string_view(v->GetString(), v->GetStringLength()));
}

const rapidjson::Value& emptyArray() {
  static const rapidjson::Value kEmpty(rapidjson::kArrayType);
  return kEmpty;
}

const rapidjson::Value& arrayAt(const rapidjson::Value& obj, std::initializer_list<const char*> path) {
  const auto* v = at(obj, path);
  return v && v->IsArray() ? *v : emptyArray();
}

std::string orNone(std::string s) { return s.empty() ? "<none>" : s; }

std::string join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) out += sep;
    out += parts[i];
  }
  return out;
}

std::string trimSpace(std::string s) { return std::string(goTrimSpace(s)); }

std::string formatLabels(const rapidjson::Value* map) {
  std::map<std::string, std::string> sorted;
  if (map && map->IsObject())
    for (auto it = map->MemberBegin(); it != map->MemberEnd(); ++it)
      sorted[it->name.GetString()] = it->value.IsString() ? it->value.GetString() : "";
  std::vector<std::string> parts;
  for (const auto& [k, v] : sorted) parts.push_back(k + "=" + v);
  return parts.empty() ? "<none>" : join(parts, ",");
}

std::optional<std::string> labelSelectorString(const rapidjson::Value* selector) {
  if (!selector || !selector->IsObject()) return "";  // labels.Nothing() prints as ""
  std::vector<std::pair<std::string, std::string>> reqs;  // key, text
  if (const auto* ml = at(*selector, {"matchLabels"}); ml && ml->IsObject())
    for (auto it = ml->MemberBegin(); it != ml->MemberEnd(); ++it)
      reqs.emplace_back(it->name.GetString(),
                        std::string(it->name.GetString()) + "=" + (it->value.IsString() ? it->value.GetString() : ""));
  for (const auto& expr : arrayAt(*selector, {"matchExpressions"}).GetArray()) {
    const std::string key = str(expr, {"key"});
    const std::string op = str(expr, {"operator"});
    std::vector<std::string> values;
    for (const auto& v : arrayAt(expr, {"values"}).GetArray())
      if (v.IsString()) values.emplace_back(v.GetString());
    std::sort(values.begin(), values.end());
    const std::string set = values.size() == 1 ? values[0] : join(values, ",");
    if (op == "In") reqs.emplace_back(key, key + " in (" + set + ")");
    else if (op == "NotIn") reqs.emplace_back(key, key + " notin (" + set + ")");
    else if (op == "Exists") reqs.emplace_back(key, key);
    else if (op == "DoesNotExist") reqs.emplace_back(key, "!" + key);
    else return std::nullopt;
  }
  std::stable_sort(reqs.begin(), reqs.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> parts;
  for (auto& r : reqs) parts.push_back(r.second);
  return join(parts, ",");
}

std::pair<std::string, std::string> containerCells(const rapidjson::Value& obj) {
  std::vector<std::string> names, images;
  for (const auto& c : arrayAt(obj, {"spec", "template", "spec", "containers"}).GetArray()) {
    names.push_back(str(c, {"name"}));
    images.push_back(str(c, {"image"}));
  }
  return {join(names, ","), join(images, ",")};
}

namespace {

int64_t memberCount(const rapidjson::Value& obj, const char* field) {
  const auto* v = at(obj, {field});
  return v && v->IsObject() ? static_cast<int64_t>(v->MemberCount()) : 0;
}

std::string name(const rapidjson::Value& o) { return str(o, {"metadata", "name"}); }
std::string age(const rapidjson::Value& o, PrinterClock::time_point now) {
  return ageSince(at(o, {"metadata", "creationTimestamp"}), now);
}

std::string externalIP(const rapidjson::Value& svc) {
  std::vector<std::string> external;
  for (const auto& ip : arrayAt(svc, {"spec", "externalIPs"}).GetArray())
    if (ip.IsString()) external.emplace_back(ip.GetString());
  const std::string type = str(svc, {"spec", "type"});
  if (type == "ClusterIP" || type == "NodePort") return external.empty() ? "<none>" : join(external, ",");
  if (type == "ExternalName") return str(svc, {"spec", "externalName"});
  if (type != "LoadBalancer") return "<unknown>";
  std::set<std::string> lb;  // sorted, unique; never clipped in wide output
  for (const auto& ing : arrayAt(svc, {"status", "loadBalancer", "ingress"}).GetArray()) {
    if (!str(ing, {"ip"}).empty()) lb.insert(str(ing, {"ip"}));
    else if (!str(ing, {"hostname"}).empty()) lb.insert(str(ing, {"hostname"}));
  }
  std::vector<std::string> all(lb.begin(), lb.end());
  if (!external.empty()) {
    all.insert(all.end(), external.begin(), external.end());
    return join(all, ",");
  }
  return all.empty() ? "<pending>" : join(all, ",");
}

PrintedRow printService(const rapidjson::Value& svc, PrinterClock::time_point now) {
  const rapidjson::Value& ips = arrayAt(svc, {"spec", "clusterIPs"});
  std::string clusterIP = ips.Size() > 0 && ips[0].IsString() ? ips[0].GetString() : str(svc, {"spec", "clusterIP"});
  std::vector<std::string> ports;
  for (const auto& p : arrayAt(svc, {"spec", "ports"}).GetArray()) {
    const int64_t nodePort = integer(p, {"nodePort"});
    ports.push_back(std::to_string(integer(p, {"port"})) + (nodePort > 0 ? ":" + std::to_string(nodePort) : "") +
                    "/" + str(p, {"protocol"}));
  }
  return {{name(svc), str(svc, {"spec", "type"}), orNone(clusterIP), externalIP(svc), orNone(join(ports, ",")),
           age(svc, now), formatLabels(at(svc, {"spec", "selector"}))},
          ""};
}

// formatEndpoints: up to three host:port pairs, then " + N more...".
std::string formatEndpoints(const rapidjson::Value& ep) {
  const rapidjson::Value& subsets = arrayAt(ep, {"subsets"});
  if (subsets.Size() == 0) return "<none>";
  constexpr size_t kMax = 3;
  std::vector<std::string> list;
  bool more = false;
  size_t count = 0;
  for (const auto& ss : subsets.GetArray()) {
    const rapidjson::Value& addrs = arrayAt(ss, {"addresses"});
    const rapidjson::Value& ports = arrayAt(ss, {"ports"});
    auto addAll = [&](const std::string* port) {
      count += addrs.Size();
      for (const auto& a : addrs.GetArray()) {
        if (list.size() == kMax) {
          more = true;
          break;
        }
        std::string ip = str(a, {"ip"});
        if (!port) list.push_back(ip);
        else list.push_back((ip.find(':') != std::string::npos ? "[" + ip + "]" : ip) + ":" + *port);
      }
    };
    if (ports.Size() == 0) {
      addAll(nullptr);  // headless services without ports list bare addresses
      continue;
    }
    for (const auto& p : ports.GetArray()) {
      const std::string port = std::to_string(integer(p, {"port"}));
      addAll(&port);
    }
  }
  std::string out = join(list, ",");
  if (more) out += " + " + std::to_string(count - kMax) + " more...";
  return out;
}

PrintedRow printDeployment(const rapidjson::Value& d, PrinterClock::time_point now) {
  auto [names, images] = containerCells(d);
  const int64_t desired = integer(d, {"spec", "replicas"}, 1);  // apps/v1 defaults replicas to 1
  return {{name(d), std::to_string(integer(d, {"status", "readyReplicas"})) + "/" + std::to_string(desired),
           integer(d, {"status", "updatedReplicas"}), integer(d, {"status", "availableReplicas"}), age(d, now), names,
           images, labelSelectorString(at(d, {"spec", "selector"})).value_or("<invalid>")},
          ""};
}

PrintedRow printReplicaSet(const rapidjson::Value& rs, PrinterClock::time_point now) {
  auto [names, images] = containerCells(rs);
  auto selector = labelSelectorString(at(rs, {"spec", "selector"}));
  return {{name(rs), integer(rs, {"spec", "replicas"}, 1), integer(rs, {"status", "replicas"}),
           integer(rs, {"status", "readyReplicas"}), age(rs, now), names, images,
           !selector ? std::string("<error>") : selector->empty() ? std::string("<none>") : *selector},
          ""};
}

}  // namespace

std::optional<RowPrinter> simplePrinter(std::string_view group, std::string_view resource) {
  if (group.empty() && resource == "configmaps")
    return RowPrinter([](const rapidjson::Value& o, PrinterClock::time_point now) {
      return PrintedRow{{name(o), memberCount(o, "data") + memberCount(o, "binaryData"), age(o, now)}, ""};
    });
  if (group.empty() && resource == "secrets")
    return RowPrinter([](const rapidjson::Value& o, PrinterClock::time_point now) {
      return PrintedRow{{name(o), str(o, {"type"}), memberCount(o, "data"), age(o, now)}, ""};
    });
  if (group.empty() && resource == "namespaces")
    return RowPrinter([](const rapidjson::Value& o, PrinterClock::time_point now) {
      return PrintedRow{{name(o), str(o, {"status", "phase"}), age(o, now)}, ""};
    });
  if (group.empty() && resource == "endpoints")
    return RowPrinter([](const rapidjson::Value& o, PrinterClock::time_point now) {
      return PrintedRow{{name(o), formatEndpoints(o), age(o, now)}, ""};
    });
  if (group.empty() && resource == "services") return RowPrinter(printService);
  if (group == "apps" && resource == "deployments") return RowPrinter(printDeployment);
  if (group == "apps" && resource == "replicasets") return RowPrinter(printReplicaSet);
  return std::nullopt;
}

}  // namespace tablejson

std::string humanDuration(std::chrono::nanoseconds d) {
  using namespace std::chrono;
  const int64_t seconds = duration_cast<std::chrono::seconds>(d).count();
  // Up to two seconds in the future still reads as "now" (clock skew).
  if (seconds < -1) return "<invalid>";
  if (seconds < 0) return "0s";
  if (seconds < 60 * 2) return std::to_string(seconds) + "s";
  const int64_t minutes = duration_cast<std::chrono::minutes>(d).count();
  if (minutes < 10) {
    const int64_t s = seconds % 60;
    return s == 0 ? std::to_string(minutes) + "m" : std::to_string(minutes) + "m" + std::to_string(s) + "s";
  }
  if (minutes < 60 * 3) return std::to_string(minutes) + "m";
  const int64_t hours = duration_cast<std::chrono::hours>(d).count();
  if (hours < 8) {
    const int64_t m = minutes % 60;
    return m == 0 ? std::to_string(hours) + "h" : std::to_string(hours) + "h" + std::to_string(m) + "m";
  }
  if (hours < 48) return std::to_string(hours) + "h";
  if (hours < 24 * 8) {
    const int64_t h = hours % 24;
    return h == 0 ? std::to_string(hours / 24) + "d" : std::to_string(hours / 24) + "d" + std::to_string(h) + "h";
  }
  if (hours < 24 * 365 * 2) return std::to_string(hours / 24) + "d";
  if (hours < 24 * 365 * 8) {
    const int64_t dy = (hours / 24) % 365;
    return dy == 0 ? std::to_string(hours / 24 / 365) + "y"
                   : std::to_string(hours / 24 / 365) + "y" + std::to_string(dy) + "d";
  }
  return std::to_string(hours / 24 / 365) + "y";
}

std::optional<PrinterClock::time_point> parseRfc3339(std::string_view t) {
  int y, mo, d, h, mi, s;
  char sep;
  int consumed = 0;
  const std::string text(t);
  if (std::sscanf(text.c_str(), "%4d-%2d-%2d%c%2d:%2d:%2d%n", &y, &mo, &d, &sep, &h, &mi, &s, &consumed) != 7 ||
      (sep != 'T' && sep != 't'))
    return std::nullopt;
  size_t pos = static_cast<size_t>(consumed);
  int64_t nanos = 0;
  if (pos < text.size() && text[pos] == '.') {
    int64_t scale = 100000000;
    for (++pos; pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos])); ++pos, scale /= 10)
      nanos += (text[pos] - '0') * scale;
  }
  int64_t offset = 0;
  if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
    int oh = 0, om = 0;
    if (std::sscanf(text.c_str() + pos + 1, "%2d:%2d", &oh, &om) != 2) return std::nullopt;
    offset = (text[pos] == '+' ? 1 : -1) * (oh * 3600 + om * 60);
  } else if (pos >= text.size() || (text[pos] != 'Z' && text[pos] != 'z')) {
    return std::nullopt;
  }
  std::tm tm{};
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = s;
  const int64_t epoch = static_cast<int64_t>(timegm(&tm)) - offset;
  // Go's zero time (0001-01-01T00:00:00Z) means "unset" to the printers.
  if (y == 1 && mo == 1 && d == 1 && h == 0 && mi == 0 && s == 0 && nanos == 0) return std::nullopt;
  return PrinterClock::time_point(std::chrono::duration_cast<PrinterClock::duration>(std::chrono::seconds(epoch) +
                                                                       std::chrono::nanoseconds(nanos)));
}

std::string ageSince(const rapidjson::Value* timestamp, PrinterClock::time_point now) {
  if (!timestamp || !timestamp->IsString()) return "<unknown>";
  auto t = parseRfc3339(std::string_view(timestamp->GetString(), timestamp->GetStringLength()));
  if (!t) return "<unknown>";
  return humanDuration(now - *t);
}

}  // namespace testapi
