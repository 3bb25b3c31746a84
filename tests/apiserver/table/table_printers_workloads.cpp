// Row printers for workload controllers (ReplicationControllers, StatefulSets,
// DaemonSets, Jobs) and ServiceAccounts, after pkg/printers/internalversion.
#include "tests/apiserver/table/table_printer_util.h"

namespace testapi::tablejson {

namespace {

std::string name(const rapidjson::Value& o) { return str(o, {"metadata", "name"}); }
std::string age(const rapidjson::Value& o, PrinterClock::time_point now) {
  return ageSince(at(o, {"metadata", "creationTimestamp"}), now);
}

// metav1.FormatLabelSelector: "<error>" for a bad operator, "<none>" when empty.
std::string formatLabelSelector(const rapidjson::Value* selector) {
  auto s = labelSelectorString(selector);
  if (!s) return "<error>";
  return s->empty() ? "<none>" : *s;
}

// hasJobCondition: the first condition of the type decides.
bool jobCondition(const rapidjson::Value& job, std::string_view type) {
  for (const auto& c : arrayAt(job, {"status", "conditions"}).GetArray())
    if (str(c, {"type"}) == type) return str(c, {"status"}) == "True";
  return false;
}

PrintedRow printReplicationController(const rapidjson::Value& rc, PrinterClock::time_point now) {
  auto [names, images] = containerCells(rc);
  return {{name(rc), integer(rc, {"spec", "replicas"}, 1), integer(rc, {"status", "replicas"}),
           integer(rc, {"status", "readyReplicas"}), age(rc, now), names, images,
           formatLabels(at(rc, {"spec", "selector"}))},
          ""};
}

PrintedRow printStatefulSet(const rapidjson::Value& ss, PrinterClock::time_point now) {
  auto [names, images] = containerCells(ss);
  return {{name(ss),
           std::to_string(integer(ss, {"status", "readyReplicas"})) + "/" +
               std::to_string(integer(ss, {"spec", "replicas"}, 1)),
           age(ss, now), names, images},
          ""};
}

PrintedRow printDaemonSet(const rapidjson::Value& ds, PrinterClock::time_point now) {
  auto [names, images] = containerCells(ds);
  return {{name(ds), integer(ds, {"status", "desiredNumberScheduled"}), integer(ds, {"status", "currentNumberScheduled"}),
           integer(ds, {"status", "numberReady"}), integer(ds, {"status", "updatedNumberScheduled"}),
           integer(ds, {"status", "numberAvailable"}), formatLabels(at(ds, {"spec", "template", "spec", "nodeSelector"})),
           age(ds, now), names, images, formatLabelSelector(at(ds, {"spec", "selector"}))},
          ""};
}

PrintedRow printJob(const rapidjson::Value& job, PrinterClock::time_point now) {
  const int64_t succeeded = integer(job, {"status", "succeeded"});
  std::string completions;
  if (const auto* c = at(job, {"spec", "completions"}); c && c->IsInt64()) {
    completions = std::to_string(succeeded) + "/" + std::to_string(c->GetInt64());
  } else {
    const int64_t parallelism = integer(job, {"spec", "parallelism"});
    completions = std::to_string(succeeded) + "/1" + (parallelism > 1 ? " of " + std::to_string(parallelism) : "");
  }
  std::string duration;
  if (auto start = time(job, {"status", "startTime"})) {
    auto end = time(job, {"status", "completionTime"});
    duration = humanDuration((end ? *end : now) - *start);
  }
  std::string status = "Running";
  const auto* deleted = at(job, {"metadata", "deletionTimestamp"});
  if (jobCondition(job, "Complete")) status = "Complete";
  else if (jobCondition(job, "Failed")) status = "Failed";
  else if (deleted && !deleted->IsNull()) status = "Terminating";
  else if (jobCondition(job, "Suspended")) status = "Suspended";
  else if (jobCondition(job, "FailureTarget")) status = "FailureTarget";
  auto [names, images] = containerCells(job);
  return {{name(job), status, completions, duration, age(job, now), names, images,
           formatLabelSelector(at(job, {"spec", "selector"}))},
          ""};
}

}  // namespace

std::optional<RowPrinter> workloadPrinter(std::string_view group, std::string_view resource) {
  if (group.empty() && resource == "replicationcontrollers") return RowPrinter(printReplicationController);
  if (group.empty() && resource == "serviceaccounts")
    return RowPrinter([](const rapidjson::Value& o, PrinterClock::time_point now) {
      return PrintedRow{{name(o), static_cast<int64_t>(arrayAt(o, {"secrets"}).Size()), age(o, now)}, ""};
    });
  if (group == "apps" && resource == "statefulsets") return RowPrinter(printStatefulSet);
  if (group == "apps" && resource == "daemonsets") return RowPrinter(printDaemonSet);
  if (group == "batch" && resource == "jobs") return RowPrinter(printJob);
  return std::nullopt;
}

}  // namespace testapi::tablejson
