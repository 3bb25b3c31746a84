// metav1.Table rendering (N3): validates includeObject, picks the printer (built-in,
// CRD additionalPrinterColumns with the CRD default Age column, or the generic
// Name / Created At), and writes the body as the apiserver's encoder does.
#include "tests/apiserver/media/go_json.h"
#include "tests/apiserver/media/rendering.h"
#include "tests/apiserver/status/status_util.h"
#include "tests/apiserver/table/table_printer_util.h"

#include <ctime>

namespace testapi {

namespace {

using tablejson::at;

// A parsed simple JSONPath such as ".spec.size" or ".status.conditions[0].type".
struct PathStep {
  std::string key;
  std::optional<size_t> index;
};

std::vector<PathStep> parseSimplePath(std::string_view path) {
  std::vector<PathStep> steps;
  size_t pos = 0;
  while (pos < path.size()) {
    if (path[pos] == '.') {
      ++pos;
      continue;
    }
    if (path[pos] == '[') {
      const size_t end = path.find(']', pos);
      if (end == std::string_view::npos) break;
      std::string_view inside = path.substr(pos + 1, end - pos - 1);
      if (!inside.empty() && (inside.front() == '\'' || inside.front() == '"')) {
        steps.push_back({std::string(inside.substr(1, inside.size() - 2)), std::nullopt});
      } else if (auto i = parseGoInt64(inside); i && *i >= 0) {
        steps.push_back({"", static_cast<size_t>(*i)});
      }
      pos = end + 1;
      continue;
    }
    size_t end = path.find_first_of(".[", pos);
    if (end == std::string_view::npos) end = path.size();
    steps.push_back({std::string(path.substr(pos, end - pos)), std::nullopt});
    pos = end;
  }
  return steps;
}

const rapidjson::Value* evalPath(const rapidjson::Value& obj, const std::vector<PathStep>& steps) {
  const rapidjson::Value* v = &obj;
  for (const auto& s : steps) {
    if (s.index) {
      if (!v->IsArray() || *s.index >= v->Size()) return nullptr;
      v = &(*v)[static_cast<rapidjson::SizeType>(*s.index)];
    } else {
      if (!v->IsObject()) return nullptr;
      auto it = v->FindMember(rapidjson::StringRef(s.key.data(), s.key.size()));
      if (it == v->MemberEnd()) return nullptr;
      v = &it->value;
    }
  }
  return v;
}

// cellForJSONValue of the CRD table convertor: the column type decides the cell.
TableCell crdCell(const std::string& type, const rapidjson::Value* v, PrinterClock::time_point now) {
  if (!v || v->IsNull()) return nullptr;
  if (type == "string") {
    if (v->IsString()) return std::string(v->GetString(), v->GetStringLength());
    std::string text;  // JSONPath prints non-strings as JSON
    appendGoJson(text, *v);
    return text;
  }
  if (type == "integer" && v->IsNumber()) return v->IsInt64() ? v->GetInt64() : static_cast<int64_t>(v->GetDouble());
  if (type == "number" && v->IsNumber()) return v->GetDouble();
  if (type == "boolean" && v->IsBool()) return v->GetBool();
  if (type == "date" && v->IsString()) {
    if (!parseRfc3339(std::string_view(v->GetString(), v->GetStringLength()))) return std::string("<invalid>");
    return ageSince(v, now);
  }
  return nullptr;
}

TablePrinter customResourcePrinter(const ResourceDef& def) {
  std::vector<PrinterColumn> cols = def.printer_columns;
  if (cols.empty())  // the CRD handler serves an Age column when none is declared
    cols.push_back(PrinterColumn{"Age", "date", ".metadata.creationTimestamp",
                                 std::string(kCreationTimestampDescription), 0});
  TablePrinter p;
  p.columns.push_back(TableColumn{"Name", "string", "name", std::string(kNameDescription), 0});
  std::vector<std::vector<PathStep>> paths;
  for (const auto& c : cols) {
    std::string desc = c.description.empty()
                           ? "Custom resource definition column (in JSONPath format): " + c.json_path
                           : c.description;
    p.columns.push_back(TableColumn{c.name, c.type, "", desc, c.priority});
    paths.push_back(parseSimplePath(c.json_path));
  }
  p.print = [cols, paths](const rapidjson::Value& obj, PrinterClock::time_point now) {
    PrintedRow row;
    row.cells.push_back(tablejson::str(obj, {"metadata", "name"}));
    for (size_t i = 0; i < cols.size(); ++i) row.cells.push_back(crdCell(cols[i].type, evalPath(obj, paths[i]), now));
    return row;
  };
  return p;
}

// rest.DefaultTableConvertor: Name and the creation time in RFC 3339.
TablePrinter defaultPrinter() {
  TablePrinter p;
  p.columns = {TableColumn{"Name", "string", "name", std::string(kNameDescription), 0},
               TableColumn{"Created At", "date", "", std::string(kCreationTimestampDescription), 0}};
  p.print = [](const rapidjson::Value& obj, PrinterClock::time_point) {
    PrintedRow row;
    row.cells.push_back(tablejson::str(obj, {"metadata", "name"}));
    std::string created = "0001-01-01T00:00:00Z";
    if (auto t = tablejson::time(obj, {"metadata", "creationTimestamp"})) {
      const std::time_t secs = PrinterClock::to_time_t(*t);
      std::tm tm{};
      gmtime_r(&secs, &tm);
      char buf[32];
      std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
      created = buf;
    }
    row.cells.push_back(created);
    return row;
  };
  return p;
}

void appendCell(std::string& out, const TableCell& cell) {
  if (std::holds_alternative<std::nullptr_t>(cell)) out += "null";
  else if (auto* s = std::get_if<std::string>(&cell)) appendJsonString(out, *s);
  else if (auto* i = std::get_if<int64_t>(&cell)) out += std::to_string(*i);
  else if (auto* b = std::get_if<bool>(&cell)) out += *b ? "true" : "false";
  else appendGoJson(out, rapidjson::Value(std::get<double>(cell)));
}

void appendColumns(std::string& out, const std::vector<TableColumn>& columns) {
  out += '[';
  for (size_t i = 0; i < columns.size(); ++i) {
    const auto& c = columns[i];
    if (i) out += ',';
    out += "{\"name\":" + jsonString(c.name) + ",\"type\":" + jsonString(c.type) + ",\"format\":" +
           jsonString(c.format) + ",\"description\":" + jsonString(c.description) +
           ",\"priority\":" + std::to_string(c.priority) + "}";
  }
  out += ']';
}

// The full object as ConvertToVersion leaves it: kind and apiVersion first; a custom
// resource is an Unstructured map, keys sorted.
void appendFullObject(std::string& out, const ResourceDef& def, const rapidjson::Value& obj) {
  if (!def.builtin) return appendUnstructuredJson(out, obj);
  out += "{\"kind\":" + jsonString(def.kind) + ",\"apiVersion\":" + jsonString(def.groupVersion());
  for (auto it = obj.MemberBegin(); it != obj.MemberEnd(); ++it) {
    const std::string_view key(it->name.GetString(), it->name.GetStringLength());
    if (key == "kind" || key == "apiVersion") continue;
    out += ',';
    appendJsonString(out, key);
    out += ':';
    appendGoJson(out, it->value);
  }
  out += '}';
}

}  // namespace

Result<std::string> renderTable(const ResourceDef& def, const std::vector<std::string_view>& objects_json,
                                const TableOptions& options, const ListMetaOut& meta, PrinterClock::time_point now) {
  const std::string& include = options.include_object;
  if (include != "" && include != "Metadata" && include != "Object" && include != "None")
    return badRequest("Unable to convert to Table as requested: " +
                      FieldError::invalid("includeObject", include, "must be 'Metadata', 'Object', 'None', or empty")
                          .error());

  TablePrinter printer;
  if (!def.builtin) {
    printer = customResourcePrinter(def);
  } else if (auto builtin = builtinTablePrinter(def)) {
    printer = std::move(*builtin);
  } else {
    printer = defaultPrinter();
  }

  std::string out = R"({"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":)";
  out += listMetaJson(meta);
  out += ",\"columnDefinitions\":";
  if (options.column_definitions) {
    appendColumns(out, printer.columns);
  } else {
    out += "null";
  }
  out += ",\"rows\":[";
  for (size_t i = 0; i < objects_json.size(); ++i) {
    rapidjson::Document doc;
    doc.Parse<rapidjson::kParseFullPrecisionFlag>(objects_json[i].data(), objects_json[i].size());
    if (doc.HasParseError() || !doc.IsObject()) doc.SetObject();
    const PrintedRow row = printer.print(doc, now);
    if (i) out += ',';
    out += "{\"cells\":[";
    for (size_t c = 0; c < row.cells.size(); ++c) {
      if (c) out += ',';
      appendCell(out, row.cells[c]);
    }
    out += ']';
    if (!row.conditions_json.empty()) out += ",\"conditions\":" + row.conditions_json;
    out += ",\"object\":";
    if (include == "None") {
      out += "null";
    } else if (include == "Object") {
      appendFullObject(out, def, doc);
    } else {
      out += renderPartialObjectMetadata(objects_json[i]);
    }
    out += '}';
  }
  out += "]}";
  return out;
}

}  // namespace testapi
