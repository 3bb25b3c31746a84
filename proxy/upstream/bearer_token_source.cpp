#include "proxy/upstream/bearer_token_source.h"

#include <fstream>
#include <sstream>

#include <spdlog/spdlog.h>
#include <sys/stat.h>

namespace proxy {

BearerTokenSource::BearerTokenSource(const UpstreamOptions& options)
    : static_token_(options.bearer_token), file_(options.bearer_token_file) {}

std::string BearerTokenSource::token() {
  if (file_.empty()) return static_token_;
  struct stat st {};
  std::lock_guard lock(mu_);
  if (::stat(file_.c_str(), &st) != 0) {
    if (file_token_.empty()) spdlog::warn("cannot stat bearer token file {}", file_);
    return file_token_;
  }
  const int64_t mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  if (st.st_ino == inode_ && st.st_size == size_ && mtime_ns == mtime_ns_) return file_token_;
  std::ifstream in(file_);
  std::stringstream content;
  content << in.rdbuf();
  if (!in) {
    spdlog::warn("cannot read bearer token file {}; keeping the previous token", file_);
    return file_token_;
  }
  std::string token = content.str();
  const auto first = token.find_first_not_of(" \t\r\n");
  token = first == std::string::npos ? "" : token.substr(first, token.find_last_not_of(" \t\r\n") - first + 1);
  if (token.empty() && !file_token_.empty()) {
    // Caught mid-rotation (the file truncated before it is written): keep the previous
    // token, and read the file again next time.
    return file_token_;
  }
  file_token_ = std::move(token);
  inode_ = st.st_ino;
  size_ = st.st_size;
  mtime_ns_ = mtime_ns;
  spdlog::debug("loaded bearer token from {}", file_);
  return file_token_;
}

}  // namespace proxy
