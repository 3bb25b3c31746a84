// PartialObjectMetadata and PartialObjectMetadataList (N4): the object's metadata,
// typed as metav1.ObjectMeta, under the meta.k8s.io/v1 envelope; plus the
// Go-compatible JSON writers the renderings and the custom-resource codec share.
#include "tests/apiserver/media/go_json.h"
#include "tests/apiserver/media/rendering.h"
#include "tests/apiserver/status/status_util.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>
#include <vector>

namespace testapi {

namespace {

// strconv.FormatFloat(f, 'f' or 'e', -1, 64) as encoding/json uses it: plain decimal
// unless the exponent is < -6 or >= 21. Both forms print the shortest digits that
// read back as `d`, padded with zeros: 2^64 is 18446744073709552000, not its exact
// 18446744073709551616.
void appendGoFloat(std::string& out, double d) {
  if (std::isnan(d) || std::isinf(d)) {
    out += "null";  // Go refuses these; null keeps the body parseable
    return;
  }
  const double a = std::fabs(d);
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  const std::string s(buf, r.ptr);  // [-]d[.ddd]e±XX, shortest round-trip digits
  const size_t e = s.find('e');
  std::string mant = s.substr(0, e);
  std::string exp = s.substr(e + 1);
  const char sign = exp[0] == '-' ? '-' : '+';
  if (exp[0] == '-' || exp[0] == '+') exp = exp.substr(1);
  while (exp.size() > 1 && exp[0] == '0') exp = exp.substr(1);
  if (a != 0 && (a < 1e-6 || a >= 1e21)) {
    // Go prints "e+21" (two digits at least) but trims "e-07" to "e-7".
    if (sign == '+' && exp.size() < 2) exp = "0" + exp;
    out += mant + "e" + sign + exp;
    return;
  }
  // 'f': the same digits laid out around the decimal point.
  if (mant[0] == '-') {
    out += '-';
    mant = mant.substr(1);
  }
  std::string digits;
  for (char c : mant)
    if (c != '.') digits += c;
  const int x = (sign == '-' ? -1 : 1) * std::stoi(exp);  // d = digits[0].digits[1..] * 10^x
  if (x < 0) {
    out += "0.";
    out.append(static_cast<size_t>(-x - 1), '0');
    out += digits;
  } else if (static_cast<size_t>(x) + 1 >= digits.size()) {
    out += digits;
    out.append(static_cast<size_t>(x) + 1 - digits.size(), '0');
  } else {
    out += digits.substr(0, static_cast<size_t>(x) + 1);
    out += '.';
    out += digits.substr(static_cast<size_t>(x) + 1);
  }
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
    appendTypedObjectMeta(out, *meta);
  } else {
    out += "{}";
  }
  out += '}';
}

std::string_view keyOf(const rapidjson::Value::Member& m) { return {m.name.GetString(), m.name.GetStringLength()}; }

// Writes `"key":` after a separator when needed.
void appendKey(std::string& out, bool& first, std::string_view key) {
  if (!first) out += ',';
  first = false;
  appendJsonString(out, key);
  out += ':';
}

const rapidjson::Value* field(const rapidjson::Value& obj, std::string_view key) {
  auto it = obj.FindMember(rapidjson::StringRef(key.data(), key.size()));
  return it == obj.MemberEnd() ? nullptr : &it->value;
}

// A string field with `json:",omitempty"` (getNestedString: a non-string reads as "").
void appendStringField(std::string& out, bool& first, const rapidjson::Value& obj, std::string_view key) {
  const rapidjson::Value* v = field(obj, key);
  if (!v || !v->IsString() || v->GetStringLength() == 0) return;
  appendKey(out, first, key);
  appendJsonString(out, {v->GetString(), v->GetStringLength()});
}

// A Go map's members in encoding order: keys sorted with strings.Compare (byte-wise,
// as string_view compares), a repeated key keeping its last value as decoding into a
// map does.
std::vector<const rapidjson::Value::Member*> mapMembers(const rapidjson::Value& obj) {
  std::vector<const rapidjson::Value::Member*> members;
  members.reserve(obj.MemberCount());
  for (auto it = obj.MemberBegin(); it != obj.MemberEnd(); ++it) members.push_back(&*it);
  std::stable_sort(members.begin(), members.end(), [](auto* a, auto* b) { return keyOf(*a) < keyOf(*b); });
  std::vector<const rapidjson::Value::Member*> out;
  out.reserve(members.size());
  for (size_t i = 0; i < members.size(); ++i)
    if (i + 1 == members.size() || keyOf(*members[i]) != keyOf(*members[i + 1])) out.push_back(members[i]);
  return out;
}

// labels / annotations: NestedNullCoercingStringMap (null values read as "", any other
// non-string drops the map), then a Go map: sorted keys, omitted when empty.
void appendStringMapField(std::string& out, bool& first, const rapidjson::Value& obj, std::string_view key) {
  const rapidjson::Value* v = field(obj, key);
  if (!v || !v->IsObject() || v->MemberCount() == 0) return;
  for (const auto& m : v->GetObject())
    if (!m.value.IsString() && !m.value.IsNull()) return;
  appendKey(out, first, key);
  out += '{';
  bool inner_first = true;
  for (const auto* m : mapMembers(*v)) {
    appendKey(out, inner_first, keyOf(*m));
    appendJsonString(out, m->value.IsString() ? std::string_view(m->value.GetString(), m->value.GetStringLength())
                                              : std::string_view());
  }
  out += '}';
}

// metav1.OwnerReference: apiVersion, kind, name and uid always; the *bool fields when
// they hold a bool (extractOwnerReference).
void appendOwnerReference(std::string& out, const rapidjson::Value& ref) {
  out += '{';
  bool first = true;
  for (std::string_view k : {"apiVersion", "kind", "name", "uid"}) {
    const rapidjson::Value* v = field(ref, k);
    appendKey(out, first, k);
    appendJsonString(out, v && v->IsString() ? std::string_view(v->GetString(), v->GetStringLength()) : "");
  }
  for (std::string_view k : {"controller", "blockOwnerDeletion"}) {
    const rapidjson::Value* v = field(ref, k);
    if (!v || !v->IsBool()) continue;
    appendKey(out, first, k);
    out += v->GetBool() ? "true" : "false";
  }
  out += '}';
}

// A metav1.Time read from `s` with time.Parse(time.RFC3339, s) and written as
// Time.MarshalJSON writes it: UTC, whole seconds, "" for the zero time. nullopt when it
// does not parse. Parse falls back from its strict fast path to the layout parser, so
// an hour may have one digit, the fraction may follow a ',' and the zone offset may go
// up to +24:60.
std::optional<std::string> typedTime(std::string_view s) {
  size_t pos = 0;
  bool ok = true;
  // `n` digits (n < 0: one or two) within [lo, hi].
  auto num = [&](int n, int lo, int hi) {
    int x = 0, got = 0;
    const int want = n < 0 ? 2 : n;
    while (got < want && pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
      x = x * 10 + (s[pos++] - '0');
      ++got;
    }
    if (got == 0 || (n > 0 && got != n) || x < lo || x > hi) ok = false;
    return x;
  };
  auto lit = [&](char c) {
    if (pos < s.size() && s[pos] == c) {
      ++pos;
    } else {
      ok = false;
    }
  };
  const int year = num(4, 0, 9999);
  lit('-');
  const int month = num(2, 1, 12);
  lit('-');
  if (!ok) return std::nullopt;
  const unsigned last_day = static_cast<unsigned>(
      (std::chrono::year(year) / std::chrono::month(static_cast<unsigned>(month)) / std::chrono::last).day());
  const int day = num(2, 1, static_cast<int>(last_day));
  lit('T');
  const int hour = num(-1, 0, 23);
  lit(':');
  const int minute = num(2, 0, 59);
  lit(':');
  const int second = num(2, 0, 59);
  if (!ok) return std::nullopt;
  bool fraction = false;  // a non-zero nanosecond part
  if (pos + 1 < s.size() && (s[pos] == '.' || s[pos] == ',') && s[pos + 1] >= '0' && s[pos + 1] <= '9') {
    for (size_t n = 1; pos + n < s.size() && s[pos + n] >= '0' && s[pos + n] <= '9'; ++n)
      fraction |= n <= 9 && s[pos + n] != '0';
    while (++pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
    }
  }
  int offset = 0;
  if (pos < s.size() && s[pos] == 'Z') {
    ++pos;
  } else if (pos < s.size() && (s[pos] == '+' || s[pos] == '-')) {
    const int sign = s[pos++] == '-' ? -1 : 1;
    const int oh = num(2, 0, 24);
    lit(':');
    const int om = num(2, 0, 60);
    offset = sign * (oh * 3600 + om * 60);
  } else {
    ok = false;
  }
  if (!ok || pos != s.size()) return std::nullopt;
  using namespace std::chrono;
  const sys_seconds t = sys_days(std::chrono::year(year) / std::chrono::month(static_cast<unsigned>(month)) /
                                 std::chrono::day(static_cast<unsigned>(day))) +
                        hours(hour) + minutes(minute) + seconds(second) - seconds(offset);
  if (t == sys_days(std::chrono::year(1) / January / 1) && !fraction) return std::string();
  const auto midnight = floor<days>(t);
  const year_month_day ymd(midnight);
  const hh_mm_ss hms(t - midnight);
  const int y = static_cast<int>(ymd.year());
  char buf[48];
  std::snprintf(buf, sizeof buf, "%s%04d-%02u-%02uT%02d:%02d:%02dZ", y < 0 ? "-" : "", y < 0 ? -y : y,
                static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()),
                static_cast<int>(hms.hours().count()), static_cast<int>(hms.minutes().count()),
                static_cast<int>(hms.seconds().count()));
  return std::string(buf);
}

// creationTimestamp / deletionTimestamp: the unstructured getters read the string with
// Time.UnmarshalQueryParameter, ignoring its error, and both fields drop a zero time.
void appendTimeField(std::string& out, bool& first, const rapidjson::Value& meta, std::string_view key) {
  const rapidjson::Value* v = field(meta, key);
  if (!v || !v->IsString()) return;
  auto t = typedTime({v->GetString(), v->GetStringLength()});
  if (!t || t->empty()) return;
  appendKey(out, first, key);
  appendJsonString(out, *t);
}

// metav1.ManagedFieldsEntry, converted from the unstructured entry (FromUnstructured):
// nullopt when that fails (a field of the wrong type, a time that does not parse), in
// which case GetManagedFields reads none at all. Every field is omitempty; a zero time
// is "null"; fieldsV1 is raw JSON as stored (a custom resource's was stored as a sorted
// map, which is what json.Marshal of it gives).
std::optional<std::string> typedManagedFieldsEntry(const rapidjson::Value& entry) {
  std::string out = "{";
  bool first = true;
  auto str = [&](std::string_view k) {
    const rapidjson::Value* v = field(entry, k);
    if (!v || v->IsNull()) return true;
    if (!v->IsString()) return false;
    if (v->GetStringLength() == 0) return true;
    appendKey(out, first, k);
    appendJsonString(out, {v->GetString(), v->GetStringLength()});
    return true;
  };
  if (!str("manager") || !str("operation") || !str("apiVersion")) return std::nullopt;
  if (const rapidjson::Value* v = field(entry, "time"); v && !v->IsNull()) {
    if (!v->IsString()) return std::nullopt;
    auto t = typedTime({v->GetString(), v->GetStringLength()});
    if (!t) return std::nullopt;
    appendKey(out, first, "time");
    if (t->empty()) {
      out += "null";
    } else {
      appendJsonString(out, *t);
    }
  }
  if (!str("fieldsType")) return std::nullopt;
  if (const rapidjson::Value* v = field(entry, "fieldsV1"); v && !v->IsNull()) {
    appendKey(out, first, "fieldsV1");
    appendGoJson(out, *v);
  }
  if (!str("subresource")) return std::nullopt;
  return out + "}";
}

bool allOf(const rapidjson::Value& array, bool (rapidjson::Value::*is)() const) {
  for (const auto& e : array.GetArray())
    if (!(e.*is)()) return false;
  return true;
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

void appendUnstructuredJson(std::string& out, const rapidjson::Value& v) {
  switch (v.GetType()) {
    case rapidjson::kNumberType:
      // An integer literal beyond int64 (rapidjson's uint64) is a float64 to Go.
      if (v.IsInt64()) {
        out += std::to_string(v.GetInt64());
      } else if (v.GetDouble() == 0) {
        out += '0';  // -0 is written "-0", which reads back from etcd as the integer 0
      } else {
        appendGoFloat(out, v.GetDouble());
      }
      return;
    case rapidjson::kObjectType: {
      out += '{';
      bool first = true;
      for (const auto* m : mapMembers(v)) {
        appendKey(out, first, keyOf(*m));
        appendUnstructuredJson(out, m->value);
      }
      out += '}';
      return;
    }
    case rapidjson::kArrayType: {
      out += '[';
      bool first = true;
      for (const auto& item : v.GetArray()) {
        if (!first) out += ',';
        first = false;
        appendUnstructuredJson(out, item);
      }
      out += ']';
      return;
    }
    default:
      appendGoJson(out, v);
  }
}

void appendTypedObjectMeta(std::string& out, const rapidjson::Value& meta) {
  out += '{';
  bool first = true;
  for (std::string_view k : {"name", "generateName", "namespace", "selfLink", "uid", "resourceVersion"})
    appendStringField(out, first, meta, k);
  if (const rapidjson::Value* v = field(meta, "generation"); v && v->IsInt64() && v->GetInt64() != 0) {
    appendKey(out, first, "generation");
    out += std::to_string(v->GetInt64());
  }
  appendTimeField(out, first, meta, "creationTimestamp");
  appendTimeField(out, first, meta, "deletionTimestamp");
  if (const rapidjson::Value* v = field(meta, "deletionGracePeriodSeconds"); v && v->IsInt64()) {
    appendKey(out, first, "deletionGracePeriodSeconds");  // *int64: kept even when 0
    out += std::to_string(v->GetInt64());
  }
  appendStringMapField(out, first, meta, "labels");
  appendStringMapField(out, first, meta, "annotations");
  // Each list getter reads nothing when one element has the wrong type.
  if (const rapidjson::Value* v = field(meta, "ownerReferences");
      v && v->IsArray() && !v->Empty() && allOf(*v, &rapidjson::Value::IsObject)) {
    appendKey(out, first, "ownerReferences");
    out += '[';
    for (rapidjson::SizeType i = 0; i < v->Size(); ++i) {
      if (i) out += ',';
      appendOwnerReference(out, (*v)[i]);
    }
    out += ']';
  }
  if (const rapidjson::Value* v = field(meta, "finalizers");
      v && v->IsArray() && !v->Empty() && allOf(*v, &rapidjson::Value::IsString)) {
    appendKey(out, first, "finalizers");
    appendGoJson(out, *v);
  }
  if (const rapidjson::Value* v = field(meta, "managedFields");
      v && v->IsArray() && !v->Empty() && allOf(*v, &rapidjson::Value::IsObject)) {
    std::string entries = "[";
    bool valid = true;
    for (rapidjson::SizeType i = 0; valid && i < v->Size(); ++i) {
      auto e = typedManagedFieldsEntry((*v)[i]);
      valid = e.has_value();
      if (i) entries += ',';
      if (e) entries += *e;
    }
    if (valid) {
      appendKey(out, first, "managedFields");
      out += entries + "]";
    }
  }
  out += '}';
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
