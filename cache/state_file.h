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
//   u64 resourceVersion
//   u64 object count
//   count x (u32 length, bytes)     each object's raw JSON exactly as stored
//   32 bytes                        SHA-256 of everything above
//
// Crash safety: writeStateFile() writes a temporary file next to the target, fsyncs it,
// renames it over the target and fsyncs the directory, so a reader sees the old file or
// the new one, never a mix. readStateFile() checks everything (magic, version, identity,
// lengths, trailing bytes, checksum) before returning any object, so a torn, truncated
// or corrupt file is an error value, never served.

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "cache/result.h"

namespace cache {

// 2: the identity names the ingestion transform (a version 1 file is refused: relist).
inline constexpr uint32_t kStateFormatVersion = 2;

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

// Why a state file was refused: each kind is counted separately in tests and logs.
enum class StateFileProblem { None, Missing, Io, BadMagic, WrongVersion, WrongResource, Truncated, Malformed, Checksum };
std::string_view problemName(StateFileProblem problem);

struct LoadedState {
  StateIdentity identity;
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

// Writes `count` objects from `source` atomically to `path` (creating nothing else but
// `path` + ".tmp"). A count that differs from what `source` emitted is an Internal error.
Result<uint64_t> writeStateFile(const std::string& path, const StateIdentity& identity, uint64_t resource_version,
                                uint64_t count, const StateObjectSource& source);

// Reads and verifies `path`, expecting `expected`.
StateReadResult readStateFile(const std::string& path, const StateIdentity& expected);

// A file name for `identity` that is safe on any filesystem: "pods.v1._all.state",
// "deployments.apps.v1.web.state".
std::string stateFileName(const StateIdentity& identity);

}  // namespace cache
