#include "cache/state_file.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace cache {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "kcp-state-XXXXXX").string();
    path = ::mkdtemp(pattern.data());
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
  std::string file(const std::string& name) const { return path + "/" + name; }
  std::string path;
};

const StateIdentity kPods{"", "v1", "pods", ""};

std::vector<std::string> sampleObjects() {
  return {R"({"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","namespace":"ns","resourceVersion":"5"}})",
          R"({"kind":"Pod","apiVersion":"v1","metadata":{"name":"b","namespace":"ns","resourceVersion":"7"}})", ""};
}

void write(const std::string& path, const std::vector<std::string>& objects, uint64_t rv = 42,
           const StateIdentity& identity = kPods) {
  auto written = writeStateFile(path, identity, rv, objects.size(), [&](const auto& emit) {
    for (const auto& o : objects) emit(o);
  });
  REQUIRE(written.has_value());
  CHECK(*written == fs::file_size(path));
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void spit(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

}  // namespace

TEST_CASE("A state file round-trips objects, RV and identity, and leaves no temporary file") {
  TempDir dir;
  const std::string path = dir.file(stateFileName(kPods));
  write(path, sampleObjects());
  CHECK_FALSE(fs::exists(path + ".tmp"));
  StateReadResult read = readStateFile(path, kPods);
  REQUIRE(read.ok());
  CHECK(read.state.resource_version == 42);
  CHECK(read.state.identity == kPods);
  CHECK(read.state.objects == sampleObjects());

  SUBCASE("with a transform in the identity") {
    const StateIdentity stripped{"", "v1", "pods", "", "strip-managed-fields"};
    write(path, sampleObjects(), 43, stripped);
    StateReadResult again = readStateFile(path, stripped);
    REQUIRE(again.ok());
    CHECK(again.state.identity == stripped);
    CHECK(again.state.resource_version == 43);
  }
}

TEST_CASE("An empty resource round-trips") {
  TempDir dir;
  const std::string path = dir.file("empty.state");
  write(path, {}, 9);
  StateReadResult read = readStateFile(path, kPods);
  REQUIRE(read.ok());
  CHECK(read.state.resource_version == 9);
  CHECK(read.state.objects.empty());
}

TEST_CASE("A second write replaces the first atomically") {
  TempDir dir;
  const std::string path = dir.file("p.state");
  write(path, sampleObjects(), 1);
  write(path, {"{}"}, 2);
  StateReadResult read = readStateFile(path, kPods);
  REQUIRE(read.ok());
  CHECK(read.state.resource_version == 2);
  CHECK(read.state.objects == std::vector<std::string>{"{}"});
}

TEST_CASE("File names keep group, version and namespace apart and are path-safe") {
  CHECK(stateFileName(kPods) == "pods.v1._all.state");
  CHECK(stateFileName({"apps", "v1", "deployments", "web"}) == "deployments.apps.v1.web.state");
  CHECK(stateFileName({"", "v1", "pods/../x", ""}) == "pods_.._x.v1._all.state");
}

TEST_CASE("Every corruption kind is refused with its own problem, never served") {
  TempDir dir;
  const std::string path = dir.file("p.state");
  write(path, sampleObjects());
  const std::string good = slurp(path);
  auto readWith = [&](const std::string& bytes) {
    spit(path, bytes);
    return readStateFile(path, kPods);
  };

  SUBCASE("missing") {
    fs::remove(path);
    CHECK(readStateFile(path, kPods).problem == StateFileProblem::Missing);
  }
  SUBCASE("empty file") { CHECK(readWith("").problem == StateFileProblem::Truncated); }
  SUBCASE("bad magic") {
    std::string bytes = good;
    bytes[0] = 'X';
    CHECK(readWith(bytes).problem == StateFileProblem::BadMagic);
  }
  SUBCASE("wrong format version") {
    std::string bytes = good;
    bytes[8] = static_cast<char>(kStateFormatVersion + 1);
    CHECK(readWith(bytes).problem == StateFileProblem::WrongVersion);
  }
  SUBCASE("wrong resource") {
    spit(path, good);
    CHECK(readStateFile(path, {"", "v1", "configmaps", ""}).problem == StateFileProblem::WrongResource);
    CHECK(readStateFile(path, {"", "v1", "pods", "web"}).problem == StateFileProblem::WrongResource);
    CHECK(readStateFile(path, {"", "v2", "pods", ""}).problem == StateFileProblem::WrongResource);
  }
  SUBCASE("saved under another ingestion transform (strip-managed-fields turned on since)") {
    spit(path, good);
    const StateReadResult read = readStateFile(path, {"", "v1", "pods", "", "strip-managed-fields"});
    CHECK(read.problem == StateFileProblem::WrongResource);
    CHECK(read.message.find("(strip-managed-fields)") != std::string::npos);
  }
  SUBCASE("a version 1 file (no transform in its identity)") {
    std::string bytes = good;
    bytes[8] = 1;
    CHECK(readWith(bytes).problem == StateFileProblem::WrongVersion);
  }
  SUBCASE("truncated at every length") {
    // A torn write may stop anywhere; no prefix is accepted.
    for (size_t size = 0; size < good.size(); ++size) {
      StateReadResult read = readWith(good.substr(0, size));
      INFO("size " << size);
      CHECK_FALSE(read.ok());
      CHECK(read.state.objects.empty());
    }
  }
  SUBCASE("a flipped byte anywhere") {
    for (size_t at = 0; at < good.size(); ++at) {
      std::string bytes = good;
      bytes[at] = static_cast<char>(bytes[at] ^ 0x20);
      StateReadResult read = readWith(bytes);
      INFO("byte " << at);
      CHECK_FALSE(read.ok());
    }
  }
  SUBCASE("a flipped object byte is a checksum mismatch") {
    std::string bytes = good;
    const size_t at = bytes.find("\"b\"");
    REQUIRE(at != std::string::npos);
    bytes[at + 1] = 'c';
    CHECK(readWith(bytes).problem == StateFileProblem::Checksum);
  }
  SUBCASE("trailing garbage") {
    StateReadResult read = readWith(good + "x");
    CHECK_FALSE(read.ok());
  }
  SUBCASE("a huge object count does not allocate") {
    std::string bytes = good;
    const size_t count_at = 8 + 4 + (4 + 0) + (4 + 2) + (4 + 4) + (4 + 0) + (4 + 0) + 8;
    for (size_t i = 0; i < 8; ++i) bytes[count_at + i] = '\xff';
    CHECK(readWith(bytes).problem == StateFileProblem::Truncated);
  }
}

TEST_CASE("A source that emits fewer objects than announced fails and keeps the old file") {
  TempDir dir;
  const std::string path = dir.file("p.state");
  write(path, sampleObjects(), 3);
  auto written = writeStateFile(path, kPods, 4, 5, [](const auto& emit) { emit("{}"); });
  CHECK_FALSE(written.has_value());
  CHECK_FALSE(fs::exists(path + ".tmp"));
  StateReadResult read = readStateFile(path, kPods);
  REQUIRE(read.ok());
  CHECK(read.state.resource_version == 3);
}

TEST_CASE("An unwritable directory is an error value") {
  auto written = writeStateFile("/nonexistent-dir/p.state", kPods, 1, 0, [](const auto&) {});
  CHECK_FALSE(written.has_value());
}

}  // namespace cache
