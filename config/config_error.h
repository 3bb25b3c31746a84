#pragma once
// The two ways `config::load()` ends without a Config.

#include <stdexcept>
#include <string>

namespace config {

// The configuration is unusable. what() is one line meant for a human, naming
// the flag, file or key at fault, e.g.
//   kube-cache-proxy: --context "prod": no such context in /root/.kube/config
// main prints what() to stderr and exits non-zero.
class ConfigError : public std::runtime_error {
 public:
  // `detail` is the message without the program-name prefix.
  explicit ConfigError(const std::string& detail);
};

// The user asked for something other than running (--help, --version):
// print `text` to stdout and exit with `code`.
struct ExitRequest {
  int code = 0;
  std::string text;
};

}  // namespace config
