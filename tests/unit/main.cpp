// Catch2 main for wit's unit tests: exit 77 (ctest's skip code) when the run
// passed but a test case skipped itself (skip.h), so a skip is never a pass.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "skip.h"

namespace {
bool skipped = false;
}

void wit_test::mark_skipped() { skipped = true; }

int main(int argc, char** argv) {
  const int rc = Catch::Session().run(argc, argv);
  return rc == 0 && skipped ? 77 : rc;
}
