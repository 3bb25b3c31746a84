#include "proxy/observability/status_page.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <string_view>

#include <fmt/format.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "cache/encoding.h"
#include "proxy/observability/proxy_metrics.h"
#include "watch/informer_manager.h"
#include "watch/upstream_health.h"

namespace proxy {
namespace {

std::string stateOf(const watch::Informer& informer, bool upstream_up, bool syncing) {
  if (informer.forbidden()) return "forbidden";
  if (!upstream_up) return "upstream down";
  if (!informer.hasSynced()) return "syncing";
  if (syncing) return "relisting";
  return informer.caughtUp() ? "synced" : "catching up";
}

double nowUnix() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

ResourceStatus statusOf(const watch::Informer& informer, bool upstream_up) {
  const auto& store = informer.store().stats();
  const auto& reflector = informer.reflectorStats();
  ResourceStatus r;
  r.resource = informer.resource().displayName();
  r.version = informer.resource().version;
  r.namespace_scope = informer.namespaceScope();
  r.encoding = std::string(cache::encodingName(informer.encoding()));
  const int64_t sync_started_ms = reflector.sync_started_unix_ms.load(std::memory_order_acquire);
  r.sync_in_progress = sync_started_ms != 0;
  r.state = stateOf(informer, upstream_up, r.sync_in_progress);
  if (r.sync_in_progress) {
    r.sync_objects = reflector.sync_objects.load();
    r.sync_bytes = reflector.sync_bytes.load();
    r.sync_expected_objects = reflector.sync_expected_objects.load();
    r.sync_seconds = std::max(0.0, nowUnix() - double(sync_started_ms) / 1000.0);
  }
  r.on_demand = informer.onDemand();
  r.objects = store.objects.load();
  r.json_bytes = store.json_bytes.load();
  r.overhead_bytes = store.overhead_bytes.load();
  r.resource_version = informer.store().currentRV();
  r.events_applied = reflector.events_applied_total.load();
  r.relists = reflector.upstream_relists_total.load();
  r.watch_restarts = reflector.upstream_watch_restarts_total.load();
  r.last_sync_unix = double(reflector.last_sync_unix_ms.load()) / 1000.0;
  r.last_sync_objects = reflector.last_sync_objects.load();
  r.watchers = informer.dispatcher().watcherCount();
  return r;
}

void addReads(ResourceStatus& row, const ProxyMetrics::ReadCounts& reads) {
  row.reads_from_cache = static_cast<uint64_t>(reads.cache);
  row.reads_passed_through = static_cast<uint64_t>(reads.upstream);
  for (const auto& [reason, count] : reads.pass_reasons) row.top_pass_reasons.emplace_back(reason, uint64_t(count));
  std::sort(row.top_pass_reasons.begin(), row.top_pass_reasons.end(),
            [](const auto& a, const auto& b) { return a.second > b.second; });
  if (row.top_pass_reasons.size() > 3) row.top_pass_reasons.resize(3);
}

// Text for HTML: the names come from the upstream's discovery.
std::string escapeHtml(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

// Every 5 s the page asks for the JSON and redraws the rows in place (textContent, never
// markup), so a browser left open keeps showing the present; data-refreshed counts redraws.
constexpr std::string_view kRefreshScript = R"js(<script>
function syncText(r) {
  if (!r.sync) return r.state;
  const rate = r.sync.seconds > 0 ? r.sync.objects / r.sync.seconds : 0;
  let text = r.state + ": " + r.sync.objects + " objects";
  const left = r.sync.expectedObjects - r.sync.objects;
  if (left > 0) text += " of ~" + r.sync.expectedObjects + " (" + Math.round(100 * r.sync.objects / r.sync.expectedObjects) + " %)";
  text += ", " + (r.sync.bytes / 1e6).toFixed(1) + " MB, " + Math.round(rate) + "/s";
  if (left > 0 && rate > 0) text += ", ~" + Math.round(left / rate) + " s left";
  return text;
}
function ago(t) {
  if (t <= 0) return "never";
  const s = Date.now() / 1000 - t;
  return s < 120 ? Math.round(s) + "s ago" : s < 7200 ? Math.round(s / 60) + "m ago" : (s / 3600).toFixed(1) + "h ago";
}
async function refresh() {
  try {
    const answer = await fetch("/debug/status", {headers: {Accept: "application/json"}});
    const status = await answer.json();
    const body = document.getElementById("rows");
    body.replaceChildren();
    for (const r of status.resources) {
      const row = body.insertRow();
      row.className = "resource";
      row.dataset.state = r.state;
      [r.resource, r.version, r.namespace || "(all)", r.encoding, syncText(r) + (r.onDemand ? " (on demand)" : ""),
       r.objects, ((r.jsonBytes + r.overheadBytes) / 1e6).toFixed(1), r.resourceVersion, ago(r.lastSyncTimestamp),
       r.eventsApplied, r.relists, r.watchers, r.readsFromCache + " / " + r.readsPassedThrough,
       Object.entries(r.passReasons).map(([why, n]) => why + " (" + n + ")").join(", ")].forEach((value, i) => {
        const cell = row.insertCell();
        cell.textContent = value;
        if (i >= 5 && i != 8 && i != 13) cell.className = "num";
      });
    }
    document.getElementById("upstream").textContent =
        "Upstream: " + (status.upstream.up ? "up" : "down for " + Math.round(status.upstream.downSeconds) + " s");
    const table = document.getElementById("resources");
    table.dataset.refreshed = Number(table.dataset.refreshed) + 1;
  } catch (e) {
    document.getElementById("upstream").textContent = "status not reachable: " + e;
  }
}
setInterval(refresh, 5000);
</script>
)js";

using JsonWriter = rapidjson::Writer<rapidjson::StringBuffer>;
void field(JsonWriter& w, const char* key, const std::string& value) {
  w.Key(key);
  w.String(value.c_str(), static_cast<rapidjson::SizeType>(value.size()));
}
void field(JsonWriter& w, const char* key, uint64_t value) {
  w.Key(key);
  w.Uint64(value);
}
void field(JsonWriter& w, const char* key, bool value) {
  w.Key(key);
  w.Bool(value);
}
void field(JsonWriter& w, const char* key, double value) {
  w.Key(key);
  w.Double(value);
}

// "syncing: 45000 of ~100000 objects (45 %), 210.3 MB, 4500/s, ~12 s left"
std::string syncText(const ResourceStatus& r) {
  std::string text = r.state;
  if (!r.sync_in_progress) return text;
  const double rate = r.sync_seconds > 0 ? double(r.sync_objects) / r.sync_seconds : 0;
  text += fmt::format(": {} objects", r.sync_objects);
  if (r.sync_expected_objects > r.sync_objects) {
    text += fmt::format(" of ~{} ({:.0f} %)", r.sync_expected_objects,
                        100.0 * double(r.sync_objects) / double(r.sync_expected_objects));
  }
  text += fmt::format(", {:.1f} MB, {:.0f}/s", double(r.sync_bytes) / 1e6, rate);
  if (r.sync_expected_objects > r.sync_objects && rate > 0) {
    text += fmt::format(", ~{:.0f} s left", double(r.sync_expected_objects - r.sync_objects) / rate);
  }
  return text;
}

std::string megabytes(uint64_t bytes) { return fmt::format("{:.1f}", double(bytes) / 1e6); }

std::string age(double since_unix, double now_unix) {
  if (since_unix <= 0) return "never";
  const double s = now_unix - since_unix;
  if (s < 120) return fmt::format("{:.0f}s ago", s);
  if (s < 7200) return fmt::format("{:.0f}m ago", s / 60);
  return fmt::format("{:.1f}h ago", s / 3600);
}

}  // namespace

StatusSource cacheStatusSource(std::shared_ptr<watch::InformerManager> manager,
                               std::shared_ptr<watch::UpstreamHealth> health, const ProxyMetrics* metrics) {
  return [manager = std::move(manager), health = std::move(health), metrics] {
    StatusReport report;
    report.upstream_up = !health || health->up();
    report.upstream_down_seconds = health ? health->downSeconds() : 0.0;
    report.now_unix = nowUnix();
    const auto reads = metrics ? metrics->readsByResource() : std::map<std::string, ProxyMetrics::ReadCounts, std::less<>>{};
    for (const auto& informer : manager->informers()) {
      ResourceStatus row = statusOf(*informer, report.upstream_up);
      if (auto it = reads.find(informer->resource().resource); it != reads.end()) addReads(row, it->second);
      report.resources.push_back(std::move(row));
    }
    for (const watch::NotCachedResource& r : manager->notCached()) {
      report.not_cached.push_back({r.group.empty() ? r.resource : r.resource + "." + r.group, r.version, r.reason});
    }
    return report;
  };
}

bool wantsJsonStatus(const AcceptHeader& accept) {
  for (const MediaRange& range : accept.ranges()) {
    if (range.is("application", "json")) return true;
  }
  return false;
}

std::string renderStatusJson(const StatusReport& report) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  w.StartObject();
  w.Key("upstream");
  w.StartObject();
  field(w, "up", bool(report.upstream_up));
  field(w, "downSeconds", double(report.upstream_down_seconds));
  w.EndObject();
  w.Key("resources");
  w.StartArray();
  for (const ResourceStatus& r : report.resources) {
    w.StartObject();
    field(w, "resource", r.resource);
    field(w, "version", r.version);
    field(w, "namespace", r.namespace_scope);
    field(w, "encoding", r.encoding);
    field(w, "state", r.state);
    field(w, "onDemand", bool(r.on_demand));
    field(w, "objects", uint64_t(r.objects));
    field(w, "jsonBytes", uint64_t(r.json_bytes));
    field(w, "overheadBytes", uint64_t(r.overhead_bytes));
    field(w, "resourceVersion", uint64_t(r.resource_version));
    field(w, "eventsApplied", uint64_t(r.events_applied));
    field(w, "relists", uint64_t(r.relists));
    field(w, "watchRestarts", uint64_t(r.watch_restarts));
    field(w, "lastSyncTimestamp", double(r.last_sync_unix));
    field(w, "lastSyncObjects", uint64_t(r.last_sync_objects));
    field(w, "watchers", uint64_t(r.watchers));
    w.Key("sync");
    if (r.sync_in_progress) {
      w.StartObject();
      field(w, "objects", uint64_t(r.sync_objects));
      field(w, "bytes", uint64_t(r.sync_bytes));
      field(w, "expectedObjects", uint64_t(r.sync_expected_objects));
      field(w, "seconds", double(r.sync_seconds));
      w.EndObject();
    } else {
      w.Null();
    }
    field(w, "readsFromCache", uint64_t(r.reads_from_cache));
    field(w, "readsPassedThrough", uint64_t(r.reads_passed_through));
    w.Key("passReasons");
    w.StartObject();
    for (const auto& [reason, count] : r.top_pass_reasons) {
      w.Key(reason.c_str(), static_cast<rapidjson::SizeType>(reason.size()));
      w.Uint64(count);
    }
    w.EndObject();
    w.EndObject();
  }
  w.EndArray();
  w.Key("notCached");
  w.StartArray();
  for (const NotCachedStatus& r : report.not_cached) {
    w.StartObject();
    field(w, "resource", r.resource);
    field(w, "version", r.version);
    field(w, "reason", r.reason);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize()) + "\n";
}

std::string renderStatusHtml(const StatusReport& report) {
  std::string rows;
  for (const ResourceStatus& r : report.resources) {
    std::string reasons;
    for (const auto& [reason, count] : r.top_pass_reasons) {
      reasons += fmt::format("{}{} ({})", reasons.empty() ? "" : ", ", reason, count);
    }
    rows += fmt::format(
        "<tr class=\"resource\" data-state=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
        "<td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td>"
        "<td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{} / {}</td>"
        "<td>{}</td></tr>\n",
        escapeHtml(r.state), escapeHtml(r.resource), escapeHtml(r.version),
        r.namespace_scope.empty() ? "(all)" : escapeHtml(r.namespace_scope), escapeHtml(r.encoding),
        escapeHtml(syncText(r)) + (r.on_demand ? " (on demand)" : ""), r.objects, megabytes(r.json_bytes + r.overhead_bytes),
        r.resource_version, age(r.last_sync_unix, report.now_unix), r.events_applied, r.relists, r.watchers,
        r.reads_from_cache, r.reads_passed_through, escapeHtml(reasons));
  }
  std::string not_cached;
  for (const NotCachedStatus& r : report.not_cached) {
    not_cached += fmt::format("<tr class=\"not-cached\"><td>{}</td><td>{}</td><td>{}</td></tr>\n", escapeHtml(r.resource),
                              escapeHtml(r.version), escapeHtml(r.reason));
  }
  const std::string upstream =
      report.upstream_up ? "up" : fmt::format("down for {:.0f} s", report.upstream_down_seconds);
  return fmt::format(
             "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>kube-cache-proxy status</title>"
             "<style>body{{font-family:sans-serif}}table{{border-collapse:collapse}}"
             "td,th{{border:1px solid #ccc;padding:2px 6px}}.num{{text-align:right}}</style></head>\n"
             "<body><h1>kube-cache-proxy</h1><p id=\"upstream\">Upstream: {}</p>\n"
             "<table id=\"resources\" data-refreshed=\"0\"><thead><tr><th>resource</th><th>version</th>"
             "<th>namespace</th><th>encoding</th><th>state</th><th>objects</th><th>MB</th><th>resourceVersion</th>"
             "<th>last full sync</th><th>events applied</th><th>relists</th><th>watchers</th>"
             "<th>reads from memory / passed through</th><th>why passed</th></tr></thead>\n"
             "<tbody id=\"rows\">\n{}</tbody></table>\n"
             "<p>{} cached resources. JSON: <code>kubectl get --raw /debug/status</code>. Metrics: "
             "<a href=\"/metrics\">/metrics</a>.</p>\n"
             "<h2>Not cached</h2><table id=\"not-cached\"><tr><th>resource</th><th>version</th><th>why</th></tr>\n"
             "{}</table>\n",
             upstream, rows, report.resources.size(), not_cached) +
         std::string(kRefreshScript) + "</body></html>\n";
}

}  // namespace proxy
