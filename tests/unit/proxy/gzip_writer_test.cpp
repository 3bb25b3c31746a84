#include "proxy/http/gzip_writer.h"

#include <doctest/doctest.h>

#include "tests/unit/proxy/gunzip.h"

using namespace proxy;

using proxy::testing::gunzip;

TEST_CASE("A body compressed in pieces inflates to the original (N1)") {
  std::string original;
  for (int i = 0; i < 20000; ++i) original += R"({"metadata":{"name":"pod-)" + std::to_string(i) + R"("}},)";
  GzipWriter gz;
  std::string compressed;
  for (size_t pos = 0; pos < original.size(); pos += 7000) gz.write(original.substr(pos, 7000), compressed, false);
  gz.write("", compressed, true);
  CHECK(compressed.size() < original.size() / 4);
  CHECK(gunzip(compressed) == original);
}

TEST_CASE("gzip is used only when the client accepts it") {
  CHECK(acceptsGzip("gzip"));
  CHECK(acceptsGzip("gzip, deflate"));
  CHECK(acceptsGzip("deflate,  gzip "));
  CHECK_FALSE(acceptsGzip("deflate, GZIP"));  // the apiserver compares the token exactly
  CHECK_FALSE(acceptsGzip("gzip;q=1"));
  CHECK_FALSE(acceptsGzip("identity"));
  CHECK_FALSE(acceptsGzip(""));
  CHECK_FALSE(acceptsGzip("gzip;q=0"));
}

TEST_CASE("Runs compressed once splice into a member between bytes deflated now (N1)") {
  // Repetitive text on both sides of each run: were the window not restarted after a
  // run, the deflater would point back into bytes the inflater never saw there.
  const std::string before(5000, 'a');
  std::string run_plain;
  for (int i = 0; i < 3000; ++i) run_plain += "item-" + std::to_string(i) + ",";
  const cache::CompressedRun run = compressRun(run_plain);
  CHECK(run.plain_size == run_plain.size());
  CHECK(run.deflate.size() < run_plain.size() / 3);

  GzipWriter gz;
  std::string compressed;
  gz.writeRun(run, compressed);  // a run first: the header comes before it
  gz.write(before, compressed, false);
  gz.writeRun(run, compressed);
  gz.writeRun(run, compressed);  // two in a row
  gz.write(before, compressed, false);
  gz.write(run_plain, compressed, false);
  gz.writeRun(run, compressed);
  gz.write("", compressed, true);  // a run last, then only the end
  CHECK(gunzip(compressed) == run_plain + before + run_plain + run_plain + before + run_plain + run_plain);

  GzipWriter only;
  std::string alone;
  only.writeRun(compressRun(""), alone);
  only.write("}", alone, true);
  CHECK(gunzip(alone) == "}");
}

TEST_CASE("A gzip member ended with an empty view keeps its CRC (N1, W9 per-flush members)") {
  proxy::GzipWriter gz;
  std::string compressed;
  gz.write("one event\n", compressed, false);
  gz.write(std::string_view{}, compressed, true);  // a null data pointer: zlib's crc32 would restart
  CHECK(gunzip(compressed) == "one event\n");
}

TEST_CASE("W9: a watch flush's gzip member is laid out as Go's flushed then closed writer") {
  const std::string_view events[] = {"{\"type\":\"ADDED\"}\n", "{\"type\":\"BOOKMARK\"}\n"};
  const std::string member = proxy::gzipFlushedMember(events);
  REQUIRE(member.size() > 10 + 9 + 8);
  CHECK(member.substr(0, 3) == std::string("\x1f\x8b\x08", 3));
  // The sync flush, then an empty final block (zlib writes it in 2 bytes, Go in 5: the
  // same stream to a reader), then CRC-32 and size.
  CHECK(member.substr(member.size() - 8 - 2 - 4, 4) == std::string("\x00\x00\xff\xff", 4));
  CHECK(gunzip(member) == "{\"type\":\"ADDED\"}\n{\"type\":\"BOOKMARK\"}\n");
}
