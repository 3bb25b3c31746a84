// Strategic merge patch for built-in types, without the Go struct tags: objects merge
// like a merge patch, lists are replaced except the well-known lists upstream marks
// patchStrategy=merge (merged by their patchMergeKey, or as a set for primitives).
// Directives supported: $patch (replace/delete, on maps and list items),
// $retainKeys, $deleteFromPrimitiveList/<f>, $setElementOrder/<f>.
// apply-patch+yaml reuses the same merge, which is what server-side apply produces
// for a single field manager.
#include "tests/apiserver/patch/patch_internal.h"
#include "tests/apiserver/status/status_util.h"

#include <cstdlib>
#include <yaml-cpp/yaml.h>

namespace testapi {

namespace {

using Allocator = rapidjson::Document::AllocatorType;

constexpr std::string_view kDeleteFromPrimitiveList = "$deleteFromPrimitiveList/";
constexpr std::string_view kSetElementOrder = "$setElementOrder/";

std::string_view nameOf(const rapidjson::Value& v) { return {v.GetString(), v.GetStringLength()}; }

const rapidjson::Value* field(const rapidjson::Value& obj, std::string_view name) {
  if (!obj.IsObject()) return nullptr;
  auto it = obj.FindMember(rapidjson::StringRef(name.data(), name.size()));
  return it == obj.MemberEnd() ? nullptr : &it->value;
}

bool anyItemHas(const rapidjson::Value& list, const char* key) {
  if (!list.IsArray()) return false;
  for (const auto& item : list.GetArray())
    if (field(item, key)) return true;
  return false;
}

// The patchMergeKey of a list field ("" = replace; "*" = merge primitives as a set).
std::string mergeKeyFor(std::string_view name, const rapidjson::Value* original, const rapidjson::Value& patch) {
  if (name == "containers" || name == "initContainers" || name == "ephemeralContainers" || name == "volumes" ||
      name == "env" || name == "imagePullSecrets" || name == "resourceClaims" || name == "schedulingGates")
    return "name";
  if (name == "ports") {
    // Container ports merge on containerPort, service ports on port.
    const bool container = anyItemHas(patch, "containerPort") || (original && anyItemHas(*original, "containerPort"));
    return container ? "containerPort" : "port";
  }
  if (name == "volumeMounts") return "mountPath";
  if (name == "volumeDevices") return "devicePath";
  if (name == "hostAliases") return "ip";
  if (name == "conditions") return "type";
  if (name == "ownerReferences") return "uid";
  if (name == "topologySpreadConstraints") return "topologyKey";
  if (name == "finalizers") return "*";
  return "";
}

bool isDirectiveKey(std::string_view k) { return !k.empty() && k.front() == '$'; }

std::string_view patchDirective(const rapidjson::Value& v) {
  const auto* d = field(v, "$patch");
  return d && d->IsString() ? nameOf(*d) : std::string_view();
}

// A patch value written where nothing existed: directives stripped, deleted items dropped.
rapidjson::Value cleanCopy(const rapidjson::Value& patch, Allocator& alloc) {
  if (patch.IsObject()) {
    rapidjson::Value out(rapidjson::kObjectType);
    for (auto it = patch.MemberBegin(); it != patch.MemberEnd(); ++it) {
      if (isDirectiveKey(nameOf(it->name)) || it->value.IsNull()) continue;
      out.AddMember(rapidjson::Value(it->name, alloc), cleanCopy(it->value, alloc), alloc);
    }
    return out;
  }
  if (patch.IsArray()) {
    rapidjson::Value out(rapidjson::kArrayType);
    for (const auto& item : patch.GetArray()) {
      if (patchDirective(item) == "delete" || patchDirective(item) == "replace") continue;
      out.PushBack(cleanCopy(item, alloc), alloc);
    }
    return out;
  }
  return rapidjson::Value(patch, alloc);
}

void mergeMap(rapidjson::Value& original, const rapidjson::Value& patch, Allocator& alloc);

bool sameKey(const rapidjson::Value& a, const rapidjson::Value& b, const std::string& key) {
  const auto* x = field(a, key);
  const auto* y = field(b, key);
  return x && y && *x == *y;
}

void mergeListByKey(rapidjson::Value& original, const rapidjson::Value& patch, const std::string& key,
                    Allocator& alloc) {
  for (const auto& item : patch.GetArray()) {
    if (patchDirective(item) == "replace") {  // {"$patch":"replace"} replaces the whole list
      original = cleanCopy(patch, alloc);
      return;
    }
  }
  for (const auto& item : patch.GetArray()) {
    auto match = std::find_if(original.Begin(), original.End(), [&](const auto& o) { return sameKey(o, item, key); });
    if (patchDirective(item) == "delete") {
      if (match != original.End()) original.Erase(match);
    } else if (match != original.End()) {
      mergeMap(*match, item, alloc);
    } else {
      original.PushBack(cleanCopy(item, alloc), alloc);
    }
  }
}

void mergePrimitiveSet(rapidjson::Value& original, const rapidjson::Value& patch, Allocator& alloc) {
  for (const auto& item : patch.GetArray()) {
    if (std::find(original.Begin(), original.End(), item) == original.End())
      original.PushBack(rapidjson::Value(item, alloc), alloc);
  }
}

// $setElementOrder/<f>: listed elements first in the given order, the rest after.
void applyElementOrder(rapidjson::Value& list, const rapidjson::Value& order, const std::string& key,
                       Allocator& alloc) {
  if (!list.IsArray() || !order.IsArray()) return;
  rapidjson::Value sorted(rapidjson::kArrayType);
  std::vector<bool> taken(list.Size(), false);
  for (const auto& want : order.GetArray()) {
    for (rapidjson::SizeType i = 0; i < list.Size(); ++i) {
      const bool hit = key == "*" ? list[i] == want : sameKey(list[i], want, key);
      if (!taken[i] && hit) {
        taken[i] = true;
        sorted.PushBack(rapidjson::Value(list[i], alloc), alloc);
        break;
      }
    }
  }
  for (rapidjson::SizeType i = 0; i < list.Size(); ++i)
    if (!taken[i]) sorted.PushBack(rapidjson::Value(list[i], alloc), alloc);
  list = sorted;
}

void mergeField(rapidjson::Value& original, std::string_view name, const rapidjson::Value& patch, Allocator& alloc) {
  auto cur = original.FindMember(rapidjson::StringRef(name.data(), name.size()));
  if (patch.IsNull()) {
    if (cur != original.MemberEnd()) original.EraseMember(cur);
    return;
  }
  if (patch.IsObject() && patchDirective(patch) == "delete") {
    if (cur != original.MemberEnd()) original.EraseMember(cur);
    return;
  }
  if (cur == original.MemberEnd() || cur->value.IsNull()) {
    rapidjson::Value v = cleanCopy(patch, alloc);
    if (cur == original.MemberEnd()) {
      original.AddMember(rapidjson::Value(name.data(), static_cast<rapidjson::SizeType>(name.size()), alloc), v, alloc);
    } else {
      cur->value = v;
    }
    return;
  }
  rapidjson::Value& have = cur->value;
  if (have.IsObject() && patch.IsObject()) {
    mergeMap(have, patch, alloc);
    return;
  }
  if (have.IsArray() && patch.IsArray()) {
    const std::string key = mergeKeyFor(name, &have, patch);
    if (key == "*") {
      mergePrimitiveSet(have, patch, alloc);
      return;
    }
    if (!key.empty()) {
      mergeListByKey(have, patch, key, alloc);
      return;
    }
  }
  have = cleanCopy(patch, alloc);
}

void mergeMap(rapidjson::Value& original, const rapidjson::Value& patch, Allocator& alloc) {
  if (!original.IsObject() || !patch.IsObject()) {
    original = cleanCopy(patch, alloc);
    return;
  }
  if (patchDirective(patch) == "replace") {
    original = cleanCopy(patch, alloc);
    return;
  }
  for (auto it = patch.MemberBegin(); it != patch.MemberEnd(); ++it) {
    const std::string_view name = nameOf(it->name);
    if (name.substr(0, kDeleteFromPrimitiveList.size()) == kDeleteFromPrimitiveList) {
      const std::string target(name.substr(kDeleteFromPrimitiveList.size()));
      auto list = original.FindMember(target.c_str());
      if (list != original.MemberEnd() && list->value.IsArray() && it->value.IsArray()) {
        for (const auto& gone : it->value.GetArray()) {
          auto pos = std::find(list->value.Begin(), list->value.End(), gone);
          if (pos != list->value.End()) list->value.Erase(pos);
        }
      }
      continue;
    }
    if (isDirectiveKey(name)) continue;
    mergeField(original, name, it->value, alloc);
  }
  for (auto it = patch.MemberBegin(); it != patch.MemberEnd(); ++it) {
    const std::string_view name = nameOf(it->name);
    if (name.substr(0, kSetElementOrder.size()) != kSetElementOrder) continue;
    const std::string target(name.substr(kSetElementOrder.size()));
    auto list = original.FindMember(target.c_str());
    if (list == original.MemberEnd()) continue;
    applyElementOrder(list->value, it->value, mergeKeyFor(target, &list->value, it->value), alloc);
  }
  if (const auto* retain = field(patch, "$retainKeys"); retain && retain->IsArray()) {
    for (auto m = original.MemberBegin(); m != original.MemberEnd();) {
      const bool keep = std::any_of(retain->Begin(), retain->End(), [&](const auto& k) {
        return k.IsString() && nameOf(k) == nameOf(m->name);
      });
      m = keep ? m + 1 : original.EraseMember(m);
    }
  }
}

// ---- YAML (apply-patch+yaml) to JSON, with YAML 1.1 plain-scalar typing as
// sigs.k8s.io/yaml resolves it ----

rapidjson::Value plainScalar(const std::string& s, Allocator& alloc) {
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return rapidjson::Value();
  if (s == "true" || s == "True" || s == "TRUE") return rapidjson::Value(true);
  if (s == "false" || s == "False" || s == "FALSE") return rapidjson::Value(false);
  if (auto i = parseGoInt64(s)) return rapidjson::Value(static_cast<int64_t>(*i));
  char* end = nullptr;
  const double d = std::strtod(s.c_str(), &end);
  const bool numeric = end && *end == '\0' && s.find_first_of("0123456789") != std::string::npos &&
                       s.find_first_not_of("0123456789+-.eE") == std::string::npos;
  if (numeric) return rapidjson::Value(d);
  return rapidjson::Value(s.c_str(), static_cast<rapidjson::SizeType>(s.size()), alloc);
}

rapidjson::Value yamlToJson(const YAML::Node& node, Allocator& alloc) {
  switch (node.Type()) {
    case YAML::NodeType::Map: {
      rapidjson::Value out(rapidjson::kObjectType);
      for (const auto& kv : node) {
        const std::string k = kv.first.as<std::string>();
        out.AddMember(rapidjson::Value(k.c_str(), static_cast<rapidjson::SizeType>(k.size()), alloc),
                      yamlToJson(kv.second, alloc), alloc);
      }
      return out;
    }
    case YAML::NodeType::Sequence: {
      rapidjson::Value out(rapidjson::kArrayType);
      for (const auto& item : node) out.PushBack(yamlToJson(item, alloc), alloc);
      return out;
    }
    case YAML::NodeType::Scalar: {
      const std::string& s = node.Scalar();
      if (node.Tag() == "!") return rapidjson::Value(s.c_str(), static_cast<rapidjson::SizeType>(s.size()), alloc);
      return plainScalar(s, alloc);
    }
    default: return rapidjson::Value();
  }
}

}  // namespace

Result<bool> applyStrategicMergePatch(const rapidjson::Value& patch, rapidjson::Document& target) {
  mergeMap(target, patch, target.GetAllocator());
  return true;
}

Result<bool> applyApplyPatch(std::string_view yaml, rapidjson::Document& target) {
  YAML::Node node;
  try {
    node = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& e) {
    return badRequest("error converting YAML to JSON: " + std::string(e.what()));
  }
  rapidjson::Document applied(&target.GetAllocator());
  static_cast<rapidjson::Value&>(applied) = yamlToJson(node, target.GetAllocator());
  if (!applied.IsObject()) {
    ApiError e;
    e.code = 400;
    e.reason = "BadRequest";
    e.message = "error decoding YAML: the applied configuration must be an object";
    return e;
  }
  mergeMap(target, applied, target.GetAllocator());
  return true;
}

}  // namespace testapi
