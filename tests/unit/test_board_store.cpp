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

#include "wit/board_def.h"
#include "wit/error.h"
#include "wit/io.h"

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
