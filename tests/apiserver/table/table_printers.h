#pragma once
// The server-side printers behind renderTable (N3): column definitions and row cells
// for the built-in types the test apiserver serves, after kube-apiserver's
// pkg/printers/internalversion (rendered with Wide, as the apiserver always does).
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <rapidjson/document.h>

#include "tests/apiserver/api_types.h"

namespace testapi {

using PrinterClock = std::chrono::system_clock;

struct TableColumn {
  std::string name;
  std::string type;
  std::string format;
  std::string description;
  int priority = 0;
};

// A cell as the printers produce it: strings, integers (int64 cells), booleans, or
// null for a CRD column whose path is missing.
using TableCell = std::variant<std::nullptr_t, std::string, int64_t, double, bool>;

struct PrintedRow {
  std::vector<TableCell> cells;
  std::string conditions_json;  // "" or a JSON array of TableRowCondition
};

struct TablePrinter {
  std::vector<TableColumn> columns;
  std::function<PrintedRow(const rapidjson::Value& object, PrinterClock::time_point now)> print;
};

// The printer of a built-in resource, or nullopt when the apiserver uses the default
// Name / Created At table for it.
std::optional<TablePrinter> builtinTablePrinter(const ResourceDef& def);
// The column definitions of those printers (table_columns.cpp).
std::vector<TableColumn> builtinColumns(std::string_view group, std::string_view resource);

extern const std::string_view kNameDescription;
extern const std::string_view kCreationTimestampDescription;

// k8s.io/apimachinery/pkg/util/duration.HumanDuration.
std::string humanDuration(std::chrono::nanoseconds d);
// RFC 3339 (with optional fraction and offset) as metav1.Time parses it.
std::optional<PrinterClock::time_point> parseRfc3339(std::string_view text);
// translateTimestampSince: "<unknown>" for a missing/zero time, else the age.
std::string ageSince(const rapidjson::Value* timestamp, PrinterClock::time_point now);

}  // namespace testapi
