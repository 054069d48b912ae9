// Catch2's implementation, compiled once for every test binary, and the entry points of catch_runner.h.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <algorithm>
#include "catch_runner.h"

namespace te_test {

int RunCatch(int argc, char* argv[]) { return Catch::Session().run(argc, argv); }

int CountTaggedCases(const char* tag) {
  int n = 0;
  for (const Catch::TestCase& tc : Catch::getRegistryHub().getTestCaseRegistry().getAllTests()) {
    if (std::find(tc.lcaseTags.begin(), tc.lcaseTags.end(), tag) != tc.lcaseTags.end()) ++n;
  }
  return n;
}

}  // namespace te_test
