#include "cache/state/state_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>

#include "cache/state/state_file_io.h"

namespace cache {
namespace {

using state_io::Fd;
using state_io::Seal;
using state_io::SealingReader;
using state_io::SealingWriter;

constexpr std::string_view kMagic = "KCPSTATE";
// Identity strings are API names and URLs; anything longer is a corrupt length.
constexpr uint32_t kMaxNameLength = 4096;

std::string errnoText(std::string_view what, const std::string& path) {
  return std::string(what) + " " + path + ": " + std::strerror(errno);
}

StateReadResult refuse(StateFileProblem problem, std::string message) {
  StateReadResult out;
  out.problem = problem;
  out.message = std::move(message);
  return out;
}

void sanitizeInto(std::string& out, std::string_view part) {
  for (char c : part) {
    const bool safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.';
    out += safe ? c : '_';
  }
}

}  // namespace

std::string_view problemName(StateFileProblem problem) {
  switch (problem) {
    case StateFileProblem::None: return "none";
    case StateFileProblem::Missing: return "missing";
    case StateFileProblem::Io: return "io";
    case StateFileProblem::BadMagic: return "bad_magic";
    case StateFileProblem::WrongVersion: return "wrong_version";
    case StateFileProblem::WrongResource: return "wrong_resource";
    case StateFileProblem::WrongUpstream: return "wrong_upstream";
    case StateFileProblem::Truncated: return "truncated";
    case StateFileProblem::Malformed: return "malformed";
    case StateFileProblem::Checksum: return "checksum";
    case StateFileProblem::Unauthenticated: return "unauthenticated";
  }
  return "unknown";
}

std::string stateFileName(const StateIdentity& identity) {
  std::string out;
  sanitizeInto(out, identity.resource);
  if (!identity.group.empty()) {
    out += '.';
    sanitizeInto(out, identity.group);
  }
  out += '.';
  sanitizeInto(out, identity.version);
  out += '.';
  // "_all" cannot be a namespace name (DNS labels have no underscore).
  if (identity.namespace_scope.empty()) {
    out += "_all";
  } else {
    sanitizeInto(out, identity.namespace_scope);
  }
  // A protobuf cache of the same collection keeps a file of its own.
  out += identity.transform.rfind("protobuf", 0) == 0 ? ".protobuf.state" : ".state";
  return out;
}

namespace {

// Creates `path` for writing: exclusively, with nothing (not even a dangling link) at the
// path, so a link planted in the directory never redirects the write.
int createExclusively(const std::string& path) {
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) return -1;
  return ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
}

void writeHeader(SealingWriter& out, const StateIdentity& identity, const StateUpstream& upstream,
                 uint64_t resource_version, uint64_t count) {
  out.put(kMagic);
  out.putU32(kStateFormatVersion);
  for (const std::string* field : {&identity.group, &identity.version, &identity.resource, &identity.namespace_scope,
                                   &identity.transform, &upstream.server, &upstream.cluster_uid}) {
    out.putString(*field);
  }
  out.putU64(resource_version);
  out.putU64(count);
}

// The rename itself is durable only once the directory is synced.
void syncDirectoryOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  Fd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir_fd.get() >= 0) ::fsync(dir_fd.get());
}

std::string describe(const StateIdentity& identity) {
  return stateFileName(identity) + (identity.transform.empty() ? "" : " (" + identity.transform + ")");
}

// Magic, version, identity and upstream; a refusal, or None with `state` filled in.
StateReadResult readHeader(SealingReader& in, const StateFileOptions& options, const StateIdentity& expected,
                           LoadedState& state, const std::string& path) {
  auto truncated = [&](std::string_view where) {
    if (in.ioError()) return refuse(StateFileProblem::Io, errnoText("cannot read", path));
    return refuse(StateFileProblem::Truncated, "ends inside the " + std::string(where));
  };
  std::string bytes;
  if (!in.read(kMagic.size(), bytes)) return truncated("magic");
  if (bytes != kMagic) return refuse(StateFileProblem::BadMagic, "not a state file");
  uint32_t version = 0;
  if (!in.readU32(version)) return truncated("header");
  if (version != kStateFormatVersion) {
    return refuse(StateFileProblem::WrongVersion, "format version " + std::to_string(version) + ", expected " +
                                                      std::to_string(kStateFormatVersion));
  }
  for (std::string* field : {&state.identity.group, &state.identity.version, &state.identity.resource,
                             &state.identity.namespace_scope, &state.identity.transform, &state.upstream.server,
                             &state.upstream.cluster_uid}) {
    uint32_t length = 0;
    if (!in.readU32(length)) return truncated("header");
    if (length > kMaxNameLength) return refuse(StateFileProblem::Malformed, "header name of " + std::to_string(length) + " bytes");
    if (!in.read(length, *field)) return truncated("header");
  }
  if (state.identity != expected) {
    return refuse(StateFileProblem::WrongResource, "state of " + describe(state.identity) + ", expected " + describe(expected));
  }
  if (options.upstream.cluster_uid.empty()) {
    return refuse(StateFileProblem::WrongUpstream, "the upstream's cluster (its kube-system namespace UID) is not known");
  }
  if (state.upstream != options.upstream) {
    return refuse(StateFileProblem::WrongUpstream, "state of " + state.upstream.server + " (cluster " +
                                                       state.upstream.cluster_uid + "), this upstream is " +
                                                       options.upstream.server + " (cluster " +
                                                       options.upstream.cluster_uid + ")");
  }
  if (!in.readU64(state.resource_version)) return truncated("header");
  return {};
}

StateReadResult readObjects(SealingReader& in, LoadedState& state, const std::string& path) {
  uint64_t count = 0;
  if (!in.readU64(count)) return refuse(in.ioError() ? StateFileProblem::Io : StateFileProblem::Truncated, "ends inside the header");
  // Every object takes at least its 4-byte length: a larger count is corrupt, and must
  // not size an allocation.
  if (count > in.remaining() / 4) return refuse(StateFileProblem::Truncated, std::to_string(count) + " objects announced");
  state.objects.reserve(count);
  for (uint64_t i = 0; i < count; ++i) {
    uint32_t length = 0;
    std::string object;
    if (!in.readU32(length) || !in.read(length, object)) {
      if (in.ioError()) return refuse(StateFileProblem::Io, errnoText("cannot read", path));
      return refuse(StateFileProblem::Truncated, "ends inside the objects");
    }
    state.objects.push_back(std::move(object));
  }
  if (in.remaining() != 0) {
    return refuse(StateFileProblem::Malformed, std::to_string(in.remaining()) + " bytes after the last object");
  }
  return {};
}

}  // namespace

Result<uint64_t> writeStateFile(const std::string& path, const StateFileOptions& options, const StateIdentity& identity,
                                uint64_t resource_version, uint64_t count, const StateObjectSource& source) {
  const std::string tmp = path + ".tmp";
  std::unique_ptr<Seal> seal = Seal::make(options.key);
  if (!seal) return fail(Reason::Internal, "SHA-256 or HMAC-SHA256 is not available");
  Fd fd(createExclusively(tmp));
  if (fd.get() < 0) return fail(Reason::Internal, errnoText("cannot create", tmp));
  SealingWriter out(fd.get(), *seal);
  writeHeader(out, identity, options.upstream, resource_version, count);
  uint64_t emitted = 0;
  source([&](std::string_view json) {
    ++emitted;
    out.putString(json);
  });
  const state_io::SealBytes sum = seal->finish();
  out.putUnsealed({reinterpret_cast<const char*>(sum.data()), sum.size()});
  const bool written = out.flush();
  if (!written || emitted != count || ::fsync(fd.get()) != 0) {
    const int error = written ? errno : out.error();
    ::unlink(tmp.c_str());
    if (emitted != count) {
      return fail(Reason::Internal, "state of " + std::to_string(emitted) + " objects, " + std::to_string(count) + " announced");
    }
    errno = error;
    return fail(Reason::Internal, errnoText("cannot write", tmp));
  }
  if (::close(fd.release()) != 0 || ::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string message = errnoText("cannot write", path);
    ::unlink(tmp.c_str());
    return fail(Reason::Internal, message);
  }
  syncDirectoryOf(path);
  return out.written();
}

StateReadResult readStateFile(const std::string& path, const StateFileOptions& options, const StateIdentity& expected) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (fd.get() < 0) {
    if (errno == ENOENT) return refuse(StateFileProblem::Missing, "no state file " + path);
    return refuse(StateFileProblem::Io, errnoText("cannot open", path));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return refuse(StateFileProblem::Io, errnoText("cannot stat", path));
  if (!S_ISREG(st.st_mode)) return refuse(StateFileProblem::Io, path + " is not a regular file");
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size < kMagic.size() + state_io::kSealSize) {
    return refuse(StateFileProblem::Truncated, "file of " + std::to_string(size) + " bytes");
  }
  std::unique_ptr<Seal> seal = Seal::make(options.key);
  if (!seal) return refuse(StateFileProblem::Io, "SHA-256 or HMAC-SHA256 is not available");
  SealingReader in(fd.get(), size - state_io::kSealSize, *seal);
  StateReadResult result;
  if (StateReadResult header = readHeader(in, options, expected, result.state, path); !header.ok()) return header;
  if (StateReadResult objects = readObjects(in, result.state, path); !objects.ok()) return objects;
  std::string trailer;
  if (!in.readTrailer(trailer)) return refuse(StateFileProblem::Io, errnoText("cannot read", path));
  if (!state_io::sameSeal(trailer, seal->finish())) {
    // Without a key only an accident (or a writer who did not bother) changes the bytes;
    // with one, also anyone without the key.
    if (options.key.empty()) return refuse(StateFileProblem::Checksum, "checksum mismatch");
    return refuse(StateFileProblem::Unauthenticated, "not sealed with the key of --state-key-file");
  }
  return result;
}

Result<std::string> prepareStateDirectory(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code error;
  const fs::path path(dir);
  if (path.has_parent_path()) fs::create_directories(path.parent_path(), error);
  if (error) return fail(Reason::Internal, "cannot create " + path.parent_path().string() + ": " + error.message());
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return fail(Reason::Internal, errnoText("cannot create", dir));
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) return fail(Reason::Internal, errnoText("cannot stat", dir));
  if (!S_ISDIR(st.st_mode)) return fail(Reason::Internal, dir + " is not a directory");
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) == 0) return std::string();
  return dir + " may be written by others than its owner, and whoever writes it decides what the proxy serves "
               "after a restart: make it 0700 or name a new directory (the proxy creates it 0700)";
}

}  // namespace cache
