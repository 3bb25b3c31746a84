#include "proxy/observability/status_page.h"

#include <doctest/doctest.h>

#include <rapidjson/document.h>

using proxy::ResourceStatus;
using proxy::StatusReport;

namespace {

StatusReport sample() {
  StatusReport report;
  report.now_unix = 1000;
  ResourceStatus r;
  r.resource = "widgets.<b>example</b>.com";  // names come from the upstream's discovery
  r.version = "v1";
  r.encoding = "json";
  r.state = "synced";
  r.objects = 3;
  r.json_bytes = 2'500'000;
  r.overhead_bytes = 500'000;
  r.resource_version = 42;
  r.last_sync_unix = 990;
  r.watchers = 7;
  report.resources.push_back(r);
  return report;
}

}  // namespace

TEST_CASE("The JSON status has one object per cached resource with its numbers") {
  rapidjson::Document doc;
  doc.Parse(proxy::renderStatusJson(sample()).c_str());
  REQUIRE_FALSE(doc.HasParseError());
  CHECK(doc["upstream"]["up"].GetBool());
  REQUIRE(doc["resources"].Size() == 1);
  const auto& r = doc["resources"][0];
  CHECK(std::string(r["resource"].GetString()) == "widgets.<b>example</b>.com");
  CHECK(r["objects"].GetUint64() == 3);
  CHECK(r["jsonBytes"].GetUint64() == 2'500'000);
  CHECK(r["resourceVersion"].GetUint64() == 42);
  CHECK(r["watchers"].GetUint64() == 7);
  CHECK(std::string(r["namespace"].GetString()).empty());
}

TEST_CASE("The HTML status escapes what the upstream named and refreshes itself") {
  StatusReport report = sample();
  report.upstream_up = false;
  report.upstream_down_seconds = 12;
  const std::string page = proxy::renderStatusHtml(report);
  CHECK(page.find("widgets.&lt;b&gt;example&lt;/b&gt;.com") != std::string::npos);
  CHECK(page.find("<b>example") == std::string::npos);
  CHECK(page.find("setInterval(refresh, 5000)") != std::string::npos);
  CHECK(page.find("Upstream: down for 12 s") != std::string::npos);
  CHECK(page.find("<td class=\"num\">3.0</td>") != std::string::npos);  // MB, objects and overhead
  CHECK(page.find("10s ago") != std::string::npos);
}

TEST_CASE("JSON is chosen by the Accept header, a browser gets the page") {
  CHECK(proxy::wantsJsonStatus(proxy::AcceptHeader::parse("application/json")));
  CHECK(proxy::wantsJsonStatus(proxy::AcceptHeader::parse("application/json, */*")));
  CHECK_FALSE(proxy::wantsJsonStatus(proxy::AcceptHeader::parse("text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8")));
  CHECK_FALSE(proxy::wantsJsonStatus(proxy::AcceptHeader::parse("")));
}
