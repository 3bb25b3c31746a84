#pragma once
// Process-wide logging setup (spdlog). Verbosity follows klog's -v habit:
// 0 errors/warnings/startup, 1 lifecycle, 2 one access-log line per request,
// 4+ debugging detail.

#include <string>
#include <string_view>

namespace proxy {

enum class LogFormat { Text, Json };

struct LoggingOptions {
  LogFormat format = LogFormat::Text;
  int verbosity = 0;
};

// Installs the default logger on stderr. Call once from main before threads start.
void setupLogging(const LoggingOptions& options);

// The verbosity set by setupLogging.
int logVerbosity();

// A message as the text format writes it: control characters escaped (\r, \n, \xHH; tabs
// kept), so one message is one line whatever a request put into it (issue 36, finding 4: a
// namespace decoded from %0D%0A forged log lines). The JSON format quotes the message.
std::string escapeLogText(std::string_view text);

// One access-log line (at verbosity >= 2).
void logAccess(const std::string& method, const std::string& target, unsigned code, const std::string& served_by,
               double seconds, const std::string& client, const std::string& user_agent);

}  // namespace proxy
