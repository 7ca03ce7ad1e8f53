// Output safety: AtomicFile never replaces a link, device or directory by
// rename and cleans up after killed writers; FileLock names its holder; no
// output may be one of the inputs.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <system_error>
#include <thread>
#include <vector>

#include "wit/base/error.h"
#include "wit/base/io.h"
#include "wit/base/parallel.h"

using namespace wit;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

fs::path fresh_dir(const std::string& what) {
  const fs::path d = fs::temp_directory_path() / ("wit-io-" + what + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string slurp(const fs::path& p) {
  std::ifstream f(p);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

}  // namespace

TEST_CASE("io: an output link is followed, a device written in place, a directory refused", "[io]") {
  const fs::path d = fresh_dir("atomic");
  std::ofstream(d / "real.json") << "old";
  fs::create_symlink("real.json", d / "link.json");
  write_file_atomic((d / "link.json").string(), "new");
  CHECK(fs::is_symlink(d / "link.json"));
  CHECK(slurp(d / "real.json") == "new");
  fs::create_symlink("nowhere.json", d / "dangling.json");
  CHECK_THROWS_WITH(write_file_atomic((d / "dangling.json").string(), "x"), Contains("symbolic link to nothing"));
  CHECK(fs::is_symlink(d / "dangling.json"));
  CHECK_THROWS_WITH(write_file_atomic(d.string(), "x"), Contains("output is a directory"));
  // /dev/full stays the device: the write fails, nothing is renamed over it.
  if (fs::exists("/dev/full")) {
    CHECK_THROWS_WITH(write_file_atomic("/dev/full", "x"), Contains("cannot write: no space left"));
    CHECK(fs::is_character_file("/dev/full"));
  }
  write_file_atomic("/dev/null", "x");
  CHECK(fs::is_character_file("/dev/null"));
  // A new file gets the mode asked for.
  { AtomicFile f((d / "secret").string(), false, 0600); f.write("s"); f.commit(); }
  CHECK((fs::status(d / "secret").permissions() & fs::perms::all) == (fs::perms::owner_read | fs::perms::owner_write));
  fs::remove_all(d);
}

TEST_CASE("io: sync() early, more written after it, commit without the directory's fsync", "[io]") {
  // What wit-commit does with its index: sync on the writer thread, then
  // rename the pair and fsync their directory once.
  const fs::path d = fresh_dir("sync");
  std::ofstream(d / "link-target.widx") << "old";
  fs::create_symlink("link-target.widx", d / "i.widx");
  {
    AtomicFile f((d / "i.widx").string(), true);
    f.write("head ");
    f.sync();
    f.sync();  // nothing new: a no-op
    f.write("tail");  // written after the sync: commit() syncs again
    f.write_at(0, ByteView(std::string("HEAD")));
    CHECK(fs::path(f.target()) == fs::canonical(d / "link-target.widx"));
    CHECK(slurp(d / "link-target.widx") == "old");  // nothing replaced before commit
    f.commit(false);
    sync_parent_dir(f.target());
  }
  CHECK(fs::is_symlink(d / "i.widx"));
  CHECK(slurp(d / "link-target.widx") == "HEAD tail");
  CHECK(std::distance(fs::directory_iterator(d), fs::directory_iterator()) == 2);  // no temporary left
  {
    // Synced, then dropped without commit: nothing is replaced.
    AtomicFile f((d / "i.widx").string(), true);
    f.write("lost");
    f.sync();
  }
  CHECK(slurp(d / "link-target.widx") == "HEAD tail");
  CHECK(std::distance(fs::directory_iterator(d), fs::directory_iterator()) == 2);
  fs::remove_all(d);
}

namespace {

// A pid that is no process: a child's, reaped.
pid_t dead_pid() {
  const pid_t p = ::fork();
  if (p == 0) ::_exit(0);
  ::waitpid(p, nullptr, 0);
  return p;
}

// Whether the file system of `dir` makes unnamed files (O_TMPFILE).
bool unnamed_files_in(const fs::path& dir) {
  const int fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  ::close(fd);
  return true;
}

std::vector<std::string> names_in(const fs::path& d) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(d)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST_CASE("io: a killed writer's temporaries are removed by the next writer, a live one's are not", "[io]") {
  const fs::path d = fresh_dir("stale");
  const fs::path out = d / "x.widx";
  const auto old = fs::file_time_type::clock::now() - std::chrono::minutes(5);
  const std::string gone = std::to_string(dead_pid()), alive = std::to_string(::getpid());
  std::ofstream(d / "x.widx.tmp.AbC123") << "half";  // a writer's from before the pid was in the name: by age
  fs::last_write_time(d / "x.widx.tmp.AbC123", old);
  std::ofstream(d / "x.widx.tmp.young1") << "half";  // too young to judge
  std::ofstream(d / ("x.widx.tmp." + gone + ".Young2")) << "half";  // young, but its writer is gone
  std::ofstream(d / ("x.widx.tmp." + alive + ".Young3")) << "half";  // young, its writer alive (not locked yet)
  std::ofstream(d / ("x.widx.tmp." + alive + ".Old456")) << "half";  // old and unlocked: its writer lost it
  fs::last_write_time(d / ("x.widx.tmp." + alive + ".Old456"), old);
  std::ofstream(d / "x.widx.tmp.not.a.temporary") << "kept";  // not a name AtomicFile makes
  fs::last_write_time(d / "x.widx.tmp.not.a.temporary", old);
  std::ofstream(d / "y.widx.tmp.Other1") << "half";  // another output's
  fs::last_write_time(d / "y.widx.tmp.Other1", old);
  // A live writer's temporary: a child holds one open and locked, named (as
  // on a file system without O_TMPFILE) and old.
  int ready[2];
  REQUIRE(::pipe(ready) == 0);
  const pid_t p = ::fork();
  REQUIRE(p >= 0);
  if (p == 0) {
    ::setenv("WIT_NAMED_TEMPORARIES", "1", 1);
    AtomicFile f(out.string());
    f.write("live");
    [[maybe_unused]] ssize_t w = ::write(ready[1], "r", 1);
    ::pause();
    ::_exit(0);
  }
  char c;
  REQUIRE(::read(ready[0], &c, 1) == 1);
  const std::string childs = "x.widx.tmp." + std::to_string(p) + ".";
  int child_temporaries = 0;
  for (const auto& e : fs::directory_iterator(d))
    if (e.path().filename().string().rfind(childs, 0) == 0) {
      fs::last_write_time(e.path(), old);
      child_temporaries++;
    }
  CHECK(child_temporaries == 1);
  write_file_atomic(out.string(), "done");
  CHECK(slurp(out) == "done");
  CHECK_FALSE(fs::exists(d / "x.widx.tmp.AbC123"));
  CHECK_FALSE(fs::exists(d / ("x.widx.tmp." + gone + ".Young2")));
  CHECK_FALSE(fs::exists(d / ("x.widx.tmp." + alive + ".Old456")));
  CHECK(fs::exists(d / "x.widx.tmp.young1"));
  CHECK(fs::exists(d / ("x.widx.tmp." + alive + ".Young3")));
  CHECK(fs::exists(d / "x.widx.tmp.not.a.temporary"));
  CHECK(fs::exists(d / "y.widx.tmp.Other1"));
  int live = 0;
  for (const auto& e : fs::directory_iterator(d)) live += e.path().filename().string().rfind(childs, 0) == 0;
  CHECK(live == 1);  // the child's, locked
  ::kill(p, SIGKILL);
  ::waitpid(p, nullptr, 0);
  // The child is gone: its temporary goes with the next write at once, however young.
  for (const auto& e : fs::directory_iterator(d))
    if (e.path().filename().string().rfind(childs, 0) == 0) fs::last_write_time(e.path(), fs::file_time_type::clock::now());
  write_file_atomic(out.string(), "again");
  live = 0;
  for (const auto& e : fs::directory_iterator(d)) live += e.path().filename().string().rfind(childs, 0) == 0;
  CHECK(live == 0);
  fs::remove_all(d);
}

TEST_CASE("io: the name of a temporary, and the output it is for", "[io]") {
  CHECK(temporary_target("d/x.widx.tmp.1234.AbC123") == "d/x.widx");
  CHECK(temporary_target("x.widx.tmp.AbC123") == "x.widx");  // a writer's from before the pid
  CHECK(temporary_target("/a/b.tmp.c/x.json.tmp.77.zzzzzz") == "/a/b.tmp.c/x.json");
  CHECK(temporary_target("x.widx.tmp.12a.AbC123") == "");
  CHECK(temporary_target("x.widx.tmp.1234.AbC12") == "");
  CHECK(temporary_target("x.widx.tmp.AbC12!") == "");
  CHECK(temporary_target("d/.tmp.AbC123") == "");
  CHECK(temporary_target("x.widx") == "");
}

TEST_CASE("io: an output has no name on disk until it is committed, and a named one only while written", "[io]") {
  for (const bool named : {false, true}) {
    const fs::path d = fresh_dir(named ? "named" : "unnamed");
    if (named) ::setenv("WIT_NAMED_TEMPORARIES", "1", 1);
    {
      AtomicFile a((d / "a.json").string());
      a.write("whole");
      if (named) {
        const auto in = names_in(d);
        REQUIRE(in.size() == 1);
        CHECK(in[0].rfind("a.json.tmp." + std::to_string(::getpid()) + ".", 0) == 0);
        CHECK(temporary_target((d / in[0]).string()) == (d / "a.json").string());
      } else if (unnamed_files_in(d)) {
        CHECK(names_in(d).empty());
      }
      a.commit();
      AtomicFile b((d / "b.json").string());
      b.write("dropped");
    }
    ::unsetenv("WIT_NAMED_TEMPORARIES");
    CHECK(names_in(d) == std::vector<std::string>{"a.json"});
    CHECK(slurp(d / "a.json") == "whole");
    fs::remove_all(d);
  }
}

TEST_CASE("io: a lock is exclusive and its loser is told who holds it", "[io][lock]") {
  const fs::path d = fresh_dir("lock");
  const std::string lock = (d / "train.lock").string();
  int ready[2];
  REQUIRE(::pipe(ready) == 0);
  const pid_t p = ::fork();
  REQUIRE(p >= 0);
  if (p == 0) {
    const FileLock l = FileLock::try_hold(lock, "the run directory");
    [[maybe_unused]] ssize_t w = ::write(ready[1], "r", 1);
    ::pause();
    ::_exit(0);
  }
  char c;
  REQUIRE(::read(ready[0], &c, 1) == 1);
  CHECK_THROWS_WITH(FileLock::try_hold(lock, "the run directory"),
                    Contains("the run directory is in use by pid " + std::to_string(p) + " on "));
  ::kill(p, SIGKILL);
  ::waitpid(p, nullptr, 0);
  // The holder is gone: the lock is free, whatever its file says.
  const FileLock mine = FileLock::try_hold(lock, "the run directory");
  CHECK_THAT(slurp(lock), Contains("pid " + std::to_string(::getpid()) + " on "));
  CHECK_THROWS_WITH(FileLock::wait_existing((d / "none").string(), "the bundle"), Contains("cannot open the bundle"));
  fs::remove_all(d);
}

TEST_CASE("io: no output may be one of the inputs", "[io]") {
  const fs::path d = fresh_dir("apart");
  std::ofstream(d / "train.txt") << "a\n";
  fs::create_hard_link(d / "train.txt", d / "alias.txt");
  fs::create_symlink("train.txt", d / "link.txt");
  const std::string in = (d / "train.txt").string();
  CHECK_THROWS_WITH(check_outputs_apart({in}, {in}), Contains("output is one of the inputs"));
  CHECK_THROWS_WITH(check_outputs_apart({in}, {(d / "alias.txt").string()}), Contains("output is one of the inputs"));
  CHECK_THROWS_WITH(check_outputs_apart({(d / "link.txt").string()}, {in}), Contains("output is one of the inputs"));
  CHECK_THROWS_WITH(check_outputs_apart({in}, {(d / "a.json").string(), (d / "./a.json").string()}),
                    Contains("two outputs name the same file"));
  CHECK_NOTHROW(check_outputs_apart({in, "-"}, {(d / "new.json").string(), "-", "/dev/null", "/dev/null"}));
  fs::remove_all(d);
}

namespace {

// The signal path of a child: what cli.cpp's handler does, then the exit.
void child_handler(int) {
  remove_live_temporaries();
  ::_exit(143);
}

}  // namespace

TEST_CASE("io: an interrupted process leaves no temporary behind", "[io]") {
  for (const bool named : {false, true}) {
    const fs::path d = fresh_dir("live");
    const pid_t p = ::fork();
    REQUIRE(p >= 0);
    if (p == 0) {
      if (named) ::setenv("WIT_NAMED_TEMPORARIES", "1", 1);
      AtomicFile a((d / "a.json").string()), b((d / "b.widx").string(), true);
      a.write("half");
      b.write("half");
      { AtomicFile c((d / "c.json").string()); c.write("whole"); c.commit(); }
      remove_live_temporaries();  // what the Ctrl-C handler does before it exits
      ::_exit(0);
    }
    int st = 0;
    ::waitpid(p, &st, 0);
    REQUIRE(WIFEXITED(st));
    CHECK(names_in(d) == std::vector<std::string>{"c.json"});
    fs::remove_all(d);
  }
}

TEST_CASE("io: a signal waits for an output being published; none is begun after it", "[io]") {
  for (const bool named : {false, true}) {
    const fs::path d = fresh_dir("section");
    const pid_t p = ::fork();
    REQUIRE(p >= 0);
    if (p == 0) {
      if (named) ::setenv("WIT_NAMED_TEMPORARIES", "1", 1);
      ::signal(SIGTERM, child_handler);
      AtomicFile a((d / "a.json").string()), b((d / "b.json").string()), c((d / "c.json").string());
      a.write("pair");
      b.write("pair");
      c.write("never");
      {
        const OutputSection pair;
        ::kill(::getpid(), SIGTERM);  // held until the section ends: a and b go in together
        a.commit();
        b.commit();
      }
      ::_exit(0);  // not reached: the signal ends the process at the section's end
    }
    int st = 0;
    ::waitpid(p, &st, 0);
    CHECK((WIFEXITED(st) && WEXITSTATUS(st) == 143));
    CHECK(names_in(d) == (std::vector<std::string>{"a.json", "b.json"}));
    fs::remove_all(d);
  }
  // A thread that would begin an output once the signal path has begun stops there.
  const fs::path d = fresh_dir("ending");
  const pid_t p = ::fork();
  REQUIRE(p >= 0);
  if (p == 0) {
    ::setenv("WIT_NAMED_TEMPORARIES", "1", 1);  // a named one would show
    remove_live_temporaries();
    std::thread late([&] {
      AtomicFile late_one((d / "late.json").string());  // stops inside, for good
      ::_exit(3);
    });
    late.detach();
    ::usleep(100000);
    ::_exit(143);
  }
  int st = 0;
  ::waitpid(p, &st, 0);
  CHECK((WIFEXITED(st) && WEXITSTATUS(st) == 143));
  CHECK(names_in(d).empty());
  fs::remove_all(d);
}

TEST_CASE("io: a temporary directory goes with its contents; a scratch file has no name at all", "[io]") {
  std::string kept;
  {
    const TempDir d("wit-io-tempdir");
    kept = d.path();
    CHECK(fs::is_directory(kept));
    CHECK((fs::status(kept).permissions() & fs::perms::all) == fs::perms::owner_all);
    write_file_atomic(d / "a", "x");
    fs::create_directories(d / "sub/deeper");
  }
  CHECK(!fs::exists(kept));

  const fs::path dir = fresh_dir("scratch");
  const char* old = std::getenv("TMPDIR");
  const std::string saved = old ? old : "";
  ::setenv("TMPDIR", dir.c_str(), 1);
  {
    ScratchFile s;
    s.append(ByteView(std::string_view("hello ")));
    s.append(ByteView(std::string_view("world")));
    CHECK(s.size() == 11);
    uint8_t buf[5];
    s.read(6, buf, 5);
    CHECK(std::string(reinterpret_cast<char*>(buf), 5) == "world");
    CHECK_THROWS_WITH(s.read(8, buf, 4), Contains("scratch read past its end"));
    CHECK(fs::is_empty(dir));  // nothing under any name, even while it is in use
  }
  ::setenv("TMPDIR", (dir / "missing").c_str(), 1);
  CHECK_THROWS_WITH(ScratchFile(), Contains("cannot create a scratch file"));
  CHECK_THROWS_WITH(TempDir(), Contains("cannot create a temporary directory"));
  if (old) ::setenv("TMPDIR", saved.c_str(), 1);
  else ::unsetenv("TMPDIR");
  fs::remove_all(dir);
}

TEST_CASE("io: Fd closes what it owns once, on destruction, reset or close; release gives it up", "[io][fd]") {
  auto is_open = [](int fd) { return ::fcntl(fd, F_GETFD) != -1; };
  int n;
  {
    Fd a(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    REQUIRE(a.ok());
    n = a.get();
    Fd b(std::move(a));
    CHECK_FALSE(a.ok());
    CHECK(b.get() == n);
    CHECK(is_open(n));
  }
  CHECK_FALSE(is_open(n));
  Fd c(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  n = c.get();
  errno = ENOSPC;
  c.reset();
  CHECK(errno == ENOSPC);  // an error message built after reset still names the first failure
  CHECK_FALSE(is_open(n));
  Fd d(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  n = d.release();
  CHECK_FALSE(d.ok());
  CHECK(is_open(n));
  Fd e(n);
  CHECK(e.close());
  CHECK_FALSE(is_open(n));
  CHECK(errno_text(ENOENT) == "no such file or directory");
}

TEST_CASE("io: huge_alloc starts a large table on a 2 MiB boundary; every size is writable and freed", "[io]") {
  // A table of 2 MiB or more starts on a huge-page boundary, so huge pages
  // cover it from its first byte (its head is not 4 KiB pages, a fault each).
  for (size_t bytes : {size_t(0), size_t(1), size_t(4096), size_t(2) << 20, (size_t(5) << 20) + 12345}) {
    auto* p = static_cast<uint8_t*>(huge_alloc(bytes));
    REQUIRE(p != nullptr);
    if (bytes >= (size_t(2) << 20)) CHECK(reinterpret_cast<uintptr_t>(p) % (size_t(2) << 20) == 0);
    if (bytes > 0) {
      p[bytes - 1] = 2;
      p[0] = 1;
      CHECK(p[0] == 1);
      CHECK(p[bytes - 1] == (bytes == 1 ? 1 : 2));
    }
    huge_free(p, bytes);
  }
  std::vector<uint64_t, HugePageAllocator<uint64_t>> v;
  for (uint64_t i = 0; i < 600000; i++) v.push_back(i);  // grows through unaligned and aligned sizes
  CHECK(v[599999] == 599999);
}

#if defined(__SANITIZE_ADDRESS__)
#define WIT_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define WIT_TEST_ASAN 1
#endif
#endif

TEST_CASE("parallel_for runs every range when no thread can be created", "[io]") {
  // A child whose address space cannot hold another thread's stack: each
  // range that gets no thread runs on the caller, so every index is covered
  // once (it used to end in std::terminate).
#ifdef WIT_TEST_ASAN
  WARN("not under AddressSanitizer: its shadow memory and an address-space limit do not mix");
  return;
#endif
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    std::vector<int> seen(64, 0);
    // Pages for the check itself, touched before the limit.
    std::vector<char> spare(1 << 20, 1);
    long pages = 0;
    if (FILE* f = std::fopen("/proc/self/statm", "r")) {
      if (std::fscanf(f, "%ld", &pages) != 1) pages = 0;
      std::fclose(f);
    }
    if (pages <= 0) ::_exit(3);
    const rlim_t now = rlim_t(pages) * rlim_t(::sysconf(_SC_PAGESIZE));
    const rlimit lim{now + (rlim_t(1) << 20), now + (rlim_t(1) << 20)};  // 1 MiB more: no 8 MiB stack fits
    if (::setrlimit(RLIMIT_AS, &lim) != 0) ::_exit(4);
    bool threw = false;
    try {
      std::thread t([] {});
      t.join();
    } catch (const std::system_error&) {
      threw = true;
    }
    if (!threw) ::_exit(5);  // the limit did not stop a thread: nothing to test here
    parallel_for(seen.size(), 4, 1, [&](uint64_t b, uint64_t e) {
      for (uint64_t i = b; i < e; i++) seen[i]++;
    });
    ::_exit(std::all_of(seen.begin(), seen.end(), [](int v) { return v == 1; }) ? 0 : 1);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  if (WEXITSTATUS(status) == 5) WARN("an address-space limit did not stop thread creation here; not tested");
  else CHECK(WEXITSTATUS(status) == 0);
}
