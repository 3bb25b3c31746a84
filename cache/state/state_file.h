#pragma once
// State file: one cached resource's objects and resourceVersion on disk, for a warm
// restart (--state-dir). The proxy loads it at start-up and resumes the upstream watch
// from its RV instead of relisting.
//
// Layout (integers little-endian):
//   "KCPSTATE"                      8 bytes magic
//   u32 format version              kStateFormatVersion
//   5 x (u32 length, bytes)         group, version, resource, namespace scope ("" = all),
//                                   ingestion transform ("" or "strip-managed-fields")
//   2 x (u32 length, bytes)         the upstream: server URL, kube-system namespace UID
//   u64 resourceVersion
//   u64 object count
//   count x (u32 length, bytes)     each object's raw JSON exactly as stored
//   32 bytes                        the seal of everything above: HMAC-SHA256 with the key
//                                   of --state-key-file, else SHA-256
//
// Crash safety: writeStateFile() writes a temporary file next to the target, fsyncs it,
// renames it over the target and fsyncs the directory, so a reader sees the old file or
// the new one, never a mix. readStateFile() checks everything (magic, version, identity,
// upstream, lengths, trailing bytes, seal) before returning any object, so a torn,
// truncated, corrupt, foreign or (with a key) forged file is an error value, never served.
//
// Trust (issue 36, findings 2 and 3). A file names the cluster it came from (the upstream's
// URL and the UID of its kube-system namespace, which a cluster keeps for its life and
// another cluster never has), so a state directory moved to another cluster, or a cluster
// rebuilt behind the same address, relists instead of serving the other's objects. Without
// a key, whoever can write the directory decides what the proxy serves at start; with one,
// only whoever holds the key. The directory is created 0700; the temporary file is created
// exclusively and never through a symbolic link.

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "cache/result.h"

namespace cache {

// 2: the identity names the ingestion transform; 3: the header names the upstream and the
// seal may be an HMAC (older files are refused: relist).
inline constexpr uint32_t kStateFormatVersion = 3;

// What a state file is for; a file whose identity differs from the expected one is refused.
// The transform is part of it: objects saved with managedFields must not be served by a
// proxy now told to strip them (or the other way round) until each happens to change.
struct StateIdentity {
  std::string group;
  std::string version;
  std::string resource;
  std::string namespace_scope;
  // "" (JSON objects as received), "strip-managed-fields"; "protobuf" (protobuf objects,
  // in a file of their own), "protobuf+strip-managed-fields".
  std::string transform;

  bool operator==(const StateIdentity&) const = default;
};

// The upstream a state file's objects came from.
struct StateUpstream {
  std::string server;       // the upstream's URL as the proxy reaches it ("https://10.0.0.1:443")
  std::string cluster_uid;  // metadata.uid of its kube-system namespace; "" = not known

  bool operator==(const StateUpstream&) const = default;
};

// What every state file of a process is checked against and sealed with.
struct StateFileOptions {
  // Files of another upstream are refused; while the cluster UID is not known, every file is.
  StateUpstream upstream;
  // --state-key-file: the seal is HMAC-SHA256 with this key, and a file sealed without it (or
  // with another) is refused. Empty: a SHA-256, which catches accidents, not a writer.
  std::string key;
};

// Why a state file was refused: each kind is counted separately in tests and logs.
enum class StateFileProblem {
  None, Missing, Io, BadMagic, WrongVersion, WrongResource, WrongUpstream, Truncated, Malformed, Checksum,
  Unauthenticated
};
std::string_view problemName(StateFileProblem problem);

struct LoadedState {
  StateIdentity identity;
  StateUpstream upstream;
  uint64_t resource_version = 0;
  std::vector<std::string> objects;
};

struct StateReadResult {
  StateFileProblem problem = StateFileProblem::None;
  std::string message;  // what was wrong, for the log
  LoadedState state;    // only when problem == None

  bool ok() const { return problem == StateFileProblem::None; }
};

// Calls `emit` once per object, in any order; `emit` copies the bytes out.
using StateObjectSource = std::function<void(const std::function<void(std::string_view json)>& emit)>;

// Writes `count` objects from `source` atomically to `path`, for `options.upstream`, sealed
// with `options.key` (creating nothing else but `path` + ".tmp", exclusively: a file or
// link already there is removed first, and one that reappears fails the write). A count
// that differs from what `source` emitted is an Internal error.
Result<uint64_t> writeStateFile(const std::string& path, const StateFileOptions& options, const StateIdentity& identity,
                                uint64_t resource_version, uint64_t count, const StateObjectSource& source);

// Reads and verifies `path` (a regular file, not followed through a link), expecting
// `expected` from `options.upstream`, sealed with `options.key`.
StateReadResult readStateFile(const std::string& path, const StateFileOptions& options, const StateIdentity& expected);

// Creates the state directory (and missing parents) with mode 0700. An existing directory
// is used as it is; the value is a warning for the log when others than its owner may write
// it ("" otherwise). A path that is no directory, or cannot be created, is an error.
Result<std::string> prepareStateDirectory(const std::string& dir);

// A file name for `identity` that is safe on any filesystem: "pods.v1._all.state",
// "deployments.apps.v1.web.state".
std::string stateFileName(const StateIdentity& identity);

}  // namespace cache
