#pragma once
// Small readers over stored JSON shared by the row printers: a missing member reads
// as the Go zero value, as it does after decoding into the typed struct.
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "tests/apiserver/table/table_printers.h"

namespace testapi::tablejson {

const rapidjson::Value* at(const rapidjson::Value& obj, std::initializer_list<const char*> path);
std::string str(const rapidjson::Value& obj, std::initializer_list<const char*> path);
int64_t integer(const rapidjson::Value& obj, std::initializer_list<const char*> path, int64_t fallback = 0);
bool boolean(const rapidjson::Value& obj, std::initializer_list<const char*> path);
std::optional<PrinterClock::time_point> time(const rapidjson::Value& obj, std::initializer_list<const char*> path);
// The array at `path`, or a shared empty array.
const rapidjson::Value& arrayAt(const rapidjson::Value& obj, std::initializer_list<const char*> path);
const rapidjson::Value& emptyArray();

std::string orNone(std::string s);  // "" -> "<none>"
std::string join(const std::vector<std::string>& parts, std::string_view sep);
std::string trimSpace(std::string s);
// labels.FormatLabels: sorted "k=v,k2=v2", "<none>" when empty.
std::string formatLabels(const rapidjson::Value* map);
// metav1.LabelSelectorAsSelector(...).String(); nullopt for an invalid operator.
std::optional<std::string> labelSelectorString(const rapidjson::Value* selector);

// Row printers with no type-specific state (configmaps, secrets, namespaces,
// services, endpoints, deployments, replicasets).
using RowPrinter = std::function<PrintedRow(const rapidjson::Value&, PrinterClock::time_point)>;
std::optional<RowPrinter> simplePrinter(std::string_view group, std::string_view resource);
// Workload controllers and service accounts (table_printers_workloads.cpp).
std::optional<RowPrinter> workloadPrinter(std::string_view group, std::string_view resource);
// layoutContainerCells over spec.template.spec.containers: names and images, comma-joined.
std::pair<std::string, std::string> containerCells(const rapidjson::Value& obj);

}  // namespace testapi::tablejson
