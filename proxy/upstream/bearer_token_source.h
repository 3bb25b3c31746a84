#pragma once
// The bearer token the proxy presents upstream, for every upstream client (the
// pass-through's pool and the reflectors' connector). A token file wins over a static
// token and is re-read whenever its inode, size or mtime changes, because
// projected service-account tokens are rotated on disk by the kubelet (an atomic
// symlink swap, which changes the inode). Thread-safe.

#include <mutex>
#include <string>

#include <sys/types.h>

#include "proxy/upstream/upstream_options.h"

namespace proxy {

class BearerTokenSource {
 public:
  explicit BearerTokenSource(const UpstreamOptions& options);
  BearerTokenSource(const BearerTokenSource&) = delete;
  BearerTokenSource& operator=(const BearerTokenSource&) = delete;

  // The current token, "" when none is configured. When the file cannot be
  // read, or is empty, the last good token stays in use (a rotation in progress must
  // not turn into anonymous requests). Leading and trailing white space is not part
  // of the token.
  std::string token();

 private:
  const std::string static_token_;
  const std::string file_;
  std::mutex mu_;
  std::string file_token_;  // guarded by mu_
  ino_t inode_ = 0;         // guarded by mu_; identity of the file last read
  off_t size_ = -1;
  int64_t mtime_ns_ = -1;
};

}  // namespace proxy
