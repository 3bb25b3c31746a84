#pragma once
// File access with errors that name the flag or key the path came from.

#include <filesystem>
#include <string>

namespace config {

// The whole file. Throws ConfigError "<what>: cannot read <path>: <reason>".
std::string readFile(const std::filesystem::path& path, const std::string& what);

// `path` unchanged if absolute, else relative to `base_dir` (kubeconfig and
// config-file semantics: paths are relative to the file that names them).
std::filesystem::path resolveAgainst(const std::filesystem::path& base_dir, const std::filesystem::path& path);

}  // namespace config
