#include "tests/apiserver/media/media.h"

namespace testapi {
namespace {

constexpr std::string_view kAccepted = "application/json, application/yaml, application/vnd.kubernetes.protobuf";
constexpr std::string_view kAcceptedWatch =
    "application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch";

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

struct MediaRange {
  std::string_view type;
  std::string_view as, g, v;
};

MediaRange parseRange(std::string_view entry) {
  MediaRange m;
  size_t semi = entry.find(';');
  m.type = trim(entry.substr(0, semi));
  while (semi != std::string_view::npos) {
    size_t next = entry.find(';', semi + 1);
    auto param = trim(entry.substr(semi + 1, next == std::string_view::npos ? std::string_view::npos : next - semi - 1));
    auto eq = param.find('=');
    if (eq != std::string_view::npos) {
      auto k = trim(param.substr(0, eq)), val = trim(param.substr(eq + 1));
      if (k == "as") m.as = val;
      else if (k == "g") m.g = val;
      else if (k == "v") m.v = val;
    }
    semi = next;
  }
  return m;
}


}  // namespace

Result<OutputKind> negotiateOutput(std::string_view accept, bool is_list, bool is_watch) {
  if (trim(accept).empty()) return OutputKind::Object;
  bool wanted_metadata_mismatch = false;
  size_t pos = 0;
  while (pos <= accept.size()) {
    size_t comma = accept.find(',', pos);
    auto entry = accept.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
    pos = comma == std::string_view::npos ? accept.size() + 1 : comma + 1;
    auto m = parseRange(entry);
    bool json = m.type == "application/json" || m.type == "*/*" || m.type == "application/*";
    if (!json) continue;  // protobuf, yaml, cbor: not produced here
    if (m.as.empty()) return OutputKind::Object;
    if (m.as == "Table" && m.g == "meta.k8s.io" && (m.v == "v1" || m.v == "v1beta1")) return OutputKind::Table;
    if (m.g == "meta.k8s.io" && m.v == "v1") {
      if (m.as == "PartialObjectMetadata" && (!is_list || is_watch)) return OutputKind::PartialObjectMetadata;
      if (m.as == "PartialObjectMetadataList" && is_list && !is_watch) return OutputKind::PartialObjectMetadataList;
      if (m.as == "PartialObjectMetadata" || m.as == "PartialObjectMetadataList") wanted_metadata_mismatch = true;
    }
  }
  if (wanted_metadata_mismatch) {
    return ApiError{406, "NotAcceptable",
                    is_list ? "you requested PartialObjectMetadata, but the requested object is a list"
                            : "you requested PartialObjectMetadataList, but the requested object is not a list"};
  }
  return notAcceptable(is_watch ? kAcceptedWatch : kAccepted);
}

TableOptions tableOptionsFrom(const Query& query) {
  TableOptions o;
  if (auto it = query.find("includeObject"); it != query.end() && !it->second.empty()) o.include_object = it->second;
  return o;
}

Result<std::string> tableFor(const ResourceDef& def, const std::vector<std::string_view>& objects,
                             const TableOptions& opts, const ListMetaOut& meta) {
  return renderTable(def, objects, opts, meta, std::chrono::system_clock::now());
}
std::string partialObjectMetadataFor(std::string_view object_json) { return renderPartialObjectMetadata(object_json); }
std::string partialObjectMetadataListFor(const std::vector<std::string_view>& objects, const ListMetaOut& meta) {
  return renderPartialObjectMetadataList(objects, meta);
}

}  // namespace testapi
