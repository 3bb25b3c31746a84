// A saved state file (cache/state/state_file.h, issue 36) from whoever could write --state-dir:
// byte 0 picks whether a --state-key-file key is configured (bit 0), the rest is the file. The
// reader must refuse anything it does not accept with a problem and a message and no
// objects: another version, a truncation anywhere, counts and lengths beyond the file, another
// resource or upstream (or an unknown one), a seal that does not match. What it accepts is for
// the expected resource and upstream, and writes back to a file that reads the same.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

#include "cache/state/state_file.h"
#include "fuzz_check.h"

namespace {

namespace fs = std::filesystem;

const cache::StateIdentity kPods{"", "v1", "pods", "", ""};
// The seeds in corpus/state_file/ are written for this upstream and key.
const cache::StateUpstream kUpstream{"https://10.0.0.1:443", "3f9c8a2e-5d1b-4c7e-9a0f-1b2c3d4e5f60"};
const std::string kKey(32, 'k');

const fs::path& workDir() {
  // Never destroyed: the atexit handler below runs after static destructors would have.
  static const fs::path* dir = [] {
    std::error_code ec;
    const fs::path base = fs::is_directory("/dev/shm", ec) ? fs::path("/dev/shm") : fs::temp_directory_path();
    auto* d = new fs::path(base / ("kcp-state-file-fuzz-" + std::to_string(::getpid())));
    fs::create_directories(*d);
    std::atexit([] {
      std::error_code ignored;
      fs::remove_all(workDir(), ignored);
    });
    return d;
  }();
  return *dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  cache::StateFileOptions options{kUpstream, (data[0] & 1) ? kKey : ""};
  const std::string path = (workDir() / "input.state").string();
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data + 1), static_cast<std::streamsize>(size - 1));
  }
  const cache::StateReadResult read = cache::readStateFile(path, options, kPods);
  FUZZ_CHECK(read.problem == cache::readStateFile(path, options, kPods).problem);  // deterministic
  if (!read.ok()) {
    FUZZ_CHECK(read.problem != cache::StateFileProblem::None && !read.message.empty());
    FUZZ_CHECK(read.state.objects.empty());
    return 0;
  }
  FUZZ_CHECK(read.state.identity == kPods && read.state.upstream == kUpstream);
  FUZZ_CHECK(read.state.objects.size() <= (size - 1) / 4);
  // What was accepted writes back to a file that reads the same, under the same options.
  const std::string again = (workDir() / "again.state").string();
  auto written = cache::writeStateFile(again, options, kPods, read.state.resource_version, read.state.objects.size(),
                                       [&](const auto& emit) {
                                         for (const std::string& object : read.state.objects) emit(object);
                                       });
  FUZZ_CHECK(written.has_value());
  const cache::StateReadResult back = cache::readStateFile(again, options, kPods);
  FUZZ_CHECK(back.ok() && back.state.objects == read.state.objects &&
             back.state.resource_version == read.state.resource_version);
  // Sealed with a key, it is no file for a reader without one (nor the other way round).
  cache::StateFileOptions other = options;
  other.key = options.key.empty() ? kKey : "";
  FUZZ_CHECK(!cache::readStateFile(again, other, kPods).ok());
  return 0;
}
