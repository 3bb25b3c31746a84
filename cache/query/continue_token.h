#pragma once
// Continue tokens in the apiserver's format (contract P2, P3, P7), so tokens are
// interchangeable between the proxy and upstream:
//   base64url-no-padding({"v":"meta.k8s.io/v1","rv":<int64>,"start":"/<key>\u0000"})
// `start` is the storage key of the last returned item relative to the list prefix
// ("/<ns>/<name>" for all-namespaces lists, "/<name>" otherwise; kube-apiserver 1.37 writes
// the leading slash, contract P2 omits it) plus a NUL byte, so the next page starts
// strictly after it. Decoded, `start` is without the slash: "<ns>/<name>\0".
// rv -1 means "continue at the latest RV" (P7).

#include <cstdint>
#include <string>
#include <string_view>

#include "cache/selectors/field_error.h"

namespace cache {

struct ContinueToken {
  int64_t resource_version = 0;
  std::string start;

  using Result = ParseResult<ContinueToken>;

  // A token issued with rv -1 (after an Expired continuation) reads at the latest RV.
  bool atLatest() const { return resource_version < 0; }

  // The token that resumes after `last_key` (relative key, without the NUL).
  // `rooted`: the key starts with '/' as the watch cache writes it; etcd-served lists
  // (resources without a watch cache upstream) write it without.
  static std::string encode(int64_t resource_version, std::string_view last_key, bool rooted = true);
  // The token for exactly this start (NUL already included), e.g. to re-issue the
  // start of an expired token with rv -1.
  static std::string encodeStart(int64_t resource_version, std::string_view start, bool rooted = true);

  // Decodes and validates like storage.DecodeContinue. On failure the error is the
  // complete 400 BadRequest message, "invalid continue token: continue key is not valid: ...".
  static Result decode(std::string_view token);
};

}  // namespace cache
