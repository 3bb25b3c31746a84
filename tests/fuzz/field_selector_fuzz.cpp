// Field selector parsing and binding must never crash; a bound selector must evaluate,
// and every equality term must be reported by requiredValue().
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "cache/selectors/field_selector.h"
#include "fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  auto syntax = cache::FieldSelector::parseSyntax(input);
  if (!syntax) {
    FUZZ_CHECK(!syntax.error().empty());
    return 0;
  }
  static const auto pods = cache::FieldSpec::forBuiltin("", "v1", "pods", true);
  static const auto crd = cache::FieldSpec::forCustomResource(false, {".spec.color"});
  const cache::Fields fields{{"spec.nodeName", "n1"}, {"status.phase", "Running"}};
  for (const auto* spec : {pods.get(), crd.get()}) {
    auto bound = syntax->bind(*spec);
    if (!bound) continue;
    (void)bound->matches(fields, "name", "ns");
    for (const auto& r : bound->requirements()) {
      if (r.op != cache::FieldOperator::NotEquals) FUZZ_CHECK(bound->requiredValue(r.field).has_value());
    }
  }
  return 0;
}
