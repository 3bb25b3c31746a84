// Shard selectors (KEP-5866) as kube-apiserver 1.37 reads them (apiserver pkg/sharding,
// apimachinery pkg/sharding): FNV-1a 64 over the field, ranges [start, end), the canonical
// spelling echoed in shardInfo; what the proxy does not read is the upstream's to answer.
#include "cache/selectors/shard_selector.h"

#include <doctest/doctest.h>

using cache::ShardSelector;
using cache::shardHash;

TEST_CASE("shardHash is FNV-1a 64, as sharding.HashField") {
  CHECK(shardHash("") == 0xcbf29ce484222325ULL);
  CHECK(shardHash("a") == 0xaf63dc4c8601ec8cULL);
  CHECK(shardHash("foobar") == 0x85944171f73967e8ULL);
}

TEST_CASE("two ranges cover the hash space once; the canonical form is sharding.Selector's String()") {
  const auto low = ShardSelector::parse("shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')");
  const auto high =
      ShardSelector::parse("shardRange(object.metadata.uid,\"0x8000000000000000\",'0x10000000000000000')");
  REQUIRE(low);
  REQUIRE(high);
  CHECK(high->canonical() == "shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')");
  for (const char* uid : {"a", "b", "c", "5f2b1c8e-0000-4000-8000-000000000001", ""}) {
    CHECK(low->matches(uid, "ns") != high->matches(uid, "ns"));
    CHECK(low->matches(uid, "ns") == (shardHash(uid) < 0x8000000000000000ULL));
  }
}

TEST_CASE("ranges joined by || select the union; the namespace key hashes the namespace") {
  const auto either = ShardSelector::parse(
      "shardRange(object.metadata.namespace, '0x0000000000000000', '0x4000000000000000') || "
      "shardRange(object.metadata.namespace, '0xc000000000000000', '0x10000000000000000')");
  REQUIRE(either);
  CHECK(either->field() == ShardSelector::Field::Namespace);
  CHECK(either->ranges().size() == 2);
  for (const char* ns : {"default", "kube-system", "a", "b"}) {
    const uint64_t h = shardHash(ns);
    CHECK(either->matches("any-uid", ns) == (h < 0x4000000000000000ULL || h >= 0xc000000000000000ULL));
  }
  CHECK(either->canonical() ==
        "shardRange(object.metadata.namespace, '0x0000000000000000', '0x4000000000000000') || "
        "shardRange(object.metadata.namespace, '0xc000000000000000', '0x10000000000000000')");
}

TEST_CASE("what kube-apiserver refuses, or words as a CEL error, is left to it") {
  for (const char* text : {
           "",                                                                           // empty
           "shardRange(object.metadata.uid, '0x0', '0x8000000000000000')",               // not 16 digits
           "shardRange(object.metadata.uid, '0x8000000000000000', '0x0000000000000000')",  // start >= end
           "shardRange(object.metadata.uid, '0x000000000000000G', '0x8000000000000000')",  // not hex
           "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000'",   // unclosed
           "shardRange(object.metadata.name, '0x0000000000000000', '0x8000000000000000')",  // field
           "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') || "
           "shardRange(object.metadata.namespace, '0x8000000000000000', '0x10000000000000000')",  // mixed keys
           "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') && true",
           "(shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000'))",  // valid CEL, unread
           "shardRange(object.metadata.uid, '0X0000000000000000', '0x8000000000000000')",
           "shardRange(object.metadata.uid, '0x10000000000000000', '0x10000000000000000')",
       }) {
    CHECK_MESSAGE(!ShardSelector::parse(text), text);
  }
}
