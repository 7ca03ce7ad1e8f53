// A test case that cannot run on this machine (a missing CPU feature or
// package) says so with WIT_SKIP(why): the reason is printed and the test
// program exits 77 instead of 0, which ctest reports as "Skipped"
// (SKIP_RETURN_CODE 77), never as a pass. (Catch2 v2 has no SKIP of its own.)
#pragma once
#include <catch2/catch.hpp>

namespace wit_test {
void mark_skipped();
}

#define WIT_SKIP(why)                \
  do {                               \
    WARN("skipped: " << why);        \
    ::wit_test::mark_skipped();      \
    return;                          \
  } while (0)
