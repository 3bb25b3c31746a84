#include "proxy/reads/cached_list.h"

#include <doctest/doctest.h>

#include "tests/fakes/fake_clock.h"
#include "tests/unit/cache/test_objects.h"

using namespace proxy;
using cache::testing::makePod;

namespace {

cache::ListOptions options(std::string_view query) {
  auto spec = cache::FieldSpec::forBuiltin("", "v1", "pods", true);
  auto parsed = cache::ListOptions::parse(query, *spec);
  REQUIRE(parsed);
  return *parsed;
}

struct Fixture {
  cache::testing::FakeClock clock;
  cache::ThreadSafeStore store{[] {
                                 cache::StoreOptions o;
                                 o.indexes.push_back(cache::indexes::byField("spec.nodeName"));
                                 return o;
                               }(),
                               clock};
  Fixture() {
    // Namespaces "a" and "a-b" test bytewise order (P9): "a-b/x" sorts before "a/x".
    std::vector<cache::ObjectConstSharedPtr> items = {
        makePod("a", "x", 10, {{"app", "web"}}, "n1"),  makePod("a-b", "x", 11, {{"app", "db"}}, "n2"),
        makePod("a", "y", 12, {{"app", "web"}}, "n2"),  makePod("b", "z", 13, {{"app", "web"}}, "n1"),
        makePod("b", "w", 14, {{"app", "db"}}, "n1"),
    };
    REQUIRE(store.replace(std::move(items), 20));
  }
};

std::vector<std::string> keys(const ListResult& r) {
  std::vector<std::string> out;
  for (const auto& o : r.items) out.push_back(o->key());
  return out;
}

using Keys = std::vector<std::string>;

}  // namespace

TEST_CASE("The R3 table decides which state a LIST reads") {
  CHECK(planList(options(""), "").read == ListPlan::Read::Consistent);
  CHECK(planList(options("limit=5"), "").read == ListPlan::Read::Consistent);
  auto any = planList(options("resourceVersion=0&limit=5"), "");
  CHECK(any.read == ListPlan::Read::Current);
  CHECK_FALSE(any.paginate);  // P5
  auto not_older = planList(options("resourceVersion=15"), "");
  CHECK(not_older.read == ListPlan::Read::NotOlderThan);
  CHECK(not_older.rv == 15);
  auto legacy = planList(options("resourceVersion=15&limit=2"), "");
  CHECK(legacy.read == ListPlan::Read::Exact);
  CHECK(legacy.rv == 15);
  CHECK(planList(options("resourceVersion=15&resourceVersionMatch=NotOlderThan&limit=2"), "").read ==
        ListPlan::Read::NotOlderThan);
  CHECK(planList(options("resourceVersion=15&resourceVersionMatch=Exact"), "").read == ListPlan::Read::Exact);
}

TEST_CASE("R3: a legacy RV=N with a limit on a single named key is NotOlderThan, as the registry reads it") {
  // A namespace from the path, or from the selector of a cluster-wide request; a
  // cluster-scoped resource needs none.
  CHECK(planList(options("resourceVersion=15&limit=2&fieldSelector=metadata.name%3Dx"), "a").read ==
        ListPlan::Read::NotOlderThan);
  CHECK(planList(options("resourceVersion=15&limit=2&fieldSelector=metadata.name%3D%3Dx,metadata.namespace%3Da"), "")
            .read == ListPlan::Read::NotOlderThan);
  CHECK(planList(options("resourceVersion=15&limit=2&fieldSelector=metadata.name%3Dx"), "", false).read ==
        ListPlan::Read::NotOlderThan);
  // No key: no namespace, an invalid name, a != term, or an explicit Exact.
  CHECK(planList(options("resourceVersion=15&limit=2&fieldSelector=metadata.name%3Dx"), "").read == ListPlan::Read::Exact);
  CHECK(planList(options("resourceVersion=15&limit=2&fieldSelector=metadata.name%3D.."), "a").read ==
        ListPlan::Read::Exact);
  CHECK(planList(options("resourceVersion=15&limit=2&fieldSelector=metadata.name!%3Dx"), "a").read ==
        ListPlan::Read::Exact);
  CHECK(planList(options("resourceVersion=15&limit=2&resourceVersionMatch=Exact&fieldSelector=metadata.name%3Dx"), "a")
            .read == ListPlan::Read::Exact);
  // One key, one object at most: never paged.
  CHECK_FALSE(planList(options("limit=1&fieldSelector=metadata.name%3Dx"), "a").paginate);
  CHECK(planList(options("limit=1&fieldSelector=metadata.name%3Dx"), "").paginate);
  // P5 with a continue token: the rest in one page.
  const std::string token = cache::ContinueToken::encode(20, "a/x");
  CHECK_FALSE(planList(options("limit=1&resourceVersion=0&continue=" + token), "").paginate);
  CHECK(planList(options("limit=1&continue=" + token), "").paginate);
}

TEST_CASE("A continue token reads its snapshot from its start, relative to the list prefix (P2)") {
  const std::string token = cache::ContinueToken::encode(20, "x");
  auto plan = planList(options("limit=1&continue=" + token), "a");
  CHECK(plan.read == ListPlan::Read::Exact);
  CHECK(plan.rv == 20);
  CHECK(plan.start_key == std::string("a/x\0", 4));
  CHECK(planList(options("continue=" + cache::ContinueToken::encode(-1, "x")), "").read == ListPlan::Read::PassThrough);
}

TEST_CASE("Items come in bytewise key order (P9)") {
  Fixture f;
  auto r = listCurrent(f.store, options(""), "", planList(options(""), ""));
  CHECK(keys(r) == Keys{"a-b/x", "a/x", "a/y", "b/w", "b/z"});
  CHECK(r.resource_version == 20);
  CHECK(r.continue_token.empty());
}

TEST_CASE("Pages chain through continue tokens with remainingItemCount and one RV (P1, P2, P4)") {
  Fixture f;
  auto first_opts = options("limit=2");
  auto first = listCurrent(f.store, first_opts, "", planList(first_opts, ""));
  CHECK(keys(first) == Keys{"a-b/x", "a/x"});
  CHECK(first.remaining_item_count == 3);
  CHECK(first.continue_token == cache::ContinueToken::encode(20, "a/x"));

  // The store moves on; the continuation still reads the snapshot at 20.
  REQUIRE(f.store.apply(cache::EventType::Added, makePod("a", "z", 21)));
  auto second_opts = options("limit=2&continue=" + first.continue_token);
  auto second_plan = planList(second_opts, "");
  auto snapshot = f.store.snapshotAt(second_plan.rv);
  REQUIRE(snapshot);
  auto second = listSnapshot(**snapshot, second_opts, "", second_plan);
  CHECK(keys(second) == Keys{"a/y", "b/w"});
  CHECK(second.resource_version == 20);
  CHECK(second.remaining_item_count == 1);
  auto third_opts = options("limit=2&continue=" + second.continue_token);
  auto third = listSnapshot(**f.store.snapshotAt(20), third_opts, "", planList(third_opts, ""));
  CHECK(keys(third) == Keys{"b/z"});
  CHECK(third.continue_token.empty());
  CHECK_FALSE(third.remaining_item_count);
}

TEST_CASE("A namespaced page's token holds the name only (P2)") {
  Fixture f;
  auto o = options("limit=1");
  auto r = listCurrent(f.store, o, "a", planList(o, "a"));
  CHECK(keys(r) == Keys{"a/x"});
  CHECK(r.continue_token == cache::ContinueToken::encode(20, "x"));
  auto next_opts = options("limit=1&continue=" + r.continue_token);
  auto next = listSnapshot(**f.store.snapshotAt(20), next_opts, "a", planList(next_opts, "a"));
  CHECK(keys(next) == Keys{"a/y"});
}

TEST_CASE("Selector pages are filled up to limit and carry no remainingItemCount (P4, P6)") {
  Fixture f;
  auto o = options("limit=2&labelSelector=app%3Dweb");
  auto r = listCurrent(f.store, o, "", planList(o, ""));
  CHECK(keys(r) == Keys{"a/x", "a/y"});
  CHECK_FALSE(r.continue_token.empty());
  CHECK_FALSE(r.remaining_item_count);
}

TEST_CASE("RV=0 ignores limit (P5)") {
  Fixture f;
  auto o = options("limit=1&resourceVersion=0");
  auto r = listCurrent(f.store, o, "", planList(o, ""));
  CHECK(r.items.size() == 5);
  CHECK(r.continue_token.empty());
}

TEST_CASE("P2, P5 for a resource the apiserver lists from etcd (events): RV=0 pages, keys without the leading slash") {
  Fixture f;
  auto o = options("limit=2&resourceVersion=0");
  const ListPlan plan = planList(o, "", true, /*watch_cached=*/false);
  auto r = listCurrent(f.store, o, "", plan);
  CHECK(keys(r) == Keys{"a-b/x", "a/x"});
  CHECK(r.continue_token == cache::ContinueToken::encode(20, "a/x", false));
  // {"v":"meta.k8s.io/v1","rv":20,"start":"a/x\u0000"}: kube-apiserver 1.37's events tokens.
  CHECK(r.continue_token == "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MjAsInN0YXJ0IjoiYS94XHUwMDAwIn0");
  // Such a token reads on from the same key as a rooted one.
  auto next_opts = options("limit=2&continue=" + r.continue_token);
  auto next = listSnapshot(**f.store.snapshotAt(20), next_opts, "", planList(next_opts, "", true, false));
  CHECK(keys(next) == Keys{"a/y", "b/w"});
}

TEST_CASE("Indexed reads give the same items as a scan (S1, S4)") {
  Fixture f;
  for (std::string_view q : {"labelSelector=app%3Dweb", "fieldSelector=spec.nodeName%3Dn1",
                             "labelSelector=app%3Dweb&fieldSelector=spec.nodeName%3Dn1", "labelSelector=app+in+(db)"}) {
    CAPTURE(q);
    auto o = options(q);
    auto indexed = listCurrent(f.store, o, "", planList(o, ""));
    CHECK(indexed.used_index);
    auto scanned = listSnapshot(*f.store.snapshot(), o, "", planList(o, ""));
    CHECK(keys(indexed) == keys(scanned));
    CHECK(indexed.resource_version == scanned.resource_version);
    auto in_b = listCurrent(f.store, o, "b", planList(o, "b"));
    CHECK(keys(in_b) == keys(listSnapshot(*f.store.snapshot(), o, "b", planList(o, "b"))));
  }
}

TEST_CASE("A field selector pinning metadata.namespace limits the scanned range, so the last page has no token (P6)") {
  Fixture f;
  auto o = options("limit=2&fieldSelector=metadata.namespace%3Da");
  auto r = listCurrent(f.store, o, "", planList(o, ""));
  CHECK(keys(r) == Keys{"a/x", "a/y"});
  CHECK(r.continue_token.empty());
  auto one = options("limit=1&fieldSelector=metadata.namespace%3Da");
  auto first = listCurrent(f.store, one, "", planList(one, ""));
  // Relative to the narrowed prefix, as kube-apiserver 1.37 writes it ("/x\0")...
  CHECK(first.continue_token == cache::ContinueToken::encode(20, "x"));
  // ...while a continue request is not narrowed, so the apiserver reads that start
  // relative to the all-namespaces prefix: "x\0" sorts after every key of namespace a and
  // the next page is empty (a start that sorts before "a/" would restart the namespace).
  // Quirk for quirk, as the real one answers (docs/conformance.md).
  auto next_opts = options("limit=1&fieldSelector=metadata.namespace%3Da&continue=" + first.continue_token);
  auto next = listSnapshot(**f.store.snapshotAt(20), next_opts, "", planList(next_opts, ""));
  CHECK(keys(next).empty());
  CHECK(next.continue_token.empty());
}

TEST_CASE("A metadata.name field selector is a key lookup, per namespace across all of them, with a scan's items (S4, P9)") {
  Fixture f;
  for (std::string_view q :
       {"fieldSelector=metadata.name%3Dx", "fieldSelector=metadata.name%3D%3Dx", "fieldSelector=metadata.name%3Dz",
        "fieldSelector=metadata.name%3Dnope", "fieldSelector=metadata.name%3Dx,spec.nodeName%3Dn2",
        "fieldSelector=metadata.name%3Dx&labelSelector=app%3Dweb", "fieldSelector=metadata.name%3Dx,metadata.namespace%3Da-b",
        "fieldSelector=metadata.name%3Da%2Fx", "fieldSelector=metadata.name%3Dx&resourceVersion=0&limit=1"}) {
    CAPTURE(q);
    auto o = options(q);
    for (std::string_view ns : {"", "a", "a-b", "c"}) {
      CAPTURE(ns);
      auto looked_up = listCurrent(f.store, o, ns, planList(o, ns));
      CHECK(looked_up.used_index);
      auto scanned = listSnapshot(*f.store.snapshot(), o, ns, planList(o, ns));
      CHECK(keys(looked_up) == keys(scanned));
      CHECK(looked_up.resource_version == scanned.resource_version);
      CHECK(looked_up.continue_token.empty());
    }
  }
  CHECK(keys(listCurrent(f.store, options("fieldSelector=metadata.name%3Dx"), "", planList(options(""), ""))) ==
        Keys{"a-b/x", "a/x"});
  // A page (limit without RV=0) scans: whether it has "more" depends on the keys after it (P6).
  auto paged = options("limit=1&fieldSelector=metadata.name%3Dx");
  CHECK_FALSE(listCurrent(f.store, paged, "", planList(paged, "")).used_index);
  // Not a pinned name: the ordinary paths.
  auto not_equal = options("fieldSelector=metadata.name!%3Dx");
  CHECK(keys(listCurrent(f.store, not_equal, "", planList(not_equal, ""))) == Keys{"a/y", "b/w", "b/z"});
}

TEST_CASE("The store finds an object by name in every namespace and a cluster-scoped one by its bare key") {
  cache::testing::FakeClock clock;
  cache::ThreadSafeStore store({}, clock);
  REQUIRE(store.replace({makePod("b", "n", 3), makePod("a", "n", 4), makePod("a-b", "n", 5), makePod("a", "m", 6),
                         makePod("", "n", 7)},
                        9));
  auto named = store.byName("n");
  REQUIRE(named);
  CHECK(named->resource_version == 9);
  std::vector<std::string> got;
  for (const auto& o : named->items) got.push_back(o->key());
  CHECK(got == Keys{"a-b/n", "a/n", "b/n", "n"});
  cache::StoreOptions no_namespace_index;
  no_namespace_index.indexes.clear();
  cache::ThreadSafeStore bare(no_namespace_index, clock);
  CHECK_FALSE(bare.byName("n").has_value());
}
