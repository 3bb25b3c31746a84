#pragma once
// The API type fixture corpus (../shared/testdata/k8s-api-fixtures): where it is and how
// to read one file. Tests that need it skip when it is absent.

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace cache::testing {

inline std::string readFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// KCP_FIXTURES_DIR from the environment, else the one CMake configured.
inline std::string fixturesDir() {
  if (const char* env = std::getenv("KCP_FIXTURES_DIR"); env && *env) return env;
  return KCP_FIXTURES_DIR;
}

}  // namespace cache::testing
