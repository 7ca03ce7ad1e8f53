// MappedFile, read_file, AtomicFile, FileLock and the output rules over POSIX calls.
#include "wit/base/io.h"

#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <ctime>
#include <random>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <utility>
#include <vector>

#include "wit/base/crash.h"
#include "wit/base/error.h"

namespace wit {

void Fd::reset(int fd) noexcept {
  if (fd_ >= 0 && fd_ != fd) {
    const int saved = errno;
    ::close(fd_);
    errno = saved;
  }
  fd_ = fd;
}

bool Fd::close() noexcept {
  const int f = release();
  return f < 0 || ::close(f) == 0;
}

std::string errno_text(int err) {
  std::string s = std::strerror(err);
  if (!s.empty() && s[0] >= 'A' && s[0] <= 'Z') s[0] = char(s[0] - 'A' + 'a');
  return s;
}

std::string errno_text() { return errno_text(errno); }

namespace {

Bytes read_fd(int fd, const std::string& path) {
  Bytes out;
  uint8_t buf[1 << 16];
  for (;;) {
    ssize_t r = ::read(fd, buf, sizeof buf);
    if (r < 0) {
      if (errno == EINTR) continue;
      throw Error("cannot read: " + errno_text(), path);
    }
    if (r == 0) break;
    out.insert(out.end(), buf, buf + r);
  }
  return out;
}

}  // namespace

MappedFile::MappedFile(const std::string& path) : path_(path) {
  if (path == "-") {
    buf_ = read_fd(0, "stdin");
    data_ = buf_.data();
    size_ = buf_.size();
    return;
  }
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.ok()) throw Error("cannot open: " + errno_text(), path);
  note_input(fd.get());
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) throw Error("cannot stat: " + errno_text(), path);
  if (S_ISDIR(st.st_mode)) throw Error("is a directory", path);
  // Small files are read, not mapped: a process may hold only ~65,000 maps,
  // and the files reader opens one MappedFile per record.
  if (S_ISREG(st.st_mode) && st.st_size >= (1 << 16)) {
    size_ = size_t(st.st_size);
    if (size_ > 0) {
      // Populated up front (one pass in the kernel instead of a fault per page
      // while the hashing threads run), unless the file is too large to hold.
      const int populate = size_ <= (size_t(4) << 30) ? MAP_POPULATE : 0;
      map_ = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE | populate, fd.get(), 0);
      if (map_ == MAP_FAILED) {
        map_ = nullptr;
        throw Error("cannot map: " + errno_text(), path);
      }
      ::madvise(map_, size_, MADV_SEQUENTIAL);
      data_ = static_cast<const uint8_t*>(map_);
    }
  } else {
    buf_ = read_fd(fd.get(), path);
    data_ = buf_.data();
    size_ = buf_.size();
  }
}

MappedFile::~MappedFile() {
  if (map_) ::munmap(map_, size_);
}

std::string read_file(const std::string& path) {
  MappedFile f(path);
  return std::string(f.view().str());
}

namespace {

// The temporaries of live AtomicFiles, where a signal handler can reach them:
// a slot is free (0), being filled (1) or holds a path (2); lock-free atomics
// and unlink(2) are all a handler may use. A slot is taken and given back
// only inside an OutputSection, which the handler waits out, so it never
// sees one half-filled.
constexpr int kLiveSlots = 64;
struct LiveSlot {
  std::atomic<int> state{0};
  bool tree = false;  // a TemporaryTree: removed with what is in it
  char path[4096]{};  // initialised: the table is then constant-initialised (no start-up loop over 64 pages)
};
LiveSlot g_live[kLiveSlots];

// Removes `name` in directory `dir`, a file or a whole tree, with system calls
// only (async-signal-safe: no allocation, no libc directory streams).
void remove_tree_at(int dir, const char* name, int depth) noexcept {
  if (::unlinkat(dir, name, 0) == 0 || (errno != EISDIR && errno != EPERM) || depth > 32) return;
  const int fd = ::openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return;
  struct Entry {
    uint64_t ino;
    int64_t off;
    unsigned short reclen;
    unsigned char type;
    char name[1];
  };
  alignas(8) char buf[2048];
  // Entries removed while the directory is read may hide others: read it again until it is empty.
  for (int pass = 0; pass < 8; pass++) {
    bool any = false;
    ::lseek(fd, 0, SEEK_SET);
    for (long n; (n = ::syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0;)
      for (long at = 0; at < n;) {
        const Entry* e = reinterpret_cast<const Entry*>(buf + at);
        at += e->reclen;
        if (std::strcmp(e->name, ".") == 0 || std::strcmp(e->name, "..") == 0) continue;
        remove_tree_at(fd, e->name, depth + 1);
        any = true;
      }
    if (!any) break;
  }
  ::close(fd);
  ::unlinkat(dir, name, AT_REMOVEDIR);
}

// OutputSections held now, by all threads, and whether the signal path has
// begun (then no section starts again).
std::atomic<int> g_sections{0};
std::atomic<bool> g_ending{false};

// The outputs published so far: how many, and the first few names.
constexpr int kWrittenNames = 3;
char g_written[kWrittenNames][1024]{};
std::atomic<int> g_written_count{0};

static_assert(std::atomic<int>::is_always_lock_free && std::atomic<bool>::is_always_lock_free,
              "the signal path needs lock-free atomics");

int live_add(const std::string& p, bool tree = false) {
  if (p.size() >= sizeof g_live[0].path) return -1;
  for (int i = 0; i < kLiveSlots; i++) {
    int free = 0;
    if (!g_live[i].state.compare_exchange_strong(free, 1)) continue;
    g_live[i].tree = tree;
    std::memcpy(g_live[i].path, p.c_str(), p.size() + 1);
    g_live[i].state.store(2);
    return i;
  }
  return -1;
}

void live_remove(int& slot) {
  if (slot >= 0) g_live[slot].state.store(0);
  slot = -1;
}

// Inside an OutputSection: an output is in place (or partly in a fifo).
// Two threads publishing at once take different lines; the handler reads
// them only once every section has ended.
void note_written(const std::string& name, const char* suffix = "") {
  const int i = g_written_count.fetch_add(1);
  if (i < kWrittenNames) std::snprintf(g_written[i], sizeof g_written[i], "%s%s", name.c_str(), suffix);
}

// The signals that end a tool, which the handler (cli.cpp) catches.
sigset_t ending_signals() {
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGINT);
  sigaddset(&s, SIGTERM);
  return s;
}

[[noreturn]] void stop_here() {
  for (;;) ::pause();
}

}  // namespace

OutputSection::OutputSection() {
  const sigset_t ending = ending_signals();
  ::pthread_sigmask(SIG_BLOCK, &ending, &old_);
  // Sequentially consistent: either the handler sees this section, or this
  // sees that the handler began (and never goes on into it).
  g_sections.fetch_add(1);
  if (g_ending.load()) {
    g_sections.fetch_sub(1);
    stop_here();
  }
}

OutputSection::~OutputSection() {
  g_sections.fetch_sub(1);
  ::pthread_sigmask(SIG_SETMASK, &old_, nullptr);
}

void remove_live_temporaries() noexcept {
  g_ending.store(true);
  // Sections take microseconds; the bound only keeps a stuck file system from hanging the handler.
  for (int waited = 0; g_sections.load() > 0 && waited < 10000; waited++) {
    const struct timespec ms = {0, 1000000};
    ::nanosleep(&ms, nullptr);
  }
  for (LiveSlot& s : g_live)
    if (s.state.load() == 2) {
      if (s.tree) remove_tree_at(AT_FDCWD, s.path, 0);
      else ::unlink(s.path);
    }
}

void exec_holding_signals(const char* path, char* const argv[]) {
  const sigset_t ending = ending_signals();
  sigset_t before;
  ::sigprocmask(SIG_BLOCK, &ending, &before);
  std::string unblock;  // what the new image lets through: what was not blocked before
  if (!sigismember(&before, SIGINT)) unblock += "INT,";
  if (!sigismember(&before, SIGTERM)) unblock += "TERM,";
  if (!unblock.empty()) ::setenv("WIT_UNBLOCK", unblock.c_str(), 1);
  ::execv(path, argv);
  const int err = errno;
  ::unsetenv("WIT_UNBLOCK");
  ::sigprocmask(SIG_SETMASK, &before, nullptr);
  errno = err;
}

size_t written_outputs(char* buf, size_t n) noexcept {
  if (n == 0) return 0;
  const int count = g_written_count.load();
  size_t at = 0;
  auto put = [&](const char* t) {
    for (; *t && at + 1 < n; t++) buf[at++] = *t;
  };
  const int named = std::min(count, kWrittenNames);
  for (int i = 0; i < named; i++) {
    if (i > 0) put(i + 1 == named && count <= kWrittenNames ? " and " : ", ");
    put(g_written[i]);
  }
  if (count > kWrittenNames) {
    char more[32];
    int m = count - kWrittenNames, k = 0;
    char digits[16];
    do {
      digits[k++] = char('0' + m % 10);
      m /= 10;
    } while (m > 0);
    size_t j = 0;
    for (const char* t = " and "; *t;) more[j++] = *t++;
    while (k > 0) more[j++] = digits[--k];
    for (const char* t = " more"; *t;) more[j++] = *t++;
    more[j] = 0;
    put(more);
  }
  buf[at] = 0;
  return size_t(count);
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

bool lexists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

bool is_terminal_stdout() { return ::isatty(1); }
bool is_terminal_stderr() { return ::isatty(2); }

AtomicFile::AtomicFile(const std::string& path, bool binary, mode_t mode) : path_(path), target_(path) {
  if (path == "-" || path.empty()) {
    stdout_ = true;
    if (binary && is_terminal_stdout())
      throw Error("refusing to write binary output to a terminal", "stdout", "use -o FILE or a pipe");
    return;
  }
  check_output_place(path);
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
    // Replace what the link points to, never the link itself.
    char* real = ::realpath(path.c_str(), nullptr);
    if (!real) throw Error("output is a symbolic link to nothing", path, "remove the link or write elsewhere");
    target_ = real;
    std::free(real);
  }
  if (::stat(target_.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) throw Error("output is a directory", path);
    if (!S_ISREG(st.st_mode)) {
      // A device or fifo (/dev/null, /dev/full, a pipe) is written in place: there is nothing to replace.
      fd_.reset(::open(target_.c_str(), O_WRONLY | O_CLOEXEC));
      if (!fd_.ok()) throw Error("cannot open: " + errno_text(), path);
      direct_ = true;
      direct_counts_ = !S_ISCHR(st.st_mode);  // a fifo's reader has what was written; a device is no output to keep
      return;
    }
  }
  remove_stale_temporaries(target_);
  create_temporary(mode);
}

namespace {

// TARGET.tmp.PID.XXXXXX: the pid lets the next writer tell a dead writer's
// temporary from a live one's; XXXXXX makes it unique within the process.
std::string temporary_name(const std::string& target) {
  static const char kChars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  thread_local std::mt19937_64 rng{std::random_device{}() ^ (uint64_t(::getpid()) << 32)};
  std::string name = target + ".tmp." + std::to_string(::getpid()) + ".";
  for (int i = 0; i < 6; i++) name += kChars[rng() % (sizeof kChars - 1)];
  return name;
}

std::string dir_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
}

// Unnamed files need /proc to be linked. WIT_NAMED_TEMPORARIES=1 turns them
// off, so the tests reach the named path a file system without O_TMPFILE takes.
bool can_link_unnamed() {
  static const bool proc = ::access("/proc/self/fd", X_OK) == 0;
  const char* named = std::getenv("WIT_NAMED_TEMPORARIES");
  return proc && !(named && *named && std::strcmp(named, "0") != 0);
}

}  // namespace

// Sections allocate nothing where they succeed: a signal handler that waits
// for one may have interrupted its own thread inside malloc.
void AtomicFile::create_temporary(mode_t mode) {
  const std::string dir = dir_of(target_);
  bool unnamed = can_link_unnamed();
  for (int tries = 0;; tries++) {
    std::string name = temporary_name(target_);
    int err = 0;
    {
      const OutputSection section;  // the name is known to the signal path before anything exists
      live_ = live_add(name);
      if (live_ >= 0) {
        tmp_.swap(name);
#ifdef O_TMPFILE
        if (unnamed) {
          fd_.reset(::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600));
          unnamed_ = fd_.ok();
        }
#endif
        // A file system without unnamed files: a named temporary, locked at once.
        if (!fd_.ok()) fd_.reset(::open(tmp_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
        err = errno;
        if (fd_.ok()) {
          crash_point("atomic-create");
          // Held until the file is renamed or removed: a locked temporary is a live writer's.
          ::flock(fd_.get(), LOCK_EX);
          ::fchmod(fd_.get(), mode);
        } else {
          live_remove(live_);
        }
      }
    }
    if (fd_.ok()) return;
    if (live_ < 0 && err == 0) throw Error("too many outputs open at once", path_);
    unnamed = false;  // refused (EOPNOTSUPP, EISDIR, ...): the named path says what is wrong, if anything
    if (err != EEXIST || tries >= 100) {
      tmp_.clear();
      throw Error("cannot create: " + errno_text(err), path_);
    }
  }
}

AtomicFile::~AtomicFile() {
  if (stdout_ || direct_ || done_ || tmp_.empty()) return;
  const OutputSection section;
  crash_point("atomic-discard");
  if (!unnamed_) ::unlink(tmp_.c_str());  // before the slot goes: never a moment the signal path could miss it
  live_remove(live_);
  fd_.reset();
}

void AtomicFile::write(ByteView v) {
  if (direct_ && written_ == 0 && v.size > 0 && direct_counts_) {
    const OutputSection section;
    note_written(path_, " (in part)");
  }
  if (!write_all(stdout_ ? 1 : fd_.get(), v.data, v.size, "atomic-write"))
    throw Error("cannot write: " + errno_text(), stdout_ ? std::string("stdout") : path_);
  written_ += v.size;
  synced_ = false;
}

void AtomicFile::write_at(uint64_t offset, ByteView v) {
  if (!seekable()) throw Error("cannot go back in an output that is not a regular file", stdout_ ? std::string("stdout") : path_);
  if (offset > written_ || v.size > written_ - offset)
    throw Error("cannot overwrite bytes not written yet (" + std::to_string(v.size) + " at " + std::to_string(offset) + ")", path_);
  for (size_t done = 0; done < v.size;) {
    const ssize_t w = ::pwrite(fd_.get(), v.data + done, v.size - done, off_t(offset + done));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) throw Error("cannot write: " + errno_text(), path_);
    done += size_t(w);
  }
  synced_ = false;
}

void AtomicFile::sync() {
  if (done_ || stdout_ || direct_ || synced_) return;
  if (::fsync(fd_.get()) != 0) throw Error("cannot sync: " + errno_text(), path_);
  synced_ = true;
}

void AtomicFile::start_writeback() {
  if (done_ || stdout_ || direct_) return;
  ::sync_file_range(fd_.get(), 0, 0, SYNC_FILE_RANGE_WRITE);
}

void AtomicFile::prepare() {
  if (done_ || stdout_ || direct_ || prepared_) return;
  if (!synced_ && ::fsync(fd_.get()) != 0) throw Error("cannot sync: " + errno_text(), path_);
  synced_ = true;
  check_output_place(path_);  // again: an input read since the constructor is never replaced either
  prepared_ = true;
}

void AtomicFile::commit(bool sync_dir) {
  if (done_) return;
  if (stdout_) {
    done_ = true;
    return;
  }
  if (direct_) {
    fd_.reset();
    done_ = true;
    return;
  }
  prepare();
  char proc[64];
  std::snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd_.get());
  {
    const OutputSection section;  // a signal finds the output either not yet named or in place
    // Linking by descriptor (AT_EMPTY_PATH) needs a capability most users lack; /proc/self/fd does not.
    if (unnamed_ && ::linkat(fd_.get(), "", AT_FDCWD, tmp_.c_str(), AT_EMPTY_PATH) != 0 &&
        ::linkat(AT_FDCWD, proc, AT_FDCWD, tmp_.c_str(), AT_SYMLINK_FOLLOW) != 0)
      throw Error("cannot link into place: " + errno_text(), path_);
    crash_point("atomic-publish");
    if (::rename(tmp_.c_str(), target_.c_str()) != 0) {
      const int err = errno;
      ::unlink(tmp_.c_str());
      live_remove(live_);
      done_ = true;
      throw Error("cannot rename into place: " + errno_text(err), path_);
    }
    crash_point("atomic-renamed");
    ::flock(fd_.get(), LOCK_UN);  // the output is no temporary now: nobody waits on it for our sake
    note_written(path_);
    live_remove(live_);
    done_ = true;
  }
  fd_.reset();
  // Make the rename durable too.
  if (sync_dir) sync_parent_dir(target_);
}

std::string temporary_target(const std::string& path) {
  const size_t slash = path.rfind('/');
  const size_t base = slash == std::string::npos ? 0 : slash + 1;
  const size_t t = path.rfind(".tmp.");
  if (t == std::string::npos || t <= base) return "";
  const std::string tail = path.substr(t + 5);  // PID.XXXXXX, or XXXXXX from writers before the pid
  const size_t dot = tail.find('.');
  const std::string pid = dot == std::string::npos ? "" : tail.substr(0, dot), rand = tail.substr(dot + 1);
  auto alnum = [](const std::string& x) {
    return std::all_of(x.begin(), x.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; });
  };
  if (rand.size() != 6 || !alnum(rand)) return "";
  if (dot != std::string::npos && (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos)) return "";
  return path.substr(0, t);
}

TemporaryTree::TemporaryTree(const std::string& target) : target_(target) {
  while (target_.size() > 1 && target_.back() == '/') target_.pop_back();  // "board/" is "board"
  check_output_place(target);
  remove_stale_temporaries(target_);
  for (int tries = 0;; tries++) {
    std::string name = temporary_name(target_);
    int err = 0;
    {
      const OutputSection section;  // known to the signal path before it exists
      live_ = live_add(name, true);
      if (live_ >= 0) {
        tmp_.swap(name);
        if (::mkdir(tmp_.c_str(), 0755) == 0) {
          fd_.reset(::open(tmp_.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
          if (fd_.ok()) ::flock(fd_.get(), LOCK_EX);
        }
        err = errno;
        if (!fd_.ok()) {
          remove_tree_at(AT_FDCWD, tmp_.c_str(), 0);
          live_remove(live_);
        }
      }
    }
    if (fd_.ok()) return;
    if (live_ < 0 && err == 0) throw Error("too many outputs open at once", target);
    if (err != EEXIST || tries >= 100) {
      tmp_.clear();
      throw Error("cannot create directory: " + errno_text(err), target);
    }
  }
}

TemporaryTree::~TemporaryTree() {
  if (done_ || tmp_.empty()) return;
  const OutputSection section;
  remove_tree_at(AT_FDCWD, tmp_.c_str(), 0);
  live_remove(live_);
}

void TemporaryTree::commit() {
  if (done_) return;
  sync_parent_dir(tmp_ + "/.");  // the tree's own entries
  {
    const OutputSection section;
    if (::rename(tmp_.c_str(), target_.c_str()) != 0) {
      const int err = errno;
      throw Error("cannot rename into place: " + errno_text(err), target_);
    }
    note_written(target_);
    live_remove(live_);
    done_ = true;
  }
  fd_.reset();
  sync_parent_dir(target_);
}

void remove_stale_temporaries(const std::string& path) {
  const size_t slash = path.rfind('/');
  const std::string dir = dir_of(path);
  const std::string prefix = (slash == std::string::npos ? path : path.substr(slash + 1)) + ".tmp.";
  DIR* d = ::opendir(dir.c_str());
  if (!d) return;
  const time_t now = ::time(nullptr);
  while (const dirent* e = ::readdir(d)) {
    if (std::strncmp(e->d_name, prefix.c_str(), prefix.size()) != 0) continue;
    const std::string p = dir + "/" + e->d_name;
    if (temporary_target(p) != dir + "/" + prefix.substr(0, prefix.size() - 5)) continue;
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0 || !(S_ISREG(st.st_mode) || S_ISDIR(st.st_mode))) continue;
    // The writer's pid, where the name has one: a pid that is no process is a writer gone.
    const long pid = std::strtol(e->d_name + prefix.size(), nullptr, 10);
    const bool gone = std::strchr(e->d_name + prefix.size(), '.') && pid > 0 && ::kill(pid_t(pid), 0) != 0 && errno == ESRCH;
    // Otherwise only an old one: a young one's writer may not hold its lock yet.
    if (!gone && now - st.st_mtime < 60) continue;
    const Fd fd(::open(p.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (fd.ok() && ::flock(fd.get(), LOCK_EX | LOCK_NB) == 0) remove_tree_at(AT_FDCWD, p.c_str(), 0);
  }
  ::closedir(d);
}

FileLock FileLock::wait(const std::string& path, const std::string& what) { return acquire(path, what, true); }
FileLock FileLock::try_hold(const std::string& path, const std::string& what) { return acquire(path, what, false); }
FileLock FileLock::wait_shared_dir(const std::string& dir, const std::string& what) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) throw Error("cannot lock " + what + ": not a directory", dir);
  return acquire(dir, what, true, true);
}

FileLock FileLock::wait_existing(const std::string& path, const std::string& what) {
  for (;;) {
    Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.ok()) throw Error("cannot open " + what + ": " + errno_text(), path);
    int r;
    while ((r = ::flock(fd.get(), LOCK_EX)) != 0 && errno == EINTR) {
    }
    if (r != 0) throw Error("cannot lock " + what + ": " + errno_text(), path);
    struct stat held {}, now {};
    if (::fstat(fd.get(), &held) == 0 && ::stat(path.c_str(), &now) == 0 && held.st_dev == now.st_dev &&
        held.st_ino == now.st_ino)
      return FileLock(std::move(fd), path);
    // replaced while we waited: lock what is there now (fd closes here)
  }
}

FileLock FileLock::acquire(const std::string& path, const std::string& what, bool block, bool shared) {
  struct stat st {};
  const bool dir = ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  Fd fd(dir ? ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            : ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
  if (!fd.ok()) throw Error("cannot open the lock of " + what + ": " + errno_text(), path);
  while (::flock(fd.get(), (shared ? LOCK_SH : LOCK_EX) | (block ? 0 : LOCK_NB)) != 0) {
    if (errno == EINTR) continue;
    const int err = errno;
    std::string holder;
    if (err == EWOULDBLOCK && !dir) {
      char buf[256];
      const ssize_t n = ::pread(fd.get(), buf, sizeof buf - 1, 0);
      if (n > 0) holder.assign(buf, size_t(n));
      while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) holder.pop_back();
    }
    if (err == EWOULDBLOCK)
      throw Error(what + " is in use by " + (holder.empty() ? std::string("another process") : holder), path,
                  "wait for it to finish, or stop it");
    throw Error("cannot lock " + what + ": " + errno_text(err), path);
  }
  if (!dir) {
    char host[256] = "unknown host";
    ::gethostname(host, sizeof host - 1);
    host[sizeof host - 1] = 0;
    const std::string who = "pid " + std::to_string(::getpid()) + " on " + host + "\n";
    if (::ftruncate(fd.get(), 0) == 0) {
      [[maybe_unused]] ssize_t w = ::pwrite(fd.get(), who.data(), who.size(), 0);
    }
  }
  return FileLock(std::move(fd), path);
}

namespace {

using FileId = std::pair<dev_t, ino_t>;
std::mutex g_places_mu;
// Every regular file this process opened for reading, with when it last did
// (real time, never earlier than the birth time the file system stamps on a
// file created before, fine or coarse): a file born after that is a new file
// that took the inode of one read and deleted.
std::map<FileId, struct timespec> g_inputs;
std::set<FileId> g_allowed_runs;  // run directories this process writes (allow_run_writes)
std::set<std::string> g_outputs;  // the outputs the user named (note_output), resolved

std::string resolved(const std::string& path) {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::weakly_canonical(std::filesystem::absolute(path, ec), ec);
  return ec ? path : p.string();
}

bool exists_at(const std::filesystem::path& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0;
}

// A run directory: wit-train's lock, or a manifest with its witness log.
bool is_run_dir(const std::filesystem::path& d) {
  return exists_at(d / "train.lock") || (exists_at(d / "run.json") && exists_at(d / "run.wlog"));
}

}  // namespace

namespace {

bool later(const struct timespec& a, const struct timespec& b) {
  return a.tv_sec > b.tv_sec || (a.tv_sec == b.tv_sec && a.tv_nsec > b.tv_nsec);
}

void note_input_id(const struct stat& st) {
  struct timespec now {};
  ::clock_gettime(CLOCK_REALTIME, &now);
  std::lock_guard<std::mutex> g(g_places_mu);
  struct timespec& when = g_inputs[{st.st_dev, st.st_ino}];
  if (later(now, when)) when = now;
}

// Whether the file at `path` was created after `t` (false where the file
// system records no birth time: then it counts as the file read).
bool born_after(const std::string& path, const struct timespec& t) {
  struct statx sx {};
  if (::statx(AT_FDCWD, path.c_str(), 0, STATX_BTIME, &sx) != 0 || !(sx.stx_mask & STATX_BTIME)) return false;
  return later(timespec{sx.stx_btime.tv_sec, long(sx.stx_btime.tv_nsec)}, t);
}

}  // namespace

void note_input(int fd) {
  struct stat st {};
  if (fd < 0 || ::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return;
  note_input_id(st);
}

void note_input(const std::string& path) {
  struct stat st {};
  if (path == "-" || path.empty() || ::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return;
  note_input_id(st);
}

void note_output(const std::string& path) {
  if (path == "-" || path.empty()) return;
  const std::string r = resolved(path);
  std::lock_guard<std::mutex> g(g_places_mu);
  g_outputs.insert(r);
}

void allow_run_writes(const std::string& run_dir) {
  struct stat st {};
  if (::stat(run_dir.c_str(), &st) != 0) {
    std::error_code ec;
    std::filesystem::create_directories(run_dir, ec);
    if (::stat(run_dir.c_str(), &st) != 0) return;  // the writer's own create reports it
  }
  std::lock_guard<std::mutex> g(g_places_mu);
  g_allowed_runs.insert({st.st_dev, st.st_ino});
}

void check_output_place(const std::string& path) {
  if (path == "-" || path.empty()) return;
  struct stat st {};
  const bool exists = ::stat(path.c_str(), &st) == 0;  // links followed
  if (exists && !S_ISREG(st.st_mode)) return;          // a device or fifo replaces nothing; a directory is refused elsewhere
  // The directories above the file, links resolved, up to the root.
  std::error_code ec;
  std::filesystem::path dir = std::filesystem::weakly_canonical(std::filesystem::absolute(path, ec), ec);
  if (ec) dir = std::filesystem::absolute(path, ec).lexically_normal();
  bool allowed = false;
  for (dir = dir.parent_path(); !dir.empty(); dir = dir.parent_path()) {
    struct stat ds {};
    if (::stat(dir.c_str(), &ds) == 0) {
      {
        std::lock_guard<std::mutex> g(g_places_mu);
        allowed = g_allowed_runs.count({ds.st_dev, ds.st_ino}) != 0;
      }
      if (allowed) break;
      if (is_run_dir(dir))
        throw Error("output is inside the run directory " + dir.string(), path,
                    "only wit-train and 'wit-log sign' write in a run directory; write the output elsewhere");
    }
    if (dir == dir.root_path()) break;
  }
  if (allowed || !exists) return;
  const std::string r = resolved(path);
  std::lock_guard<std::mutex> g(g_places_mu);
  const auto read = g_inputs.find({st.st_dev, st.st_ino});
  if (g_outputs.count(r) && read != g_inputs.end() && !born_after(path, read->second))
    throw Error("output is one of the inputs", path, "write the output to a new path; a tool never overwrites what it reads");
}

void check_outputs_apart(const std::vector<std::string>& inputs, const std::vector<std::string>& outputs) {
  std::set<std::pair<dev_t, ino_t>> in;
  for (const auto& p : inputs) {
    struct stat st {};
    if (p != "-" && !p.empty() && ::stat(p.c_str(), &st) == 0) in.insert({st.st_dev, st.st_ino});
  }
  std::set<std::pair<dev_t, ino_t>> seen;
  std::set<std::string> seen_new;
  for (const auto& p : outputs) {
    if (p == "-" || p.empty()) continue;
    note_output(p);
    check_output_place(p);
    struct stat st {};
    if (::stat(p.c_str(), &st) == 0) {
      // Devices and fifos (/dev/null twice) are written in place and replace nothing.
      if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) continue;
      if (in.count({st.st_dev, st.st_ino}))
        throw Error("output is one of the inputs", p, "write the output to a new path; a tool never overwrites what it reads");
      if (!seen.insert({st.st_dev, st.st_ino}).second) throw Error("two outputs name the same file", p);
    } else {
      std::error_code ec;
      const std::string norm = std::filesystem::absolute(p, ec).lexically_normal().string();
      if (!seen_new.insert(ec ? p : norm).second) throw Error("two outputs name the same file", p);
    }
  }
}

void sync_parent_dir(const std::string& path) {
  std::string dir = path.find('/') == std::string::npos ? "." : path.substr(0, path.rfind('/'));
  if (dir.empty()) dir = "/";
  const Fd dfd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dfd.ok()) ::fsync(dfd.get());
}

std::string temp_root() {
  const char* env = std::getenv("TMPDIR");
  return env && *env ? env : "/tmp";
}

TempDir::TempDir(const std::string& prefix) {
  std::string p = temp_root() + "/" + prefix + ".XXXXXX";
  if (!::mkdtemp(p.data()))
    throw Error("cannot create a temporary directory: " + errno_text(), temp_root(),
                "set TMPDIR to a writable directory");
  path_ = p;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

void advise_huge_pages(void* p, size_t n) {
  constexpr uintptr_t kHuge = uintptr_t(2) << 20;
  const uintptr_t a = reinterpret_cast<uintptr_t>(p), lo = (a + kHuge - 1) & ~(kHuge - 1), hi = (a + n) & ~(kHuge - 1);
  if (hi > lo) (void)::madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_HUGEPAGE);
}

Bytes huge_page_bytes(size_t n) {
  Bytes out;
  out.reserve(n);
  advise_huge_pages(out.data(), n);
  out.resize(n);
  return out;
}

ScratchFile::ScratchFile() : ScratchFile(temp_root()) {}

ScratchFile::ScratchFile(const std::string& dir) {
  dir_ = dir;
#ifdef O_TMPFILE
  fd_.reset(::open(dir_.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600));
#endif
  if (!fd_.ok()) {  // a file system without O_TMPFILE: create, then unlink at once
    std::string tmp = dir_ + "/wit-scratch.XXXXXX";
    fd_.reset(::mkostemp(tmp.data(), O_CLOEXEC));
    if (!fd_.ok()) throw Error("cannot create a scratch file: " + errno_text(), dir_, "set TMPDIR to a writable directory");
    ::unlink(tmp.c_str());
  }
}

ScratchFile::~ScratchFile() = default;

void ScratchFile::append(ByteView v) {
  for (size_t done = 0; done < v.size;) {
    const ssize_t w = ::pwrite(fd_.get(), v.data + done, v.size - done, off_t(size_ + done));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0)
      throw Error("cannot write a scratch file: " + errno_text(), dir_,
                  dir_ == temp_root() ? "free space there, or set TMPDIR to a larger disk"
                                      : "free space there, or write the outputs to a larger disk");
    done += size_t(w);
  }
  size_ += v.size;
}

void ScratchFile::check_range(const char* what, uint64_t offset, size_t n) const {
  if (offset > size_ || n > size_ - offset)
    throw Error(std::string("scratch ") + what + " past its end (" + std::to_string(n) + " at " + std::to_string(offset) + ")",
                dir_);
}

void ScratchFile::read(uint64_t offset, uint8_t* dst, size_t n) const {
  check_range("read", offset, n);
  for (size_t done = 0; done < n;) {
    const ssize_t r = ::pread(fd_.get(), dst + done, n - done, off_t(offset + done));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) throw Error("cannot read a scratch file: " + errno_text(), dir_);
    done += size_t(r);
  }
}

MappedRange::MappedRange(int fd, uint64_t offset, size_t n, const std::string& where) : size_(n) {
  if (n == 0) return;
  const uint64_t page = uint64_t(::sysconf(_SC_PAGESIZE)), start = offset / page * page;
  map_len_ = size_t(offset - start) + n;
  const int populate = map_len_ <= (size_t(4) << 30) ? MAP_POPULATE : 0;
  void* m = ::mmap(nullptr, map_len_, PROT_READ, MAP_PRIVATE | populate, fd, off_t(start));
  if (m == MAP_FAILED) throw Error("cannot map a scratch file: " + errno_text(), where);
  map_ = m;
  data_ = static_cast<const uint8_t*>(m) + (offset - start);
}

MappedRange::~MappedRange() {
  if (map_) ::munmap(map_, map_len_);
}

std::unique_ptr<MappedRange> ScratchFile::map(uint64_t offset, size_t n) const {
  check_range("map", offset, n);
  return std::make_unique<MappedRange>(fd_.get(), offset, n, dir_);
}

void write_file_atomic(const std::string& path, const std::string& content, bool binary) {
  AtomicFile f(path, binary);
  f.write(content);
  f.commit();
}

TempFile::TempFile(const std::string& prefix) {
  path = (std::filesystem::temp_directory_path() / (prefix + ".XXXXXX")).string();
  const Fd fd(::mkstemp(path.data()));
  if (!fd.ok()) throw Error("cannot create a temporary file: " + errno_text(), path);
}

TempFile::~TempFile() { ::unlink(path.c_str()); }

void copy_file_atomic(const std::string& from, const std::string& to) {
  std::FILE* in = std::fopen(from.c_str(), "rb");
  if (!in) throw Error("cannot read: " + errno_text(), from);
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> closer(in, std::fclose);
  note_input(::fileno(in));
  AtomicFile out(to, true);
  std::vector<uint8_t> buf(size_t(1) << 20);
  for (size_t n; (n = std::fread(buf.data(), 1, buf.size(), in)) > 0;) out.write(ByteView(buf.data(), n));
  if (std::ferror(in)) throw Error("cannot read: " + errno_text(), from);
  out.commit();
}

}  // namespace wit
