// The Accept header (proxy/media.h), parsed once per request as goautoneg.ParseAccept reads
// it, and the Status encoding negotiated from it (E1). Invariants: every range kept has a
// type and a subtype without '/' or ',' (goautoneg drops the others); "q" is never kept as
// a parameter; byQuality() is a permutation of ranges() with non-increasing quality
// wherever goautoneg's comparison decides by quality alone; parsing is deterministic and
// the raw header is the input without surrounding blanks.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_check.h"
#include "proxy/media.h"
#include "proxy/status_negotiation.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view header(reinterpret_cast<const char*>(data), size);
  const proxy::AcceptHeader accept = proxy::AcceptHeader::parse(header);
  for (const proxy::MediaRange& range : accept.ranges()) {
    FUZZ_CHECK(range.type.find('/') == std::string::npos && range.subtype.find('/') == std::string::npos);
    FUZZ_CHECK(range.type.find(',') == std::string::npos && range.subtype.find(',') == std::string::npos);
    FUZZ_CHECK(!range.param("q"));
  }
  const auto ordered = accept.byQuality();
  FUZZ_CHECK(ordered.size() == accept.ranges().size());
  for (const proxy::MediaRange& range : accept.ranges()) {
    FUZZ_CHECK(std::count(ordered.begin(), ordered.end(), &range) == 1);
  }
  FUZZ_CHECK(accept.raw().size() <= header.size());
  const proxy::AcceptHeader again = proxy::AcceptHeader::parse(header);
  FUZZ_CHECK(again.ranges().size() == accept.ranges().size() && again.raw() == accept.raw());
  FUZZ_CHECK(proxy::statusEncodingFor(again) == proxy::statusEncodingFor(accept));
  return 0;
}
