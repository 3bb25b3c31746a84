#pragma once
// Parsers from setting text to typed values. Each throws ConfigError naming
// the setting's origin and the offending text:
//   --log-format "xml": want text or json

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "config/config.h"
#include "config/settings.h"

namespace config {

ListenAddress parseListen(const Setting& setting);  // "host:port", "[::1]:port", ":port"
LogFormat parseLogFormat(const Setting& setting);
StoreEncoding parseStoreEncoding(const Setting& setting);
Mode parseMode(const Setting& setting);
ReadPolicy parseReadPolicy(const Setting& setting);
int parseVerbosity(const Setting& setting);  // 0..9
unsigned parseIoThreads(const Setting& setting);
uint64_t parseWholeNumber(const Setting& setting);  // decimal, 0..999999999
std::chrono::milliseconds parseTimeout(const Setting& setting);  // Go duration, >= 0
std::chrono::milliseconds parsePositiveDuration(const Setting& setting);  // Go duration, > 0
size_t parsePositiveCount(const Setting& setting);  // decimal, 1 to 999,999,999
unsigned parseCount(const Setting& setting);  // a decimal count, 0 to 10,000,000
bool parseBool(const Setting& setting);  // Go strconv.ParseBool spellings
std::vector<GroupResource> parseResourceList(const ListSetting& setting);

bool isLoopback(const std::string& host);

}  // namespace config
