#include "proxy/observability/logging.h"

#include <atomic>
#include <string_view>

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "cache/go_json.h"

namespace proxy {
namespace {

std::atomic<int> g_verbosity{0};

// %* in the JSON pattern: the message as a JSON string literal, so any text a
// caller logs yields a valid JSON line.
class JsonMessageFlag final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&, spdlog::memory_buf_t& dest) override {
    std::string quoted = cache::goJsonString(std::string(msg.payload.data(), msg.payload.size()));
    dest.append(quoted.data(), quoted.data() + quoted.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override { return std::make_unique<JsonMessageFlag>(); }
};

// %* in the text pattern: the message as escapeLogText() writes it.
class TextMessageFlag final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&, spdlog::memory_buf_t& dest) override {
    const std::string text = escapeLogText(std::string_view(msg.payload.data(), msg.payload.size()));
    dest.append(text.data(), text.data() + text.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override { return std::make_unique<TextMessageFlag>(); }
};

}  // namespace

void setupLogging(const LoggingOptions& options) {
  g_verbosity = options.verbosity;
  auto logger = spdlog::stderr_logger_mt("kube-cache-proxy");
  auto formatter = std::make_unique<spdlog::pattern_formatter>(spdlog::pattern_time_type::utc);
  if (options.format == LogFormat::Json) {
    formatter->add_flag<JsonMessageFlag>('*').set_pattern(R"({"ts":"%Y-%m-%dT%H:%M:%S.%fZ","level":"%l","msg":%*})");
  } else {
    formatter->add_flag<TextMessageFlag>('*').set_pattern("%Y-%m-%dT%H:%M:%S.%fZ %L %*");
  }
  logger->set_formatter(std::move(formatter));
  logger->set_level(options.verbosity >= 4 ? spdlog::level::debug : spdlog::level::info);
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
}

int logVerbosity() { return g_verbosity; }

std::string escapeLogText(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if ((byte < 0x20 && c != '\t') || byte == 0x7f) {
      out += "\\x";
      out += kHex[byte >> 4];
      out += kHex[byte & 0xf];
    } else {
      out += c;
    }
  }
  return out;
}

void logAccess(const std::string& method, const std::string& target, unsigned code, const std::string& served_by,
               double seconds, const std::string& client, const std::string& user_agent) {
  if (g_verbosity < 2) return;
  spdlog::info("access verb={} uri={} code={} served_by={} latency_ms={:.3f} client={} user_agent={}", method,
               cache::goJsonString(target), code, served_by, seconds * 1000, client, cache::goJsonString(user_agent));
}

}  // namespace proxy
