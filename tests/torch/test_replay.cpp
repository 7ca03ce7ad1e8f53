// The replay verifier's opened response (replay.h, issue 39 item 4): a
// response's manifest.json parsed once, by the decode's member limit (a state
// member follows it) or right after the decode (none does), the same either
// way, and where it is none, check 1's reason ("manifest is not valid json",
// or the manifest reader's own message).
#include <catch2/catch.hpp>

#include <string>

#include <nlohmann/json.hpp>

#include "wit/base/error.h"
#include "wit/base/io.h"
#include "wit/replay/replay.h"
#include "wit/run/bundle.h"
#include "wit/run/manifest.h"

using namespace wit;

namespace {

// The reason a parse is no manifest: what its get() throws ("" when it is one).
std::string reason(const ResponseManifest& m) {
  try {
    m.get();
    return "";
  } catch (const Error& e) {
    return e.what();
  }
}

}  // namespace

TEST_CASE("a response's manifest is parsed once, by the decode or after it, with check 1's reasons", "[replay]") {
  Manifest m;
  m.model.n_layer = 1;
  m.model.d_model = 32;
  m.batch_size = 4;
  m.steps = 8;
  m.data_n = 100;
  const TempDir tmp("wit-test");
  // A bundle with `manifest` as its manifest.json (none: no such member) and, with_state, a state member after it.
  auto write = [&](const std::string& name, const std::optional<std::string>& manifest, bool with_state) {
    Bundle b;
    if (manifest) b.put("manifest.json", *manifest);
    b.put("seed", std::string("00\n"));
    if (with_state) b.put("state/000000.safetensors", std::string(16, 'x'));
    const std::string path = tmp / name;
    b.save(path);
    return path;
  };
  for (bool with_state : {false, true}) {
    INFO("with a state member: " << with_state);
    const OpenedResponse r = OpenedResponse::open(write("ok.wbundle", m.dump(), with_state));
    INFO(reason(r.manifest));
    REQUIRE(r.manifest.manifest);
    CHECK(!r.manifest.error);
    CHECK(r.manifest.get().run_id() == m.run_id());
    CHECK(reason(r.manifest).empty());

    CHECK(reason(OpenedResponse::open(write("bad.wbundle", std::string("not json {"), with_state)).manifest) ==
          "manifest is not valid json");

    const std::string invalid = R"({"format": "wit.run", "version": 1})";
    std::string want;
    try {
      Manifest::from_json(nlohmann::json::parse(invalid), "manifest.json");
    } catch (const Error& e) {
      want = e.what();
    }
    REQUIRE(!want.empty());
    const OpenedResponse v = OpenedResponse::open(write("invalid.wbundle", invalid, with_state));
    CHECK(!v.manifest.manifest);
    CHECK(reason(v.manifest) == want);
    // The same as parsing the text directly.
    CHECK(reason(ResponseManifest::parse(invalid)) == want);
  }
  // No manifest.json: neither a manifest nor a reason (the bundle answers no challenge: NotAnAnswer, earlier).
  const OpenedResponse n = OpenedResponse::open(write("none.wbundle", std::nullopt, true));
  CHECK(!n.manifest.manifest);
  CHECK(!n.manifest.error);
  CHECK(reason(n.manifest) == "the bundle has no manifest.json");
}
