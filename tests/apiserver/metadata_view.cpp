// PartialObjectMetadata and PartialObjectMetadataList (N4): the object's metadata
// under the meta.k8s.io/v1 envelope, plus the Go-compatible JSON writer the
// renderings share.
#include "go_json.h"
#include "rendering.h"
#include "status_util.h"

#include <charconv>
#include <cmath>

namespace testapi {

namespace {

// strconv.FormatFloat(f, 'g'-like, -1, 64) as encoding/json uses it: plain decimal
// unless the exponent is < -6 or >= 21.
void appendGoFloat(std::string& out, double d) {
  if (std::isnan(d) || std::isinf(d)) {
    out += "null";  // Go refuses these; null keeps the body parseable
    return;
  }
  const double a = std::fabs(d);
  char buf[64];
  std::to_chars_result r;
  if (a != 0 && (a < 1e-6 || a >= 1e21)) {
    r = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
    std::string s(buf, r.ptr);
    // Go prints "e+21" (two digits at least) but trims "e-07" to "e-7".
    const size_t e = s.find('e');
    std::string mant = s.substr(0, e);
    std::string exp = s.substr(e + 1);
    const char sign = exp[0] == '-' ? '-' : '+';
    if (exp[0] == '-' || exp[0] == '+') exp = exp.substr(1);
    while (exp.size() > 1 && exp[0] == '0') exp = exp.substr(1);
    if (sign == '+' && exp.size() < 2) exp = "0" + exp;
    out += mant + "e" + sign + exp;
    return;
  }
  r = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::fixed);
  out.append(buf, r.ptr);
}

const rapidjson::Value* metadataOf(const rapidjson::Document& doc) {
  if (!doc.IsObject()) return nullptr;
  auto it = doc.FindMember("metadata");
  return it == doc.MemberEnd() ? nullptr : &it->value;
}

void appendPartial(std::string& out, std::string_view object_json) {
  rapidjson::Document doc;
  doc.Parse(object_json.data(), object_json.size());
  out += R"({"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":)";
  const rapidjson::Value* meta = doc.HasParseError() ? nullptr : metadataOf(doc);
  if (meta && meta->IsObject()) {
    appendGoJson(out, *meta);
  } else {
    out += "{}";
  }
  out += '}';
}

}  // namespace

void appendGoJson(std::string& out, const rapidjson::Value& v) {
  switch (v.GetType()) {
    case rapidjson::kNullType: out += "null"; break;
    case rapidjson::kFalseType: out += "false"; break;
    case rapidjson::kTrueType: out += "true"; break;
    case rapidjson::kStringType: appendJsonString(out, std::string_view(v.GetString(), v.GetStringLength())); break;
    case rapidjson::kNumberType:
      if (v.IsInt64()) {
        out += std::to_string(v.GetInt64());
      } else if (v.IsUint64()) {
        out += std::to_string(v.GetUint64());
      } else {
        appendGoFloat(out, v.GetDouble());
      }
      break;
    case rapidjson::kObjectType: {
      out += '{';
      bool first = true;
      for (auto it = v.MemberBegin(); it != v.MemberEnd(); ++it) {
        if (!first) out += ',';
        first = false;
        appendJsonString(out, std::string_view(it->name.GetString(), it->name.GetStringLength()));
        out += ':';
        appendGoJson(out, it->value);
      }
      out += '}';
      break;
    }
    case rapidjson::kArrayType: {
      out += '[';
      bool first = true;
      for (const auto& item : v.GetArray()) {
        if (!first) out += ',';
        first = false;
        appendGoJson(out, item);
      }
      out += ']';
      break;
    }
  }
}

std::string listMetaJson(const ListMetaOut& meta) {
  std::string out = "{";
  bool first = true;
  auto sep = [&] {
    if (!first) out += ',';
    first = false;
  };
  if (!meta.resource_version.empty()) {
    sep();
    out += "\"resourceVersion\":" + jsonString(meta.resource_version);
  }
  if (!meta.continue_token.empty()) {
    sep();
    out += "\"continue\":" + jsonString(meta.continue_token);
  }
  if (meta.remaining_item_count) {
    sep();
    out += "\"remainingItemCount\":" + std::to_string(*meta.remaining_item_count);
  }
  return out + "}";
}

std::string renderPartialObjectMetadata(std::string_view object_json) {
  std::string out;
  appendPartial(out, object_json);
  return out;
}

std::string renderPartialObjectMetadataList(const std::vector<std::string_view>& objects_json,
                                            const ListMetaOut& meta) {
  std::string out = R"({"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":)";
  out += listMetaJson(meta);
  // asPartialObjectMetadataList appends to a nil Items slice, and Items has no
  // omitempty: an empty conversion is "items":null whether the list came from the
  // watch cache or etcd (an ordinary empty list keeps "items":[], L1).
  if (objects_json.empty()) return out + ",\"items\":null}";
  out += ",\"items\":[";
  for (size_t i = 0; i < objects_json.size(); ++i) {
    if (i) out += ',';
    appendPartial(out, objects_json[i]);
  }
  return out + "]}";
}

}  // namespace testapi
