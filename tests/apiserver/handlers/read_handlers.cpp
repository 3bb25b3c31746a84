// GET and LIST with the watch cache's resourceVersion rules (R2-R10, P1-P9, L1), and the etcd
// reads that a single-object LIST is delegated to.
#include "tests/apiserver/handlers/api_server.h"
#include "tests/apiserver/lists/list_paging.h"

namespace testapi {
namespace {

// R6 (cache path quirk): a malformed RV on GET is a bare 500.
ApiError invalidRvInternal(const std::string& rv) {
  return ApiError{500, "", "resourceVersion: Invalid value: \"" + rv + "\": strconv.ParseUint: parsing \"" + rv +
                               "\": invalid syntax"};
}

ApiError invalidRvList(const std::string& rv) {
  return badRequest("invalid resource version: resourceVersion: Invalid value: \"" + rv +
                    "\": strconv.ParseUint: parsing \"" + rv + "\": invalid syntax");
}

// A LIST that Store.ListPredicate serves as a non-recursive GetList (MatchesSingle), in
// an exact-read form (resourceVersionMatch=Exact, or the legacy limit with
// resourceVersion=N): delegator.ShouldDelegateList asks Cacher.ShouldDelegateExactRV,
// which delegates every non-recursive read, so etcd answers it. There
// storage.ValidateListOptions pins Exact to N but pins the legacy form only when
// recursive: that one reads etcd's current revision (NotOlderThan N). A future N is
// refused at once, not after the cache's wait, by validateMinimumResourceVersion or
// etcd's ErrFutureRev, with NewTooLargeResourceVersionError(N, current, 0).
// Returns the revision to read at (nullopt: the current one).
Result<std::optional<uint64_t>> singleObjectRevisionFromEtcd(const Storage& storage, uint64_t n, bool exact_match) {
  const uint64_t current = storage.currentRv();
  if (n > current) return tooLargeResourceVersion(n, current, 0);
  return exact_match ? std::optional<uint64_t>(n) : std::nullopt;
}

}  // namespace

void ApiServer::handleGet(const HttpRequest& req, const RequestInfo& info, const ServedResource& res,
                          ResponseStream& out) {
  auto kind = negotiateOutput(req.header("accept"), false, false);
  if (auto* e = std::get_if<ApiError>(&kind)) return sendStatusError(req, out, *e);
  // R2: RV=N waits (up to 3 s) for the store to reach N, then 504 (R7).
  if (auto* rv = req.param("resourceVersion"); rv && !rv->empty() && *rv != "0") {
    auto n = parseResourceVersion(*rv);
    if (!n) return sendStatusError(req, out, invalidRvInternal(*rv));
    if (!storage_.waitForRv(*n, std::chrono::steady_clock::now() + opts_.too_large_rv_wait))
      return sendStatusError(req, out, tooLargeResourceVersion(*n, storage_.currentRv()));
  }
  auto obj = storage_.get(res, info.ns, info.name);
  if (!obj) return sendStatusError(req, out, notFound(res.def, info.name));  // R10
  switch (std::get<OutputKind>(kind)) {
    case OutputKind::Table: {
      ListMetaOut meta;
      meta.resource_version = std::to_string(obj->rv);
      auto t = tableFor(res.def, {obj->json}, tableOptionsFrom(req.query), meta);
      if (auto* e = std::get_if<ApiError>(&t)) return sendStatusError(req, out, *e);
      return sendJsonBody(out, 200, std::move(std::get<std::string>(t)));
    }
    case OutputKind::PartialObjectMetadata:
      return sendJsonBody(out, 200, partialObjectMetadataFor(obj->json));
    default:
      return sendJsonBody(out, 200, std::string(obj->json));
  }
}

void ApiServer::handleList(const HttpRequest& req, const RequestInfo& info, const ServedResource& res,
                           ResponseStream& out) {
  counters_.lists++;
  auto kind = negotiateOutput(req.header("accept"), true, false);
  if (auto* e = std::get_if<ApiError>(&kind)) return sendStatusError(req, out, *e);
  auto parsed = parseListOptionsInHandler(req.query);
  if (auto* e = std::get_if<ApiError>(&parsed)) return sendStatusError(req, out, *e);
  const ListOptions& opts = std::get<ListOptions>(parsed);
  auto filter = ObjectFilter::make(res, info.ns, "", opts);
  if (auto* e = std::get_if<ApiError>(&filter)) return sendStatusError(req, out, *e);
  // Storage checks the continue token and RV only after the handler's selector checks.
  if (auto e = validateListStorage(opts)) return sendStatusError(req, out, *e);
  const ObjectFilter& f = std::get<ObjectFilter>(filter);

  int64_t limit = opts.limit;
  std::optional<uint64_t> at_rv;  // Exact read
  std::string start;              // continue position, relative key + NUL (P2)
  const auto deadline = std::chrono::steady_clock::now() + opts_.too_large_rv_wait;
  if (!opts.continue_token.empty()) {
    auto tok = decodeContinue(opts.continue_token);
    if (auto* e = std::get_if<ApiError>(&tok)) return sendStatusError(req, out, *e);
    auto& t = std::get<ContinueToken>(tok);
    start = t.start;
    if (t.rv > 0) at_rv = static_cast<uint64_t>(t.rv);  // rv -1: continue at the latest RV (P7)
    // P5 holds with a token too: the watch cache continues from its start and RV, and
    // computeListLimit drops the limit for RV=0 (kube-apiserver 1.37: the rest in one page).
    if (opts.resource_version == "0" && watchCached(res.def)) limit = 0;
    if (at_rv && *at_rv < storage_.compactedRv()) {
      // P7: the snapshot is gone; hand out a token that continues at the latest RV.
      ApiError e{410, "Expired",
                 "The provided continue parameter is too old to display a consistent list result. You can start a "
                 "new list without the continue parameter, or use the continue token in this response to retrieve "
                 "the remainder of the results. Continuing with the provided token results in an inconsistent list "
                 "- objects that were created, modified, or deleted between the time the first chunk was returned "
                 "and now may show up in the list."};
      // etcd answers this one (handleCompactedErrorForPaging): it trims its prepared
      // prefix ("/pods/ns/"), so this start has no leading '/', unlike the cache's pages.
      e.metadata_continue = encodeContinue(-1, t.start);
      return sendStatusError(req, out, e);
    }
  } else if (opts.has_resource_version && opts.resource_version != "0") {
    auto n = parseResourceVersion(opts.resource_version);
    if (!n) return sendStatusError(req, out, invalidRvList(opts.resource_version));
    // R3: Exact for RVM=Exact and for the legacy limit+RV=N form; otherwise NotOlderThan.
    const bool exact_match = opts.resource_version_match == "Exact";
    const bool legacy_exact = opts.resource_version_match.empty() && limit > 0;
    if (f.singleObjectName() && (exact_match || legacy_exact)) {
      auto read = singleObjectRevisionFromEtcd(storage_, *n, exact_match);
      if (auto* e = std::get_if<ApiError>(&read)) return sendStatusError(req, out, *e);
      at_rv = std::get<std::optional<uint64_t>>(read);
    } else {
      if (!storage_.waitForRv(*n, deadline))
        return sendStatusError(req, out, tooLargeResourceVersion(*n, storage_.currentRv()));  // R7
      if (exact_match || legacy_exact) at_rv = *n;
    }
  } else if (opts.has_resource_version) {
    if (watchCached(res.def)) limit = 0;  // P5: RV=0 from the cache ignores limit; etcd does not
  } else if (!f.singleObjectName()) {
    // A consistent LIST from the watch cache (1.31+): the apiserver first brings the cache
    // to etcd's revision, so the resource's later bookmarks carry it. (A single-object
    // read goes to etcd and leaves the cache as it is.)
    storage_.progress(res);
  }
  // A non-recursive GetList holds one object at most, so it never has more to page:
  // no continue token, no remainingItemCount, whatever the limit.
  if (f.singleObjectName()) limit = 0;

  auto snap = storage_.list(res, f.namespaceScope(), at_rv);
  if (!snap) return sendStatusError(req, out, expiredList());  // R8
  Page page = paginate(*snap, res, f, info.ns.empty() && res.def.namespaced && !f.narrowedToNamespace(), start, limit);

  ListMetaOut meta;
  meta.resource_version = std::to_string(snap->rv);
  meta.continue_token = page.continue_token;
  meta.remaining_item_count = page.remaining_item_count;
  meta.shard_selector = f.shardSelector();
  switch (std::get<OutputKind>(kind)) {
    case OutputKind::Table:
    case OutputKind::PartialObjectMetadataList: {
      std::vector<std::string_view> views;
      views.reserve(page.items.size());
      for (const auto& o : page.items) views.emplace_back(o->json);
      if (std::get<OutputKind>(kind) == OutputKind::PartialObjectMetadataList)
        return sendJsonBody(out, 200, partialObjectMetadataListFor(views, meta));
      auto t = tableFor(res.def, views, tableOptionsFrom(req.query), meta);
      if (auto* e = std::get_if<ApiError>(&t)) return sendStatusError(req, out, *e);
      return sendJsonBody(out, 200, std::move(std::get<std::string>(t)));
    }
    default:
      return sendJsonBody(out, 200, renderList(res, page.items, meta));
  }
}

}  // namespace testapi
