// The kubeconfig loader over arbitrary YAML must never crash and never let anything but
// a one-line ConfigError out; an upstream it accepts is complete (scheme, host, port,
// a normalised path prefix) and its server URL parses back to the same upstream.
//
// The loader reads files named in the kubeconfig (certificate-authority, tokenFile, ...),
// relative to the kubeconfig's folder: each input is written to a private temp folder.
// Inputs that name a device, FIFO or other special file, or a large file, are skipped:
// reading /dev/zero or a FIFO never ends, and that is the kernel, not the loader.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <system_error>

#include <yaml-cpp/yaml.h>

#include "config/config_error.h"
#include "config/kubeconfig.h"
#include "config/server_url.h"
#include "fuzz_check.h"

namespace {

namespace fs = std::filesystem;

const fs::path& workDir() {
  // Never destroyed: the atexit handler below runs after static destructors would have.
  static const fs::path* dir = [] {
    // tmpfs when there is one: a million inputs are a million file writes.
    std::error_code ec;
    const fs::path base = fs::is_directory("/dev/shm", ec) ? fs::path("/dev/shm") : fs::temp_directory_path();
    auto* d = new fs::path(base / ("kcp-kubeconfig-fuzz-" + std::to_string(::getpid())));
    fs::create_directories(*d);
    std::atexit([] {
      std::error_code ignored;
      fs::remove_all(workDir(), ignored);
    });
    return d;
  }();
  return *dir;
}

bool namesSpecialFile(const YAML::Node& node) {
  if (node.IsScalar()) {
    const std::string& text = node.Scalar();
    if (text.empty() || text.size() > 4096 || text.find('\0') != std::string::npos) return false;
    std::error_code ec;
    const fs::path path = fs::path(text).is_absolute() ? fs::path(text) : workDir() / text;
    const fs::file_status status = fs::status(path, ec);
    if (ec || !fs::exists(status)) return false;
    if (fs::is_directory(status)) return false;
    if (!fs::is_regular_file(status)) return true;
    return fs::file_size(path, ec) > (1u << 20);
  }
  if (node.IsSequence() || node.IsMap()) {
    for (const auto& child : node) {
      if (node.IsMap() ? namesSpecialFile(child.first) || namesSpecialFile(child.second) : namesSpecialFile(child)) {
        return true;
      }
    }
  }
  return false;
}

// Only an input spelling one of these can name a special file (YAML can build other
// strings only through escapes); the rest skip the slower check.
bool mayNameSpecialFile(std::string_view text) {
  for (std::string_view word : {"\\", "dev", "proc", "sys", "run", "fd"}) {
    if (text.find(word) != std::string_view::npos) return true;
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  if (mayNameSpecialFile(text)) {
    try {
      if (namesSpecialFile(YAML::Load(text))) return 0;
    } catch (const YAML::Exception&) {
      // The loader must turn this into a ConfigError below.
    }
  }
  const fs::path path = workDir() / "config";
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
  }
  {
    // Odd-sized inputs name their context as --context does, the others use current-context.
    std::optional<config::Setting> context;
    if (size % 2 == 1) context = config::Setting{"ctx", "--context"};
    config::UpstreamConfig upstream;
    try {
      upstream = config::readKubeconfig(path, context);
    } catch (const config::ConfigError& e) {
      const std::string_view message = e.what();
      FUZZ_CHECK(message.starts_with("kube-cache-proxy: "));
      FUZZ_CHECK(message.find('\n') == std::string_view::npos);
      return 0;
    }
    // Anything else escaping (YAML::Exception, std::bad_alloc, ...) fails the run.
    FUZZ_CHECK(upstream.source == config::UpstreamSource::Kubeconfig);
    FUZZ_CHECK(upstream.scheme == "http" || upstream.scheme == "https");
    FUZZ_CHECK(!upstream.host.empty() && upstream.port != 0);
    FUZZ_CHECK(upstream.path_prefix.empty() ||
               (upstream.path_prefix.starts_with('/') && !upstream.path_prefix.ends_with('/')));
    FUZZ_CHECK(upstream.client_cert_pem.empty() == upstream.client_key_pem.empty());
    FUZZ_CHECK(!(upstream.insecure_skip_tls_verify && !upstream.ca_pem.empty()));
    const config::ServerUrl url = config::parseServerUrl(upstream.scheme + "://" +
                                                         config::joinHostPort(upstream.host, upstream.port) +
                                                         upstream.path_prefix);
    FUZZ_CHECK(url.scheme == upstream.scheme && url.host == upstream.host && url.port == upstream.port &&
               url.path_prefix == upstream.path_prefix);
  }
  return 0;
}
