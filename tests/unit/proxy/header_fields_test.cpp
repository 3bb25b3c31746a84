// HeaderFields: a request's fields as views with counted references on what they point
// into (an HTTP/1.1 head's own strings, or HTTP/2's shared buffers).
#include "proxy/http/header_fields.h"

#include <doctest/doctest.h>

#include <string>

#include "proxy/http/header_filter.h"

using proxy::FieldStorage;
using proxy::HeaderFields;
using proxy::HeaderList;

namespace {

// Storage counted by the test, as nghttp2 counts its buffers.
struct Counted {
  int references = 0;
  std::string bytes;
};
const FieldStorage::Counting kCounting{[](void* p) { ++static_cast<Counted*>(p)->references; },
                                       [](void* p) { --static_cast<Counted*>(p)->references; }};

}  // namespace

TEST_CASE("fields made of a HeaderList own their strings, copies and moves included") {
  HeaderFields fields = HeaderList{{"Accept", "application/json"}, {"X-Short", "a"}};
  HeaderFields copy = fields;
  HeaderFields moved = std::move(fields);
  CHECK(findHeader(copy, "accept") == "application/json");
  CHECK(findHeader(moved, "x-short") == "a");  // a short string's bytes did not move with the list
  CHECK(moved.size() == 2);
  CHECK(moved.storageCount() == 1);
}

TEST_CASE("fields on shared storage hold one reference per distinct buffer, for as long as they live") {
  Counted name{0, "x-filler"};
  Counted value{0, std::string(4000, 'v')};
  {
    HeaderFields fields;
    const FieldStorage n(&name, kCounting);
    const FieldStorage v(&value, kCounting);
    for (int i = 0; i < 250; ++i) fields.add(name.bytes, value.bytes, n, v);
    CHECK(fields.size() == 250);
    CHECK(fields.storageCount() == 2);
    CHECK(value.references == 2);  // `v` and the list's one
    HeaderFields copy = fields;
    CHECK(value.references == 3);
    fields.add("cookie", "a=1; b=2");  // built here, owned by the list
    CHECK(findHeader(fields, "Cookie") == "a=1; b=2");
  }
  CHECK(name.references == 0);
  CHECK(value.references == 0);
}
