// Audit reads each stored file once (docs/board.md, "Audit from the store"):
// StoredCopy copies STORE/rel into a private temporary while hashing the same
// bytes, so a store that serves the right bytes to the hash and other bytes
// to a second read (a changing file, a malicious server) cannot feed the
// check anything but what was hashed. The store is injected: an opener that
// serves the right file on its first open and other bytes on any later one,
// which the former hash-then-read path fell for.
#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "wit/board/def.h"
#include "wit/run/bundle.h"
#include "wit/base/error.h"
#include "wit/base/io.h"
#include "wit/run/run_bundle.h"

using namespace wit;
namespace fs = std::filesystem;

namespace {

Fd open_read(const std::string& p) { return Fd(::open(p.c_str(), O_RDONLY | O_CLOEXEC)); }

}  // namespace

TEST_CASE("audit reads a stored file once: the bytes it checks are the bytes it hashed", "[board][store]") {
  TempDir t("wit-test-store");
  const std::string store = t.path(), rel = "responses/r.wbundle";
  fs::create_directories(fs::path(store) / "responses");
  const std::string good(3 << 20, 'g'), other(3 << 20, 'x');  // over one read's piece
  write_file_atomic(store + "/" + rel, good);
  write_file_atomic(t / "other", other);
  const std::string digest = file_digest(store + "/" + rel);

  SECTION("the store changes the file after the first open: the copy is what was hashed") {
    int opens = 0;
    const StoreOpen changing = [&](const std::string& p) { return open_read(opens++ == 0 ? p : t / "other"); };
    const StoredCopy c(store, rel, digest, "response", {}, changing);
    CHECK(opens == 1);
    CHECK(read_file(c.path()) == good);
    CHECK(fs::path(c.path()).filename() == "r.wbundle");
    // The store's file changes in place afterwards: the private copy does not.
    write_file_atomic(store + "/" + rel, other);
    CHECK(read_file(c.path()) == good);
    const std::string kept = c.path();
    CHECK(fs::exists(kept));
  }
  SECTION("the copy goes with the object") {
    std::string kept;
    {
      const StoredCopy c(store, rel, digest, "response", {});
      kept = c.path();
      CHECK(fs::exists(kept));
    }
    CHECK_FALSE(fs::exists(kept));
    CHECK_FALSE(fs::exists(fs::path(kept).parent_path()));
  }
  SECTION("other bytes on the one read: not re-verifiable, nothing kept") {
    const StoreOpen wrong = [&](const std::string&) { return open_read(t / "other"); };
    try {
      const StoredCopy c(store, rel, digest, "response", {}, wrong);
      FAIL("accepted other bytes");
    } catch (const NotReVerifiable& e) {
      CHECK_THAT(std::string(e.what()), Catch::Contains("the store serves other bytes for its response " + rel));
    }
  }
  SECTION("missing, and pruned: not re-verifiable, saying when") {
    const std::map<std::string, std::string> pruned = {{"weights/w.safetensors", "pruned from the store on 2026-01-02 (runs a)"}};
    try {
      const StoredCopy c(store, "weights/w.safetensors", digest, "weights", pruned);
      FAIL("accepted a missing file");
    } catch (const NotReVerifiable& e) {
      CHECK_THAT(std::string(e.what()), Catch::Contains("is not in the store") && Catch::Contains("pruned from the store on 2026-01-02"));
    }
    fs::create_directories(fs::path(store) / "weights/d.safetensors");  // a directory is not a stored file
    CHECK_THROWS_AS(StoredCopy(store, "weights/d.safetensors", digest, "weights", {}), NotReVerifiable);
  }
}

TEST_CASE("a response split into parts re-assembles member for member (SpooledBundle::assemble)", "[board][store]") {
  const TempDir t("wit-parts");
  // A response as add receives it: small members and a state large enough to spill to the scratch file.
  Bundle whole;
  whole.put("challenge.json", std::string("{\"steps\": [1]}"));
  whole.put("manifest.json", std::string("{}"));
  Bytes state(SpooledBundle::kKeep + 12345);
  for (size_t i = 0; i < state.size(); i++) state[i] = uint8_t(i * 131 + 7);
  whole.put("state/00000000.safetensors", state);
  const std::string path = t / "r.wbundle";
  const Bytes encoded = whole.encode();
  write_file_atomic(path, std::string(encoded.begin(), encoded.end()), true);
  const SpooledBundle resp = SpooledBundle::open(path);

  // The board's split: the state is a part, the rest the small bundle; both in the store by digest.
  const std::string store = t / "store";
  StagedResponse staged = stage_response(store, resp);
  REQUIRE(staged.parts.size() == 1);
  CHECK(staged.parts[0].name == "state/00000000.safetensors");
  CHECK(staged.parts[0].bytes == state.size());
  CHECK(staged.parts[0].digest == member_digest(std::string(state.begin(), state.end())));
  staged.keep(store);
  const std::string small = store + "/responses/" + staged.digest + ".wbundle";
  REQUIRE(fs::is_regular_file(small));
  CHECK(file_digest(store + "/" + staged.parts[0].path()) == staged.parts[0].digest);  // raw: the member's bytes
  const SpooledBundle kept = SpooledBundle::open(small);
  CHECK(kept.names() == std::vector<std::string>{"challenge.json", "manifest.json"});

  // Re-assembled: the same members and bytes as the response given.
  SpooledBundle back = SpooledBundle::assemble("assembled");
  for (const auto& name : kept.names()) back.add(name, kept.get(name));
  // add_file hashes what it appends: the digest the board compares with the part's is of the member's bytes.
  const std::string part = store + "/" + staged.parts[0].path();
  const FileDigest d = back.add_file(staged.parts[0].name, open_read(part).get(), part);
  CHECK(d.hex == staged.parts[0].digest);
  CHECK(d.bytes == state.size());
  CHECK(d.whole);
  CHECK(back.names() == resp.names());
  for (const auto& name : resp.names()) CHECK(back.get(name) == resp.get(name));
  CHECK(back.spilled() == 1);
  const SpooledBundle::View v = back.view("state/00000000.safetensors");
  CHECK(Bytes(v.bytes().data, v.bytes().data + v.bytes().size) == state);
  CHECK_THROWS_WITH(back.add("manifest.json", Bytes{}), Catch::Contains("duplicate member name manifest.json"));
  CHECK_THROWS_WITH(back.add_file("state/00000000.safetensors", open_read(small).get(), small),
                    Catch::Contains("duplicate member name"));
  CHECK_THROWS_WITH(back.add_file("../x", open_read(small).get(), small), Catch::Contains("invalid member name"));
  // A part with one byte changed: another digest (what audit reports as the store serving other bytes).
  Bytes other = state;
  other[other.size() / 2] ^= 1;
  write_file_atomic(t / "other", std::string(other.begin(), other.end()));
  SpooledBundle again = SpooledBundle::assemble("again");
  CHECK(again.add_file("state/00000000.safetensors", open_read(t / "other").get(), t / "other").hex != staged.parts[0].digest);
}
