// DELETE and DELETECOLLECTION (X1): preconditions, finalizers, dry runs.
#include "tests/apiserver/handlers/api_server.h"
#include "tests/apiserver/lists/list_paging.h"

namespace testapi {
namespace {

struct DeleteOptions {
  std::string uid;
  std::string resource_version;
  bool dry_run = false;
};

Result<DeleteOptions> parseDeleteOptions(const HttpRequest& req) {
  DeleteOptions o;
  o.dry_run = isDryRun(req);
  if (req.body.empty()) return o;
  rapidjson::Document d;
  d.Parse(req.body.data(), req.body.size());
  if (d.HasParseError() || !d.IsObject()) return badRequest("couldn't get version/kind; json parse error");
  if (auto* pre = member(d, "preconditions"); pre && pre->IsObject()) {
    o.uid = stringMember(*pre, "uid");
    o.resource_version = stringMember(*pre, "resourceVersion");
  }
  if (auto* dr = member(d, "dryRun"); dr && dr->IsArray())
    for (const auto& v : dr->GetArray())
      if (v.IsString() && std::string_view(v.GetString()) == "All") o.dry_run = true;
  return o;
}

}  // namespace

void ApiServer::handleDelete(const HttpRequest& req, const RequestInfo& info, const ServedResource& res,
                             ResponseStream& out) {
  auto opts_r = parseDeleteOptions(req);
  if (auto* e = std::get_if<ApiError>(&opts_r)) return sendStatusError(req, out, *e);
  const DeleteOptions& opts = std::get<DeleteOptions>(opts_r);
  auto r = storage_.mutate(res, info.ns, info.name, [&](const StoredObjectPtr& current, uint64_t next_rv) -> Result<Storage::Mutation> {
    if (!current) return notFound(res.def, info.name);
    if (!opts.uid.empty() && opts.uid != current->uid) {
      ApiError e = conflict(res.def, info.name);
      e.message = "Operation cannot be fulfilled on " + res.def.qualifiedResource() + " \"" + info.name +
                  "\": Precondition failed: UID in precondition: " + opts.uid + ", UID in object meta: " + current->uid;
      return e;
    }
    if (!opts.resource_version.empty() && opts.resource_version != std::to_string(current->rv)) {
      ApiError e = conflict(res.def, info.name);
      e.message = "Operation cannot be fulfilled on " + res.def.qualifiedResource() + " \"" + info.name +
                  "\": Precondition failed: ResourceVersion in precondition: " + opts.resource_version +
                  ", ResourceVersion in object meta: " + std::to_string(current->rv);
      return e;
    }
    Storage::Mutation m;
    rapidjson::Document doc;
    parseStored(*current, doc);
    auto& meta = ensureObject(doc, "metadata", doc.GetAllocator());
    auto* fin = member(meta, "finalizers");
    if (fin && fin->IsArray() && !fin->Empty()) {
      // Finalizers keep the object: it only gets a deletionTimestamp.
      if (member(meta, "deletionTimestamp")) {
        m.object = current;
        return m;
      }
      setString(meta, "deletionTimestamp", nowRfc3339(), doc.GetAllocator());
      meta.RemoveMember("deletionGracePeriodSeconds");
      meta.AddMember("deletionGracePeriodSeconds", 0, doc.GetAllocator());
      if (opts.dry_run) {
        m.object = makeStored(res, doc);
        return m;
      }
      setString(meta, "resourceVersion", std::to_string(next_rv), doc.GetAllocator());
      m.action = Storage::Mutation::Action::Put;
      m.object = makeStored(res, doc);
      return m;
    }
    if (opts.dry_run) {
      m.object = current;
      return m;
    }
    m.action = Storage::Mutation::Action::Remove;
    m.object = withResourceVersion(res, *current, next_rv);  // W3: DELETED carries the deletion RV
    return m;
  });
  if (auto* e = std::get_if<ApiError>(&r)) return sendStatusError(req, out, *e);
  // The namespace controller empties a deleted namespace; here that happens at once.
  if (&res == &namespaces() && !opts.dry_run && !storage_.get(res, "", info.name)) deleteNamespaceContents(info.name);
  sendJsonBody(out, 200, std::string(std::get<StoredObjectPtr>(r)->json));
}

void ApiServer::deleteNamespaceContents(const std::string& ns) {
  for (const auto& res : catalog_.resources()) {
    if (!res.def.namespaced) continue;
    auto snap = storage_.list(res, ns);
    for (const auto& obj : snap->items)
      storage_.mutate(res, ns, obj->name, [&](const StoredObjectPtr& current, uint64_t next_rv) -> Result<Storage::Mutation> {
        Storage::Mutation m;
        if (!current) return m;
        m.action = Storage::Mutation::Action::Remove;
        m.object = withResourceVersion(res, *current, next_rv);
        return m;
      });
  }
}

void ApiServer::handleDeleteCollection(const HttpRequest& req, const RequestInfo& info, const ServedResource& res,
                                       ResponseStream& out) {
  auto parsed = parseListOptionsInHandler(req.query);
  if (auto* e = std::get_if<ApiError>(&parsed)) return sendStatusError(req, out, *e);
  auto filter_r = ObjectFilter::make(res, info.ns, "", std::get<ListOptions>(parsed));
  if (auto* e = std::get_if<ApiError>(&filter_r)) return sendStatusError(req, out, *e);
  // Storage checks the continue token and RV only after the handler's selector checks.
  if (auto e = validateListStorage(std::get<ListOptions>(parsed))) return sendStatusError(req, out, *e);
  const ObjectFilter& filter = std::get<ObjectFilter>(filter_r);
  const bool dry_run = isDryRun(req);
  auto snap = storage_.list(res, filter.namespaceScope());
  std::vector<StoredObjectPtr> deleted;
  for (const auto& obj : snap->items) {
    if (!filter.matches(*obj)) continue;
    auto r = storage_.mutate(res, obj->ns, obj->name, [&](const StoredObjectPtr& current, uint64_t next_rv) -> Result<Storage::Mutation> {
      Storage::Mutation m;
      if (!current) return m;
      if (dry_run) {
        m.object = current;
        return m;
      }
      m.action = Storage::Mutation::Action::Remove;
      m.object = withResourceVersion(res, *current, next_rv);
      return m;
    });
    if (auto* o = std::get_if<StoredObjectPtr>(&r); o && *o) deleted.push_back(*o);
  }
  ListMetaOut meta;
  meta.resource_version = std::to_string(storage_.currentRv());
  sendJsonBody(out, 200, renderList(res, deleted, meta));
}

}  // namespace testapi
