// Row printers for the built-in types (pkg/printers/internalversion printPod,
// printNode, ...), reading the stored v1 JSON directly. Wide output is always on,
// as in the apiserver's TableConvertor.
#include "tests/apiserver/table/table_printers.h"
#include "tests/apiserver/table/table_printer_util.h"

#include <algorithm>
#include <set>

namespace testapi {

namespace {

using namespace tablejson;

bool hasCondition(const rapidjson::Value& conditions, std::string_view type, std::string_view status) {
  if (!conditions.IsArray()) return false;
  for (const auto& c : conditions.GetArray())
    if (str(c, {"type"}) == type) return str(c, {"status"}) == status;
  return false;
}

bool isRestartable(const rapidjson::Value* container) {
  return container && str(*container, {"restartPolicy"}) == "Always";
}

struct Restarts {
  int64_t count = 0;
  std::optional<PrinterClock::time_point> last;
  void add(const rapidjson::Value& status) {
    count += integer(status, {"restartCount"});
    if (auto t = time(status, {"lastState", "terminated", "finishedAt"}); t && (!last || *last < *t)) last = t;
  }
};

std::string terminatedReason(const rapidjson::Value& terminated, const char* prefix) {
  const int64_t signal = integer(terminated, {"signal"});
  if (signal != 0) return std::string(prefix) + "Signal:" + std::to_string(signal);
  return std::string(prefix) + "ExitCode:" + std::to_string(integer(terminated, {"exitCode"}));
}

PrintedRow printPod(const rapidjson::Value& pod, PrinterClock::time_point now) {
  const rapidjson::Value& empty = emptyArray();
  const rapidjson::Value& containers = arrayAt(pod, {"spec", "containers"});
  const rapidjson::Value& inits = arrayAt(pod, {"spec", "initContainers"});
  const rapidjson::Value& conditions = arrayAt(pod, {"status", "conditions"});
  const std::string phase = str(pod, {"status", "phase"});
  std::string reason = str(pod, {"status", "reason"}).empty() ? phase : str(pod, {"status", "reason"});
  for (const auto& c : conditions.GetArray())
    if (str(c, {"type"}) == "PodScheduled" && str(c, {"reason"}) == "SchedulingGated") reason = "SchedulingGated";

  auto initSpec = [&](std::string_view name) -> const rapidjson::Value* {
    for (const auto& c : inits.GetArray())
      if (str(c, {"name"}) == name) return &c;
    return nullptr;
  };
  int64_t total = containers.Size();
  for (const auto& c : inits.GetArray())
    if (isRestartable(&c)) ++total;

  int64_t ready = 0;
  Restarts all, restartable;
  bool initializing = false;
  const rapidjson::Value& initStatuses = arrayAt(pod, {"status", "initContainerStatuses"});
  for (rapidjson::SizeType i = 0; i < initStatuses.Size(); ++i) {
    const auto& cs = initStatuses[i];
    all.add(cs);
    const bool isSidecar = isRestartable(initSpec(str(cs, {"name"})));
    if (isSidecar) restartable.add(cs);
    const rapidjson::Value* terminated = at(cs, {"state", "terminated"});
    const rapidjson::Value* waiting = at(cs, {"state", "waiting"});
    if (terminated && terminated->IsObject() && integer(*terminated, {"exitCode"}) == 0) continue;
    if (isSidecar && boolean(cs, {"started"})) {
      if (boolean(cs, {"ready"})) ++ready;
      continue;
    }
    if (terminated && terminated->IsObject()) {
      const std::string r = str(*terminated, {"reason"});
      reason = r.empty() ? terminatedReason(*terminated, "Init:") : "Init:" + r;
    } else if (waiting && waiting->IsObject() && !str(*waiting, {"reason"}).empty() &&
               str(*waiting, {"reason"}) != "PodInitializing") {
      reason = "Init:" + str(*waiting, {"reason"});
    } else {
      reason = "Init:" + std::to_string(i) + "/" + std::to_string(inits.Size());
    }
    initializing = true;
    break;
  }

  Restarts shown = all;
  if (!initializing || hasCondition(conditions, "Initialized", "True")) {
    shown = restartable;
    bool hasRunning = false;
    const rapidjson::Value& statuses = arrayAt(pod, {"status", "containerStatuses"});
    for (rapidjson::SizeType n = statuses.Size(); n > 0; --n) {
      const auto& cs = statuses[n - 1];
      shown.add(cs);
      const rapidjson::Value* waiting = at(cs, {"state", "waiting"});
      const rapidjson::Value* terminated = at(cs, {"state", "terminated"});
      const rapidjson::Value* running = at(cs, {"state", "running"});
      if (waiting && waiting->IsObject() && !str(*waiting, {"reason"}).empty()) {
        reason = str(*waiting, {"reason"});
      } else if (terminated && terminated->IsObject()) {
        const std::string r = str(*terminated, {"reason"});
        reason = r.empty() ? terminatedReason(*terminated, "") : r;
      } else if (boolean(cs, {"ready"}) && running && running->IsObject()) {
        hasRunning = true;
        ++ready;
      }
    }
    if (reason == "Completed" && hasRunning) reason = hasCondition(conditions, "Ready", "True") ? "Running" : "NotReady";
  }

  const bool deleting = at(pod, {"metadata", "deletionTimestamp"}) && !at(pod, {"metadata", "deletionTimestamp"})->IsNull();
  if (deleting && str(pod, {"status", "reason"}) == "NodeLost") {
    reason = "Unknown";
  } else if (deleting && phase != "Succeeded" && phase != "Failed") {
    reason = "Terminating";
  }

  std::string restarts = std::to_string(shown.count);
  if (shown.count != 0 && shown.last) restarts += " (" + humanDuration(now - *shown.last) + " ago)";

  std::string podIP;
  const rapidjson::Value& ips = arrayAt(pod, {"status", "podIPs"});
  podIP = ips.Size() > 0 ? str(ips[0], {"ip"}) : str(pod, {"status", "podIP"});
  std::string gates = "<none>";
  const rapidjson::Value& readinessGates = arrayAt(pod, {"spec", "readinessGates"});
  if (readinessGates.Size() > 0) {
    int trueConditions = 0;
    for (const auto& g : readinessGates.GetArray())
      if (hasCondition(conditions, str(g, {"conditionType"}), "True")) ++trueConditions;
    gates = std::to_string(trueConditions) + "/" + std::to_string(readinessGates.Size());
  }
  (void)empty;

  PrintedRow row;
  row.cells = {str(pod, {"metadata", "name"}),
               std::to_string(ready) + "/" + std::to_string(total),
               reason,
               restarts,
               ageSince(at(pod, {"metadata", "creationTimestamp"}), now),
               orNone(podIP),
               orNone(str(pod, {"spec", "nodeName"})),
               orNone(str(pod, {"status", "nominatedNodeName"})),
               gates};
  if (phase == "Succeeded")
    row.conditions_json = R"([{"type":"Completed","status":"True","reason":"Succeeded","message":"The pod has completed successfully."}])";
  if (phase == "Failed")
    row.conditions_json = R"([{"type":"Completed","status":"True","reason":"Failed","message":"The pod failed."}])";
  return row;
}

std::string nodeAddress(const rapidjson::Value& node, std::string_view type) {
  for (const auto& a : arrayAt(node, {"status", "addresses"}).GetArray())
    if (str(a, {"type"}) == type) return str(a, {"address"});
  return "<none>";
}

PrintedRow printNode(const rapidjson::Value& node, PrinterClock::time_point now) {
  std::vector<std::string> status;
  for (const auto& c : arrayAt(node, {"status", "conditions"}).GetArray()) {
    if (str(c, {"type"}) != "Ready") continue;
    status = {str(c, {"status"}) == "True" ? "Ready" : "NotReady"};  // the last Ready condition wins
  }
  if (status.empty()) status.push_back("Unknown");
  if (boolean(node, {"spec", "unschedulable"})) status.push_back("SchedulingDisabled");

  std::set<std::string> roles;
  if (const auto* labels = at(node, {"metadata", "labels"}); labels && labels->IsObject()) {
    constexpr std::string_view kRolePrefix = "node-role.kubernetes.io/";
    for (auto it = labels->MemberBegin(); it != labels->MemberEnd(); ++it) {
      const std::string_view k(it->name.GetString(), it->name.GetStringLength());
      const std::string v = it->value.IsString() ? it->value.GetString() : "";
      if (k.substr(0, kRolePrefix.size()) == kRolePrefix) {
        if (k.size() > kRolePrefix.size()) roles.insert(std::string(k.substr(kRolePrefix.size())));
      } else if (k == "kubernetes.io/role" && !v.empty()) {
        roles.insert(v);
      }
    }
  }
  auto unknownIfEmpty = [](std::string s) { return s.empty() ? std::string("<unknown>") : s; };
  PrintedRow row;
  row.cells = {str(node, {"metadata", "name"}),
               join(status, ","),
               roles.empty() ? std::string("<none>") : join(std::vector<std::string>(roles.begin(), roles.end()), ","),
               ageSince(at(node, {"metadata", "creationTimestamp"}), now),
               str(node, {"status", "nodeInfo", "kubeletVersion"}),
               nodeAddress(node, "InternalIP"),
               nodeAddress(node, "ExternalIP"),
               unknownIfEmpty(str(node, {"status", "nodeInfo", "osImage"})),
               unknownIfEmpty(str(node, {"status", "nodeInfo", "kernelVersion"})),
               unknownIfEmpty(str(node, {"status", "nodeInfo", "containerRuntimeVersion"}))};
  return row;
}

PrintedRow printEvent(const rapidjson::Value& ev, PrinterClock::time_point now) {
  const rapidjson::Value* firstTs = at(ev, {"firstTimestamp"});
  const bool firstZero = !time(ev, {"firstTimestamp"});
  std::string first = firstZero ? ageSince(at(ev, {"eventTime"}), now) : ageSince(firstTs, now);
  std::string last = time(ev, {"lastTimestamp"}) ? ageSince(at(ev, {"lastTimestamp"}), now) : first;
  int64_t count = integer(ev, {"count"});
  if (const auto* series = at(ev, {"series"}); series && series->IsObject()) {
    last = ageSince(at(*series, {"lastObservedTime"}), now);
    count = integer(*series, {"count"});
  } else if (count == 0) {
    count = 1;  // singleton events of the events.k8s.io API carry no count
  }
  std::string kind = str(ev, {"involvedObject", "kind"});
  std::transform(kind.begin(), kind.end(), kind.begin(), [](unsigned char c) { return std::tolower(c); });
  const std::string name = str(ev, {"involvedObject", "name"});
  const std::string target = name.empty() ? kind : kind + "/" + name;
  std::string component = str(ev, {"source", "component"});
  if (component.empty()) component = str(ev, {"reportingComponent"});
  std::string host = str(ev, {"source", "host"});
  if (host.empty()) host = str(ev, {"reportingInstance"});
  PrintedRow row;
  row.cells = {last,
               str(ev, {"type"}),
               str(ev, {"reason"}),
               target,
               str(ev, {"involvedObject", "fieldPath"}),
               host.empty() ? component : component + ", " + host,
               trimSpace(str(ev, {"message"})),
               first,
               count,
               str(ev, {"metadata", "name"})};
  return row;
}

// events.k8s.io/v1 Events print through the core printer after the same field
// mapping the apiserver's conversion to the internal Event applies.
PrintedRow printEventsV1(const rapidjson::Value& ev, PrinterClock::time_point now) {
  static constexpr std::pair<const char*, const char*> kRenames[] = {
      {"regarding", "involvedObject"},         {"note", "message"},
      {"deprecatedFirstTimestamp", "firstTimestamp"}, {"deprecatedLastTimestamp", "lastTimestamp"},
      {"deprecatedCount", "count"},            {"deprecatedSource", "source"},
      {"reportingController", "reportingComponent"}};
  rapidjson::Document core(rapidjson::kObjectType);
  auto& alloc = core.GetAllocator();
  if (ev.IsObject()) {
    for (auto it = ev.MemberBegin(); it != ev.MemberEnd(); ++it) {
      const char* name = it->name.GetString();
      for (const auto& [from, to] : kRenames)
        if (std::string_view(name) == from) name = to;
      core.AddMember(rapidjson::Value(name, alloc), rapidjson::Value(it->value, alloc), alloc);
    }
  }
  return printEvent(core, now);
}

}  // namespace

std::optional<TablePrinter> builtinTablePrinter(const ResourceDef& def) {
  auto columns = builtinColumns(def.group, def.resource);
  if (columns.empty()) return std::nullopt;
  const std::string& g = def.group;
  const std::string& r = def.resource;
  if (g.empty() && r == "pods") return TablePrinter{columns, printPod};
  if (g.empty() && r == "nodes") return TablePrinter{columns, printNode};
  if (g.empty() && r == "events") return TablePrinter{columns, printEvent};
  if (g == "events.k8s.io" && r == "events") return TablePrinter{columns, printEventsV1};
  if (auto print = simplePrinter(g, r)) return TablePrinter{columns, *print};
  if (auto print = workloadPrinter(g, r)) return TablePrinter{columns, *print};
  return std::nullopt;
}

}  // namespace testapi
