#pragma once
// Shared fixtures for the config tests: a scratch directory, TLS material
// generated at run time, and a way to call config::load() with a fake
// environment.

#include <filesystem>
#include <initializer_list>
#include <string>
#include <vector>

#include "config/config.h"

namespace config::test {

// A fresh directory under the system temp dir, removed with its contents on
// destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // Writes `contents` to path()/relative (creating parent directories) and
  // returns the full path.
  std::filesystem::path write(const std::filesystem::path& relative, const std::string& contents) const;

 private:
  std::filesystem::path path_;
};

// A CA, a client certificate it signed, the client's key, and an unrelated
// key; all PEM, generated once per process (EC P-256, so it is fast).
struct TestPki {
  std::string ca_cert;
  std::string client_cert;
  std::string client_key;
  std::string other_key;
};
const TestPki& testPki();

std::string encodeBase64(const std::string& bytes);

// An environment that points nowhere: no KUBECONFIG, no HOME, not in a pod,
// and a service-account dir inside `scratch` that does not exist yet.
Environment emptyEnvironment(const TempDir& scratch);

// config::load() with argv = {"kube-cache-proxy", args...}.
Config loadArgs(const std::vector<std::string>& args, const Environment& env);

// The ConfigError message load() throws for `args`, or "" if it succeeds.
std::string loadError(const std::vector<std::string>& args, const Environment& env);

}  // namespace config::test
