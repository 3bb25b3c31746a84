#include "proxy/upstream/bearer_token_source.h"

#include <cstdio>
#include <filesystem>
#include <fstream>

#include <doctest/doctest.h>
#include <unistd.h>

namespace {

std::filesystem::path tempTokenPath() {
  char dir[] = "/tmp/kcp-token-XXXXXX";
  REQUIRE(::mkdtemp(dir) != nullptr);
  return std::filesystem::path(dir) / "token";
}

void writeAtomically(const std::filesystem::path& path, const std::string& content) {
  auto tmp = path;
  tmp += ".new";
  std::ofstream(tmp) << content;
  std::filesystem::rename(tmp, path);
}

}  // namespace

TEST_CASE("A static bearer token is used when no token file is set") {
  proxy::UpstreamOptions o;
  o.bearer_token = "abc";
  proxy::BearerTokenSource source(o);
  CHECK(source.token() == "abc");
}

TEST_CASE("A token file wins over the static token and is re-read when it is replaced") {
  auto path = tempTokenPath();
  writeAtomically(path, "first\n");
  proxy::UpstreamOptions o;
  o.bearer_token = "static";
  o.bearer_token_file = path.string();
  proxy::BearerTokenSource source(o);
  CHECK(source.token() == "first");
  writeAtomically(path, "second-token\n");  // a new inode, like the kubelet's symlink swap
  CHECK(source.token() == "second-token");
  std::filesystem::remove_all(path.parent_path());
}

TEST_CASE("The last good token stays in use when the token file disappears") {
  auto path = tempTokenPath();
  writeAtomically(path, "kept");
  proxy::UpstreamOptions o;
  o.bearer_token_file = path.string();
  proxy::BearerTokenSource source(o);
  CHECK(source.token() == "kept");
  std::filesystem::remove(path);
  CHECK(source.token() == "kept");
  std::filesystem::remove_all(path.parent_path());
}

TEST_CASE("A token file caught empty mid-rotation keeps the last token, and the next read takes the new one") {
  auto path = tempTokenPath();
  writeAtomically(path, "  before\n");
  proxy::UpstreamOptions o;
  o.bearer_token_file = path.string();
  proxy::BearerTokenSource source(o);
  CHECK(source.token() == "before");  // surrounding white space is not part of the token
  { std::ofstream truncate(path); }   // a writer that truncates before it writes
  CHECK(source.token() == "before");
  std::ofstream(path) << "after\n";
  CHECK(source.token() == "after");
  std::filesystem::remove_all(path.parent_path());
}
