// The one doctest runner every unit-test binary links: compiling doctest's
// implementation once instead of once per binary saves most of a minute per build.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
