#include <cstdio>
#include <cstring>

#include "build_info.h"

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--version") == 0) {
    std::printf("kube-cache-proxy %s\n", KCP_VERSION);
    return 0;
  }
  std::fprintf(stderr, "kube-cache-proxy: not implemented yet\n");
  return 1;
}
