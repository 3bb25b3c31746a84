// Composition root. The flag parsing here is a stopgap until config/ provides
// the real flag set; everything else lives in proxy/.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>

#include <spdlog/spdlog.h>

#include "build_info.h"
#include "proxy/logging.h"
#include "proxy/proxy_server.h"
#include "proxy/upstream_url.h"

namespace {

// Time allowed for in-flight requests after SIGTERM; the process must be gone
// within 5 s, which leaves room for thread joins.
constexpr std::chrono::milliseconds kDrain{3000};

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream content;
  content << in.rdbuf();
  return content.str();
}

struct Flags {
  proxy::ServerOptions server;
  proxy::UpstreamOptions upstream;
  proxy::LoggingOptions logging;
};

void usage() {
  std::fprintf(stderr,
               "usage: kube-cache-proxy --upstream URL [--listen HOST:PORT] [--io-threads N]\n"
               "  [--certificate-authority FILE] [--client-certificate FILE] [--client-key FILE]\n"
               "  [--token TOKEN] [--token-file FILE] [--tls-server-name NAME] [--insecure-skip-tls-verify]\n"
               "  [--connect-timeout-ms N]\n"
               "  [-v N] [--log-format text|json] [--version]\n");
}

Flags parseFlags(int argc, char** argv) {
  Flags f;
  bool have_upstream = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string value;
    if (auto eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    } else if (arg != "--insecure-skip-tls-verify" && arg != "--version") {
      if (i + 1 >= argc) throw std::runtime_error("flag needs a value: " + arg);
      value = argv[++i];
    }
    if (arg == "--version") {
      std::printf("kube-cache-proxy %s\n", KCP_VERSION);
      std::exit(0);
    } else if (arg == "--listen") {
      if (auto err = proxy::parseHostPort(value, f.server.listen_host, f.server.listen_port); !err.empty())
        throw std::runtime_error(err);
    } else if (arg == "--upstream") {
      if (auto err = proxy::parseUpstreamUrl(value, f.upstream); !err.empty()) throw std::runtime_error(err);
      have_upstream = true;
    } else if (arg == "--io-threads") {
      f.server.io_threads = std::stoi(value);
    } else if (arg == "--certificate-authority") {
      f.upstream.ca_pem = readFile(value);
    } else if (arg == "--client-certificate") {
      f.upstream.client_cert_pem = readFile(value);
    } else if (arg == "--client-key") {
      f.upstream.client_key_pem = readFile(value);
    } else if (arg == "--token") {
      f.upstream.bearer_token = value;
    } else if (arg == "--token-file") {
      f.upstream.bearer_token_file = value;
    } else if (arg == "--connect-timeout-ms") {
      f.upstream.connect_timeout = std::chrono::milliseconds(std::stol(value));
    } else if (arg == "--tls-server-name") {
      f.upstream.tls_server_name = value;
    } else if (arg == "--insecure-skip-tls-verify") {
      f.upstream.insecure_skip_tls_verify = true;
    } else if (arg == "-v" || arg == "--v") {
      f.logging.verbosity = std::stoi(value);
    } else if (arg == "--log-format") {
      if (value != "text" && value != "json") throw std::runtime_error("--log-format must be text or json");
      f.logging.format = value == "json" ? proxy::LogFormat::Json : proxy::LogFormat::Text;
    } else {
      throw std::runtime_error("unknown flag " + arg);
    }
  }
  if (!have_upstream) throw std::runtime_error("--upstream is required");
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  // Block the shutdown signals before any thread starts, so that every thread
  // inherits the mask and only sigwait below ever sees them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);

  Flags flags;
  try {
    flags = parseFlags(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kube-cache-proxy: %s\n", e.what());
    usage();
    return 2;
  }
  proxy::setupLogging(flags.logging);
  try {
    proxy::ProxyServer server(flags.server, flags.upstream);
    server.start();
    const std::string& host = server.listenHost();
    const std::string shown = host.find(':') != std::string::npos ? "[" + host + "]" : host;
    std::printf("listening on %s:%u\n", shown.c_str(), server.listenPort());
    std::fflush(stdout);
    spdlog::info("proxying to {}://{}:{}{}", flags.upstream.scheme, flags.upstream.host, flags.upstream.port,
                 flags.upstream.path_prefix);

    int sig = 0;
    sigwait(&signals, &sig);
    spdlog::info("received signal {}, shutting down", sig);
    std::atomic<bool> stopped{false};
    std::thread stopper([&] {
      server.stop(kDrain);
      stopped = true;
    });
    // A second signal during the drain exits at once, like Redis does.
    const timespec poll{0, 50 * 1000 * 1000};
    while (!stopped) {
      if (sigtimedwait(&signals, nullptr, &poll) > 0) {
        spdlog::warn("second signal, exiting immediately");
        std::_Exit(1);
      }
    }
    stopper.join();
    spdlog::info("stopped");
  } catch (const std::exception& e) {
    spdlog::error("kube-cache-proxy: {}", e.what());
    return 1;
  }
  return 0;
}
