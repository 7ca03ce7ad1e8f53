// Nothing lost (issue 28): the same-file rule for every file a process read,
// the run-directory rule, the commitment pair's lock, and the index audit of
// its cached tree levels.
#include <catch2/catch.hpp>

#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "wit/base/bytes.h"
#include "wit/data/commitment.h"
#include "wit/base/error.h"
#include "wit/hash/hash.h"
#include "wit/data/index.h"
#include "wit/base/io.h"
#include "wit/hash/merkle.h"
#include "wit/proofs/proofs.h"

using namespace wit;
namespace fs = std::filesystem;
using Catch::Matchers::Contains;

namespace {

struct Dir {
  fs::path p;
  Dir() : p(fs::temp_directory_path() / ("wit-safety-" + std::to_string(getpid()) + "-" + std::to_string(rand()))) {
    fs::create_directories(p);
  }
  ~Dir() { fs::remove_all(p); }
  std::string put(const std::string& name, const std::string& content) const {
    fs::create_directories((p / name).parent_path());
    std::ofstream f(p / name, std::ios::binary);
    f << content;
    return (p / name).string();
  }
};

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

}  // namespace

TEST_CASE("a file the process read is never replaced by an output, however it was named", "[safety]") {
  Dir d;
  const std::string in = d.put("in.txt", "precious\n");
  CHECK(read_file(in) == "precious\n");
  // Through the same path, a hard link and a symbolic link.
  fs::create_hard_link(in, d.p / "hard.txt");
  fs::create_symlink(in, d.p / "soft.txt");
  for (const std::string& out : {in, (d.p / "hard.txt").string(), (d.p / "soft.txt").string()}) {
    note_output(out);  // as cli::run does for every output named on the command line
    CHECK_THROWS_WITH(write_file_atomic(out, "lost"), Contains("output is one of the inputs"));
  }
  CHECK(slurp(in) == "precious\n");
  // A file read after the output was opened is checked again before the rename.
  const std::string later = d.put("later.txt", "also precious\n");
  note_output(later);
  {
    AtomicFile f(later);
    f.write(std::string("lost"));
    MappedFile read_now(later);
    CHECK_THROWS_WITH(f.commit(), Contains("output is one of the inputs"));
  }
  CHECK(slurp(later) == "also precious\n");
  for (const auto& e : fs::directory_iterator(d.p)) CHECK(e.path().filename().string().find(".tmp.") == std::string::npos);
  // A file never read may be replaced; so may one the process read and
  // maintains itself (no output the user named).
  const std::string other = d.put("other.txt", "old");
  note_output(other);
  write_file_atomic(other, "new");
  CHECK(slurp(other) == "new");
  const std::string own = d.put("own.json", "1");
  CHECK(read_file(own) == "1");
  write_file_atomic(own, "2");
  CHECK(slurp(own) == "2");
}

TEST_CASE("no output goes inside a run directory unless the process writes that run", "[safety]") {
  Dir d;
  // A run as the trainer leaves it (train.lock), and one as a copy leaves it (run.json and run.wlog).
  d.put("locked/train.lock", "");
  d.put("copied/run.json", "{}");
  d.put("copied/run.wlog", "");
  d.put("copied/ckpt/step-000001.safetensors", "x");
  for (const char* out : {"locked/out.json", "copied/run.wlog", "copied/new.json", "copied/ckpt/step-000001.safetensors",
                                "copied/ckpt/deeper/new.json"})
    CHECK_THROWS_WITH(write_file_atomic((d.p / out).string(), "x"), Contains("output is inside the run directory"));
  CHECK(slurp((d.p / "copied/ckpt/step-000001.safetensors").string()) == "x");
  // A link from outside into a run is followed, and refused.
  fs::create_symlink(d.p / "copied/run.json", d.p / "link.json");
  CHECK_THROWS_WITH(write_file_atomic((d.p / "link.json").string(), "x"), Contains("inside the run directory"));
  CHECK(slurp((d.p / "copied/run.json").string()) == "{}");
  // A directory with only one of the two files is no run; beside a run is fine.
  d.put("half/run.json", "{}");
  write_file_atomic((d.p / "half/out.json").string(), "ok");
  write_file_atomic((d.p / "beside.json").string(), "ok");
  // The run's own writer may write in it, and replace what it read there.
  allow_run_writes((d.p / "locked").string());
  const std::string seed = d.put("locked/seed", "1");
  note_output(seed);
  CHECK(read_file(seed) == "1");
  write_file_atomic(seed, "2");
  CHECK(slurp(seed) == "2");
  CHECK_THROWS(write_file_atomic((d.p / "copied/new.json").string(), "x"));  // only that run
}

TEST_CASE("a new file that took the inode of a file read and deleted is not an input", "[safety]") {
  Dir d;
  const std::string gone = d.put("gone.txt", "read, then deleted\n");
  CHECK(read_file(gone) == "read, then deleted\n");
  const auto inode = [](const fs::path& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 ? st.st_ino : ino_t(0);
  };
  const ino_t old = inode(gone);
  fs::remove(gone);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // past the coarse clock's tick
  // The file system hands the inode out again (ext4 does, soon): find that file.
  std::string reused;
  for (int i = 0; i < 200 && reused.empty(); i++) {
    const std::string p = d.put("new" + std::to_string(i) + ".txt", "x");
    if (inode(p) == old) reused = p;
  }
  if (reused.empty()) {
    WARN("the file system did not reuse the inode: nothing to check");
    return;
  }
  note_output(reused);
  write_file_atomic(reused, "replaced");
  CHECK(slurp(reused) == "replaced");
}

TEST_CASE("the commitment pair's lock: one writer, many readers, never both", "[safety]") {
  Dir d;
  const std::string c = d.put("c.commit.json", "{}");
  {
    auto writer = lock_commit_pair(c, true);
    REQUIRE(writer);
    // Another process would wait: a non-blocking shared flock on the directory fails meanwhile.
    const int fd = ::open(d.p.c_str(), O_RDONLY | O_DIRECTORY);
    REQUIRE(fd >= 0);
    CHECK(::flock(fd, LOCK_SH | LOCK_NB) != 0);
    ::close(fd);
  }
  auto r1 = lock_commit_pair(c, false), r2 = lock_commit_pair(c, false);
  CHECK(r1);
  CHECK(r2);
  CHECK(!lock_commit_pair("-", true));
}

TEST_CASE("the audit checks the cached tree levels against the leaves, and no proof leaves a corrupt index",
          "[safety][index]") {
  Dir d;
  std::string text;
  for (int i = 0; i < 600; i++) text += "record " + std::to_string(i) + "\n";
  ReaderSpec lines;
  lines.kind = ReaderKind::kLines;
  const CommitResult r = commit_dataset(lines, {d.put("big.txt", text)}, 1);
  Bytes b = encode_index(r);
  const uint64_t n = r.tree.size();
  REQUIRE(n == 600);
  // Level 8 holds the nodes over [0, 256) and [256, 512); level 9 the one
  // over [0, 512), from which the root is taken. Change the first level-8
  // node and fix both checksums: the root still reproduces.
  const size_t node = kIndexHeaderSize + 40 * n;
  b[node + 5] ^= 0x40;
  put_le64(b.data() + 96, xxh3_64(ByteView(b.data() + kIndexHeaderSize, b.size() - kIndexHeaderSize)));
  put_le64(b.data() + 104, xxh3_64(ByteView(b.data(), 104)));
  const Index idx(ByteView(b), "flipped.widx");
  CHECK_THROWS_WITH(idx.audit(1), Contains("cached tree node 0 is not the hash of its leaves"));
  CHECK_THROWS_WITH(idx.check_matches(r.commitment, "big.commit.json"), Contains("cached tree node 0"));
  // A record whose proof climbs past that node gets no proof at all.
  CHECK_THROWS_WITH(prove_inclusion(idx, r.tree.leaf(300), 300), Contains("index is corrupt (the proof it gives"));
  // The untouched index audits and proves as before.
  const Bytes good = encode_index(r);
  const Index ok(ByteView(good), "good.widx");
  ok.audit(1);
  const InclusionProof p = prove_inclusion(ok, r.tree.leaf(300), 300);
  CHECK(verify_inclusion(kDataTree, p, r.commitment.root) == ProofError::kOk);
}
