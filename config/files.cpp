#include "config/files.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "config/config_error.h"

namespace config {

std::string readFile(const std::filesystem::path& path, const std::string& what) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw ConfigError(what + ": cannot read " + path.string() + ": is a directory");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(what + ": cannot read " + path.string() + ": " + std::strerror(errno));
  std::ostringstream contents;
  contents << in.rdbuf();
  if (in.bad()) throw ConfigError(what + ": cannot read " + path.string() + ": read error");
  return std::move(contents).str();
}

std::filesystem::path resolveAgainst(const std::filesystem::path& base_dir, const std::filesystem::path& path) {
  if (path.empty() || path.is_absolute()) return path;
  return base_dir / path;
}

}  // namespace config
