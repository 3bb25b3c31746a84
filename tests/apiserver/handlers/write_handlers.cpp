// POST, PUT and PATCH (X1-X3) including the status subresource.
#include <random>

#include "tests/apiserver/handlers/api_server.h"

namespace testapi {
namespace {

using Doc = rapidjson::Document;

constexpr std::string_view kBodyTypes = "application/json, application/yaml, application/vnd.kubernetes.protobuf";
constexpr std::string_view kPatchTypes =
    "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, "
    "application/strategic-merge-patch+json, application/apply-patch+cbor";

std::string mediaType(const std::string& content_type) {
  std::string t = content_type.substr(0, content_type.find(';'));
  while (!t.empty() && t.back() == ' ') t.pop_back();
  return t;
}

// generateName suffix: 5 characters from the apiserver's alphabet (no vowels).
std::string randomSuffix() {
  static constexpr char kAlphabet[] = "bcdfghjklmnpqrstvwxz2456789";
  thread_local std::mt19937 rng{std::random_device{}()};
  std::string s;
  for (int i = 0; i < 5; ++i) s += kAlphabet[rng() % (sizeof(kAlphabet) - 1)];
  return s;
}

Result<bool> parseBody(const std::string& body, Doc& doc) {
  doc.Parse<rapidjson::kParseFullPrecisionFlag>(body.data(), body.size());
  if (doc.HasParseError())
    return badRequest("couldn't get version/kind; json parse error: invalid character looking for beginning of value");
  if (!doc.IsObject()) return badRequest("couldn't get version/kind; json parse error: expected an object");
  return true;
}

void setTypeMeta(const ServedResource& res, Doc& doc) {
  auto& a = doc.GetAllocator();
  setString(doc, "kind", res.def.kind, a);
  setString(doc, "apiVersion", res.def.groupVersion(), a);
}

std::string memberJson(const rapidjson::Value& obj, const char* name) {
  auto* m = member(obj, name);
  return m ? toJson(*m) : std::string();
}

void copyMember(Doc& to, const rapidjson::Value& from, const char* name) {
  auto& a = to.GetAllocator();
  to.RemoveMember(name);
  if (auto* m = member(from, name)) {
    rapidjson::Value v;
    v.CopyFrom(*m, a);
    to.AddMember(rapidjson::Value(name, a), std::move(v), a);
  }
}

// Built-in defaults the real registries apply on create.
void applyCreateDefaults(const ServedResource& res, Doc& doc) {
  auto& a = doc.GetAllocator();
  if (res.def.group.empty() && res.def.resource == "pods") {
    auto& status = ensureObject(doc, "status", a);
    if (!member(status, "phase")) setString(status, "phase", "Pending", a);
  } else if (res.def.group.empty() && res.def.resource == "namespaces") {
    auto& spec = ensureObject(doc, "spec", a);
    if (!member(spec, "finalizers")) {
      rapidjson::Value fin(rapidjson::kArrayType);
      fin.PushBack(rapidjson::Value("kubernetes"), a);
      spec.AddMember("finalizers", fin, a);
    }
    auto& status = ensureObject(doc, "status", a);
    setString(status, "phase", "Active", a);
  }
}

}  // namespace

Result<StoredObjectPtr> ApiServer::createObject(const ServedResource& res, const std::string& ns, Doc& doc,
                                                bool dry_run) {
  auto& a = doc.GetAllocator();
  setTypeMeta(res, doc);
  auto& meta = ensureObject(doc, "metadata", a);
  std::string body_ns = stringMember(meta, "namespace");
  if (res.def.namespaced) {
    if (!body_ns.empty() && body_ns != ns)
      return badRequest("the namespace of the provided object does not match the namespace sent on the request");
    setString(meta, "namespace", ns, a);
  } else {
    meta.RemoveMember("namespace");
  }
  std::string name = stringMember(meta, "name");
  if (name.empty()) {
    std::string gen = stringMember(meta, "generateName");
    if (gen.empty()) {
      ApiError e{422, "Invalid", res.def.kind + ".\"\" is invalid: metadata.name: Required value: name or generateName is required"};
      e.group = res.def.group;
      e.kind = res.def.kind;
      e.causes.push_back({"FieldValueRequired", "Required value: name or generateName is required", "metadata.name"});
      return e;
    }
    name = gen + randomSuffix();
    setString(meta, "name", name, a);
  }
  if (res.def.namespaced && !storage_.get(namespaces(), "", ns)) return notFound(namespaces().def, ns);
  for (const char* k : {"uid", "resourceVersion", "creationTimestamp", "deletionTimestamp", "generation", "selfLink"})
    meta.RemoveMember(k);
  setString(meta, "uid", newUid(), a);
  setString(meta, "creationTimestamp", nowRfc3339(), a);
  if (member(doc, "spec")) meta.AddMember("generation", 1, a);
  applyCreateDefaults(res, doc);

  return storage_.mutate(res, ns, name, [&](const StoredObjectPtr& current, uint64_t next_rv) -> Result<Storage::Mutation> {
    if (current) return alreadyExists(res.def, name);
    Storage::Mutation m;
    if (dry_run) {
      m.object = makeStored(res, doc);  // X3: not persisted, no RV
      return m;
    }
    setString(doc["metadata"], "resourceVersion", std::to_string(next_rv), a);
    m.action = Storage::Mutation::Action::Put;
    m.object = makeStored(res, doc);
    return m;
  });
}

Result<StoredObjectPtr> ApiServer::updateObject(
    const ServedResource& res, const RequestInfo& info, const std::string& sub,
    const std::function<Result<bool>(const StoredObject& current, Doc& doc)>& build, bool dry_run, bool) {
  return storage_.mutate(res, info.ns, info.name, [&](const StoredObjectPtr& current, uint64_t next_rv) -> Result<Storage::Mutation> {
    if (!current) return notFound(res.def, info.name);
    Doc cur;
    parseStored(*current, cur);
    Doc doc;
    auto built = build(*current, doc);
    if (auto* e = std::get_if<ApiError>(&built)) return *e;
    if (!doc.IsObject()) return badRequest("the body of the request must be an object");
    auto& a = doc.GetAllocator();
    auto& meta = ensureObject(doc, "metadata", a);
    std::string body_name = stringMember(meta, "name");
    if (!body_name.empty() && body_name != info.name)
      return badRequest("the name of the object (" + body_name + ") does not match the name on the URL (" + info.name + ")");
    std::string body_ns = stringMember(meta, "namespace");
    if (res.def.namespaced && !body_ns.empty() && body_ns != info.ns)
      return badRequest("the namespace of the provided object does not match the namespace sent on the request");
    // X2: a resourceVersion in the body is a precondition.
    std::string body_rv = stringMember(meta, "resourceVersion");
    if (!body_rv.empty() && body_rv != std::to_string(current->rv)) return conflict(res.def, info.name);

    if (sub == "status") {
      // PUT/PATCH .../status changes only status: everything else stays as stored.
      Doc next;
      next.CopyFrom(cur, next.GetAllocator());
      copyMember(next, doc, "status");
      doc.Swap(next);
    } else if (res.hasSubresource("status")) {
      copyMember(doc, cur, "status");  // the main resource ignores status changes
    }
    setTypeMeta(res, doc);
    auto& m2 = ensureObject(doc, "metadata", doc.GetAllocator());
    const auto& cmeta = cur["metadata"];
    setString(m2, "name", info.name, doc.GetAllocator());
    if (res.def.namespaced) setString(m2, "namespace", info.ns, doc.GetAllocator());
    for (const char* k : {"uid", "creationTimestamp", "deletionTimestamp", "generation"}) {
      m2.RemoveMember(k);
      if (auto* v = member(cmeta, k)) {
        rapidjson::Value c;
        c.CopyFrom(*v, doc.GetAllocator());
        m2.AddMember(rapidjson::Value(k, doc.GetAllocator()), std::move(c), doc.GetAllocator());
      }
    }
    if (memberJson(doc, "spec") != memberJson(cur, "spec") && member(cmeta, "generation")) {
      int64_t g = cmeta["generation"].IsInt64() ? cmeta["generation"].GetInt64() : 1;
      m2["generation"].SetInt64(g + 1);
    }
    setString(m2, "resourceVersion", std::to_string(current->rv), doc.GetAllocator());
    Storage::Mutation m;
    auto unchanged = makeStored(res, doc);
    if (unchanged->json == current->json || dry_run) {
      m.object = unchanged;  // a no-op update keeps the RV and emits no event (X3 for dry runs)
      return m;
    }
    setString(m2, "resourceVersion", std::to_string(next_rv), doc.GetAllocator());
    auto* fin = member(m2, "finalizers");
    bool finalizers_empty = !fin || !fin->IsArray() || fin->Empty();
    m.object = makeStored(res, doc);
    // An object marked for deletion goes away once its last finalizer is removed.
    m.action = (member(m2, "deletionTimestamp") && finalizers_empty) ? Storage::Mutation::Action::Remove
                                                                      : Storage::Mutation::Action::Put;
    return m;
  });
}

void ApiServer::handleCreate(const HttpRequest& req, const RequestInfo& info, const ServedResource& res,
                             ResponseStream& out) {
  if (mediaType(req.header("content-type")) != "application/json" && !req.header("content-type").empty())
    return sendStatusError(req, out, unsupportedMediaType(kBodyTypes));
  Doc doc;
  if (auto r = parseBody(req.body, doc); std::holds_alternative<ApiError>(r))
    return sendStatusError(req, out, std::get<ApiError>(r));
  // POST /api/v1/namespaces creates a namespace: info.ns is empty there.
  auto created = createObject(res, info.ns, doc, isDryRun(req));
  if (auto* e = std::get_if<ApiError>(&created)) return sendStatusError(req, out, *e);
  sendJsonBody(out, 201, std::string(std::get<StoredObjectPtr>(created)->json));
}

void ApiServer::handleUpdate(const HttpRequest& req, const RequestInfo& info, const ServedResource& res,
                             ResponseStream& out) {
  if (mediaType(req.header("content-type")) != "application/json" && !req.header("content-type").empty())
    return sendStatusError(req, out, unsupportedMediaType(kBodyTypes));
  auto r = updateObject(res, info, info.subresource, [&](const StoredObject&, Doc& doc) { return parseBody(req.body, doc); },
                        isDryRun(req), false);
  if (auto* e = std::get_if<ApiError>(&r)) return sendStatusError(req, out, *e);
  sendJsonBody(out, 200, std::string(std::get<StoredObjectPtr>(r)->json));
}

void ApiServer::handlePatch(const HttpRequest& req, const RequestInfo& info, const ServedResource& res,
                            ResponseStream& out) {
  const std::string ct = mediaType(req.header("content-type"));
  if (ct != "application/json-patch+json" && ct != "application/merge-patch+json" &&
      ct != "application/strategic-merge-patch+json" && ct != "application/apply-patch+yaml")
    return sendStatusError(req, out, unsupportedMediaType(kPatchTypes));
  if (ct == "application/strategic-merge-patch+json" && !res.def.builtin)
    return sendStatusError(req, out, unsupportedMediaType(kPatchTypes));
  const bool dry_run = isDryRun(req);
  // Server-side apply creates a missing object.
  if (ct == "application/apply-patch+yaml" && info.subresource.empty() && !storage_.get(res, info.ns, info.name)) {
    Doc empty;
    empty.Parse("{}");
    setTypeMeta(res, empty);
    auto& meta = ensureObject(empty, "metadata", empty.GetAllocator());
    setString(meta, "name", info.name, empty.GetAllocator());
    Doc target;
    auto p = applyPatch(res.def, ct, empty, req.body, target);
    if (auto* e = std::get_if<ApiError>(&p)) return sendStatusError(req, out, *e);
    auto created = createObject(res, info.ns, target, dry_run);
    if (auto* e = std::get_if<ApiError>(&created)) return sendStatusError(req, out, *e);
    return sendJsonBody(out, 201, std::string(std::get<StoredObjectPtr>(created)->json));
  }
  auto r = updateObject(res, info, info.subresource,
                        [&](const StoredObject& current, Doc& doc) -> Result<bool> {
                          Doc cur;
                          parseStored(current, cur);
                          auto p = applyPatch(res.def, ct, cur, req.body, doc);
                          if (auto* e = std::get_if<ApiError>(&p)) return *e;
                          // A patch without a resourceVersion carries no precondition.
                          auto* pmeta = member(doc, "metadata");
                          Doc patch;
                          patch.Parse(req.body.data(), req.body.size());
                          auto* patch_meta = patch.IsObject() ? member(patch, "metadata") : nullptr;
                          if (pmeta && (!patch_meta || !member(*patch_meta, "resourceVersion")))
                            doc["metadata"].RemoveMember("resourceVersion");
                          return true;
                        },
                        dry_run, false);
  if (auto* e = std::get_if<ApiError>(&r)) return sendStatusError(req, out, *e);
  sendJsonBody(out, 200, std::string(std::get<StoredObjectPtr>(r)->json));
}

}  // namespace testapi
