#include "cache/state/state_file.h"

#include <doctest/doctest.h>
#include <openssl/evp.h>
#include <sys/stat.h>
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
// The upstream every file here is written for and read by, unless a test says otherwise.
const StateFileOptions kHere{{"https://10.0.0.1:443", "3f9c8a2e-5d1b-4c7e-9a0f-1b2c3d4e5f60"}, ""};

std::vector<std::string> sampleObjects() {
  return {R"({"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","namespace":"ns","resourceVersion":"5"}})",
          R"({"kind":"Pod","apiVersion":"v1","metadata":{"name":"b","namespace":"ns","resourceVersion":"7"}})", ""};
}

void write(const std::string& path, const std::vector<std::string>& objects, uint64_t rv = 42,
           const StateIdentity& identity = kPods, const StateFileOptions& options = kHere) {
  auto written = writeStateFile(path, options, identity, rv, objects.size(), [&](const auto& emit) {
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
  StateReadResult read = readStateFile(path, kHere, kPods);
  REQUIRE(read.ok());
  CHECK(read.state.resource_version == 42);
  CHECK(read.state.identity == kPods);
  CHECK(read.state.upstream == kHere.upstream);
  CHECK(read.state.objects == sampleObjects());

  SUBCASE("with a transform in the identity") {
    const StateIdentity stripped{"", "v1", "pods", "", "strip-managed-fields"};
    write(path, sampleObjects(), 43, stripped);
    StateReadResult again = readStateFile(path, kHere, stripped);
    REQUIRE(again.ok());
    CHECK(again.state.identity == stripped);
    CHECK(again.state.resource_version == 43);
  }
}

TEST_CASE("An empty resource round-trips") {
  TempDir dir;
  const std::string path = dir.file("empty.state");
  write(path, {}, 9);
  StateReadResult read = readStateFile(path, kHere, kPods);
  REQUIRE(read.ok());
  CHECK(read.state.resource_version == 9);
  CHECK(read.state.objects.empty());
}

TEST_CASE("A second write replaces the first atomically") {
  TempDir dir;
  const std::string path = dir.file("p.state");
  write(path, sampleObjects(), 1);
  write(path, {"{}"}, 2);
  StateReadResult read = readStateFile(path, kHere, kPods);
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
    return readStateFile(path, kHere, kPods);
  };

  SUBCASE("missing") {
    fs::remove(path);
    CHECK(readStateFile(path, kHere, kPods).problem == StateFileProblem::Missing);
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
    CHECK(readStateFile(path, kHere, {"", "v1", "configmaps", ""}).problem == StateFileProblem::WrongResource);
    CHECK(readStateFile(path, kHere, {"", "v1", "pods", "web"}).problem == StateFileProblem::WrongResource);
    CHECK(readStateFile(path, kHere, {"", "v2", "pods", ""}).problem == StateFileProblem::WrongResource);
  }
  SUBCASE("saved under another ingestion transform (strip-managed-fields turned on since)") {
    spit(path, good);
    const StateReadResult read = readStateFile(path, kHere, {"", "v1", "pods", "", "strip-managed-fields"});
    CHECK(read.problem == StateFileProblem::WrongResource);
    CHECK(read.message.find("(strip-managed-fields)") != std::string::npos);
  }
  SUBCASE("a version 1 or 2 file (no transform, no upstream in its identity)") {
    for (char version : {'\1', '\2'}) {
      std::string bytes = good;
      bytes[8] = version;
      CHECK(readWith(bytes).problem == StateFileProblem::WrongVersion);
    }
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
    const size_t count_at = 8 + 4 + (4 + 0) + (4 + 2) + (4 + 4) + (4 + 0) + (4 + 0) +
                            (4 + kHere.upstream.server.size()) + (4 + kHere.upstream.cluster_uid.size()) + 8;
    for (size_t i = 0; i < 8; ++i) bytes[count_at + i] = '\xff';
    CHECK(readWith(bytes).problem == StateFileProblem::Truncated);
  }
}

TEST_CASE("A source that emits fewer objects than announced fails and keeps the old file") {
  TempDir dir;
  const std::string path = dir.file("p.state");
  write(path, sampleObjects(), 3);
  auto written = writeStateFile(path, kHere, kPods, 4, 5, [](const auto& emit) { emit("{}"); });
  CHECK_FALSE(written.has_value());
  CHECK_FALSE(fs::exists(path + ".tmp"));
  StateReadResult read = readStateFile(path, kHere, kPods);
  REQUIRE(read.ok());
  CHECK(read.state.resource_version == 3);
}

TEST_CASE("An unwritable directory is an error value") {
  auto written = writeStateFile("/nonexistent-dir/p.state", kHere, kPods, 1, 0, [](const auto&) {});
  CHECK_FALSE(written.has_value());
}

TEST_CASE("A file of another upstream is refused, and every file while the cluster is not known (issue 36, finding 2)") {
  TempDir dir;
  const std::string path = dir.file("p.state");
  write(path, sampleObjects());
  StateFileOptions other_cluster = kHere;
  other_cluster.upstream.cluster_uid = "0d6e1c7a-0000-4000-8000-000000000000";  // rebuilt behind the same address
  StateFileOptions other_server = kHere;
  other_server.upstream.server = "https://10.0.0.2:443";  // the directory moved
  StateFileOptions unknown = kHere;
  unknown.upstream.cluster_uid.clear();  // kube-system could not be read
  for (const StateFileOptions& options : {other_cluster, other_server, unknown}) {
    const StateReadResult read = readStateFile(path, options, kPods);
    CHECK(read.problem == StateFileProblem::WrongUpstream);
    CHECK(read.state.objects.empty());
  }
  CHECK(readStateFile(path, other_cluster, kPods).message.find(kHere.upstream.cluster_uid) != std::string::npos);
}

TEST_CASE("With a key the seal is an HMAC: a file sealed otherwise, or changed and sealed again with SHA-256, is "
          "refused (issue 36, finding 3)") {
  TempDir dir;
  const std::string path = dir.file("p.state");
  StateFileOptions keyed = kHere;
  keyed.key = std::string(32, 'k');
  StateFileOptions other_key = kHere;
  other_key.key = std::string(32, 'j');
  write(path, sampleObjects(), 42, kPods, keyed);
  CHECK(readStateFile(path, keyed, kPods).ok());
  CHECK(readStateFile(path, other_key, kPods).problem == StateFileProblem::Unauthenticated);
  CHECK(readStateFile(path, kHere, kPods).problem == StateFileProblem::Checksum);  // an HMAC is no SHA-256
  write(path, sampleObjects(), 42, kPods, kHere);
  CHECK(readStateFile(path, keyed, kPods).problem == StateFileProblem::Unauthenticated);

  // What a writer of the directory can do without the key: change an object and seal the
  // file again with SHA-256. Accepted without a key (the directory is trusted then), refused
  // with one.
  for (const StateFileOptions* options : std::initializer_list<const StateFileOptions*>{&kHere, &keyed}) {
    write(path, sampleObjects(), 42, kPods, *options);
    std::string bytes = slurp(path);
    bytes.replace(bytes.find("\"b\""), 3, "\"z\"");
    unsigned int size = 0;
    EVP_Digest(bytes.data(), bytes.size() - 32, reinterpret_cast<unsigned char*>(bytes.data() + bytes.size() - 32),
               &size, EVP_sha256(), nullptr);
    spit(path, bytes);
    const StateReadResult read = readStateFile(path, *options, kPods);
    if (options->key.empty()) {
      REQUIRE(read.ok());
      CHECK(read.state.objects[1].find("\"z\"") != std::string::npos);
    } else {
      CHECK(read.problem == StateFileProblem::Unauthenticated);
    }
  }
}

TEST_CASE("The temporary file is created exclusively, never through a link, and a linked state file is not read") {
  TempDir dir;
  const std::string path = dir.file("p.state");
  const std::string victim = dir.file("victim");
  spit(victim, "keep me");
  fs::create_symlink(victim, path + ".tmp");
  write(path, sampleObjects());
  CHECK(slurp(victim) == "keep me");
  CHECK(fs::is_regular_file(fs::symlink_status(path)));
  CHECK((fs::status(path).permissions() & (fs::perms::group_all | fs::perms::others_all)) == fs::perms::none);

  const std::string linked = dir.file("linked.state");
  fs::create_symlink(path, linked);
  CHECK(readStateFile(linked, kHere, kPods).problem == StateFileProblem::Io);
  fs::remove(path);
  ::mkfifo(path.c_str(), 0600);
  CHECK(readStateFile(path, kHere, kPods).problem == StateFileProblem::Io);  // no wait for a writer
}

TEST_CASE("The state directory is created 0700; one others may write is used with a warning") {
  TempDir dir;
  const std::string created = dir.file("a/b/state");
  auto prepared = prepareStateDirectory(created);
  REQUIRE(prepared.has_value());
  CHECK(prepared->empty());
  CHECK(fs::status(created).permissions() == fs::perms::owner_all);
  const std::string shared = dir.file("shared");
  fs::create_directory(shared);
  fs::permissions(shared, fs::perms::all);
  prepared = prepareStateDirectory(shared);
  REQUIRE(prepared.has_value());
  CHECK(prepared->find("0700") != std::string::npos);
  spit(dir.file("file"), "");
  CHECK_FALSE(prepareStateDirectory(dir.file("file")).has_value());
}

}  // namespace cache
