#pragma once
// ServingTls: the serving certificate, key and client CA as one TLS context, rebuilt when
// a file changes (a Secret update swaps the mounted files). A context that fails to build
// (files mid-rotation, mismatched pair) leaves the previous one serving. Used by the
// accept loop, and by requests re-verifying a client certificate; each session keeps the
// context it started with. Thread-safe.

#include <chrono>
#include <memory>
#include <mutex>
#include <string>

#include "cache/clock.h"
#include "proxy/server/server_options.h"

namespace boost::asio::ssl {
class context;
}

namespace proxy {

class ServingTls {
 public:
  // Throws: a bad certificate at start is a configuration error.
  ServingTls(const ServerOptions& options, const cache::Clock& clock);
  ServingTls(const ServingTls&) = delete;
  ServingTls& operator=(const ServingTls&) = delete;

  // The context to serve with now; looks at the files at most once a second.
  std::shared_ptr<boost::asio::ssl::context> current();

 private:
  // Inode, size and mtime of each file: a rewrite in place or a symlink swap changes it.
  std::string signature() const;
  std::shared_ptr<boost::asio::ssl::context> build() const;

  const ServerOptions& options_;
  const cache::Clock& clock_;
  std::mutex mu_;
  std::shared_ptr<boost::asio::ssl::context> context_;  // guarded by mu_
  std::string signature_;                                // guarded by mu_: the files context_ was built from
  cache::Clock::TimePoint checked_;  // guarded by mu_: when the files were last looked at
};

}  // namespace proxy
