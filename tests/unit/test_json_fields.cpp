// jsonf (json_fields.h): the one JSON-parse error and the typed field readers,
// with their one-line messages "KIND: WHY: WHERE".
#include <catch2/catch.hpp>
#include <cstdint>
#include <string>

#include "wit/base/error.h"
#include "wit/base/json_fields.h"

using namespace wit;
using nlohmann::json;

namespace {

constexpr jsonf::Fields F{"invalid thing"};

}  // namespace

TEST_CASE("jsonf: one JSON-parse error, 'KIND: not valid json: WHERE'", "[json]") {
  CHECK(F.parse("{\"a\": [1, 2]}", "t.json") == json{{"a", {1, 2}}});
  CHECK(jsonf::parse("  3 \n", "invalid thing", "t.json") == json(3));
  for (const char* bad : {"", "{", "{\"a\": 1,}", "[1 2]", "nul", "{\"a\": 1} x"})
    CHECK_THROWS_WITH(F.parse(bad, "t.json"), "invalid thing: not valid json: t.json");
}

TEST_CASE("jsonf: typed field readers name the field and the kind", "[json]") {
  const json j = json::parse(R"({"s": "x", "n": 2.5, "i": 7, "neg": -1, "big": 18446744073709551615,
                                "h": "00000000000000000000000000000000000000000000000000000000000000ff"})");
  CHECK(F.str(j, "s", "t.json") == "x");
  CHECK_THROWS_WITH(F.str(j, "n", "t.json"), "invalid thing: field 'n' is not a string: t.json");
  CHECK_THROWS_WITH(F.str(j, "none", "t.json"), "invalid thing: missing field 'none': t.json");
  CHECK(F.number(j, "n", "t.json") == 2.5);
  CHECK(F.number(j, "i", "t.json") == 7.0);
  CHECK_THROWS_WITH(F.number(j, "s", "t.json", "outer"), "invalid thing: field 'outer.s' is not a number: t.json");
  CHECK_THROWS_WITH(F.number(j, "s", "t.json"), "invalid thing: field 's' is not a number: t.json");
  CHECK(F.u64(j, "big", "t.json") == UINT64_MAX);
  CHECK(F.hash(j, "h", "t.json").hex().substr(62) == "ff");
  CHECK_THROWS_WITH(F.hash(j, "s", "t.json"), "invalid thing: field 's' is not 64 hex digits: t.json");
  // count: a non-negative integer that fits int64, of a value already taken out.
  CHECK(F.count(j["i"], "i", "t.json") == 7);
  CHECK(F.count(json(int64_t(0)), "zero", "t.json") == 0);
  for (const char* k : {"neg", "big", "n", "s"})
    CHECK_THROWS_WITH(F.count(j[k], std::string("a.") + k, "t.json"),
                      std::string("invalid thing: field 'a.") + k + "' is not a non-negative integer: t.json");
}
