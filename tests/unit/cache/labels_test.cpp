#include "cache/selectors/labels.h"

#include <algorithm>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "cache/selectors/label_selector.h"
#include "tests/unit/cache/doctest_string_view.h"

namespace cache {
namespace {

std::vector<std::string> keysOf(const StringPairs& set) {
  std::vector<std::string> keys;
  for (const auto& [key, value] : set) keys.emplace_back(key);
  return keys;
}

TEST_CASE("A label set is sorted by key whatever the input order, so lookups and selectors can binary-search (S1)") {
  const Labels labels{{"tier", "web"}, {"app", "x"}, {"app.kubernetes.io/instance", "web-3"}};
  CHECK(keysOf(labels) == std::vector<std::string>{"app", "app.kubernetes.io/instance", "tier"});
  CHECK(lookup(labels, "tier") == "web");
  CHECK(lookup(labels, "app.kubernetes.io/instance") == "web-3");
  CHECK_FALSE(lookup(labels, "ap").has_value());
  CHECK_FALSE(lookup(labels, "zzz").has_value());
  CHECK(labels.size() == 3);
  CHECK(labels.begin()->first == "app");
  CHECK(labels.at(2).second == "web");
}

TEST_CASE("Of two pairs with the same key the last one given wins, as in a JSON object") {
  const Labels labels{{"app", "old"}, {"tier", "web"}, {"app", "new"}};
  CHECK(labels.size() == 2);
  CHECK(lookup(labels, "app") == "new");
}

TEST_CASE("An empty value is kept and differs from a missing key (S1 exists vs =\"\")") {
  const Labels labels{{"canary", ""}};
  CHECK(lookup(labels, "canary") == "");
  CHECK_FALSE(lookup(labels, "other").has_value());
  auto selector = LabelSelector::parse("canary");
  REQUIRE(selector.has_value());
  CHECK(selector->matches(labels));
  CHECK_FALSE(selector->matches(Labels{}));
}

TEST_CASE("An empty set allocates nothing and a set of pairs costs one block") {
  CHECK(Labels{}.heapBytes() == 0);
  CHECK(Labels{}.empty());
  const Labels labels{{"app", "web"}, {"env", "prod"}};
  // Header (8) + 2 entries (12 each) + 13 characters.
  CHECK(labels.heapBytes() == 8 + 2 * 12 + 13);
}

TEST_CASE("Copies are deep and equal; moved-from sets are empty") {
  Labels original{{"app", "web"}, {"env", "prod"}};
  Labels copy = original;
  CHECK(copy == original);
  CHECK(copy.begin()->first.data() != original.begin()->first.data());
  Labels moved = std::move(original);
  CHECK(moved == copy);
  CHECK(original.empty());  // NOLINT(bugprone-use-after-move): documented state
  CHECK_FALSE(copy == Labels{{"app", "web"}});
  CHECK_FALSE(copy == Labels{{"app", "web"}, {"env", "dev"}});
}

TEST_CASE("push_back inserts in key order or replaces an existing key") {
  Labels labels;
  labels.push_back({"tier", "web"});
  labels.push_back({"app", "x"});
  labels.push_back({"tier", "db"});
  CHECK(labels == Labels{{"app", "x"}, {"tier", "db"}});
}

TEST_CASE("fromUnsorted sorts the caller's scratch vector and keeps the last duplicate") {
  std::vector<StringPairs::value_type> scratch{{"b", "1"}, {"a", "2"}, {"b", "3"}};
  const StringPairs set = StringPairs::fromUnsorted(scratch);
  CHECK(set == StringPairs{{"a", "2"}, {"b", "3"}});
  CHECK(StringPairs::fromUnsorted(scratch = {}).empty());
}

TEST_CASE("The iterator is random access, so std algorithms binary-search it") {
  const Fields fields{{"spec.nodeName", "n1"}, {"spec.restartPolicy", "Always"}, {"status.phase", "Running"}};
  auto it = std::lower_bound(fields.begin(), fields.end(), std::string_view("spec.restartPolicy"),
                             [](const auto& entry, std::string_view key) { return entry.first < key; });
  CHECK(it - fields.begin() == 1);
  CHECK(it->second == "Always");
  CHECK((it + 1)->first == "status.phase");
  CHECK(fields.end() - fields.begin() == 3);
  CHECK(std::distance(fields.begin(), fields.end()) == 3);
}

}  // namespace
}  // namespace cache
