// File input and crash-safe output: read-only memory maps, whole-file reads
// ("-" is stdin), atomic writes (temp file, fsync, rename) so a failed tool
// never leaves a partial output behind, exclusive locks for read-modify-write
// and the rule that no output is one of the tool's own inputs.
#pragma once
#include <signal.h>
#include <sys/types.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "wit/base/bytes.h"

namespace wit {

// The one owner of a file descriptor: closes it when destroyed (or reset, or
// moved over). No code outside this class calls ::close. Move-only.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(o.release()) {}
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) reset(o.release());
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }
  int get() const { return fd_; }
  bool ok() const { return fd_ >= 0; }
  // Gives the descriptor up without closing it.
  int release() noexcept {
    const int f = fd_;
    fd_ = -1;
    return f;
  }
  // Closes the descriptor held (errno kept as it was), then holds `fd`.
  void reset(int fd = -1) noexcept;
  // Closes now and reports it: false (errno set) when close(2) failed.
  bool close() noexcept;

 private:
  int fd_ = -1;
};

// The message of errno (or `err`) as CLI.md wants it in an error line:
// strerror with a lowercase first letter ("no such file or directory").
std::string errno_text(int err);
std::string errno_text();

// A read-only view of a whole file: memory-mapped for regular files, read into
// memory for pipes and "-" (stdin). Throws wit::Error naming the path on failure.
class MappedFile {
 public:
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ByteView view() const { return {data_, size_}; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  void* map_ = nullptr;
  Bytes buf_;
};

// Reads a whole file ("-" is stdin) into a string.
std::string read_file(const std::string& path);

// Writes `path` atomically. The bytes go to an unnamed file in the output's
// directory (O_TMPFILE), which commit() fsyncs, links in as a temporary
// (PATH.tmp.PID.XXXXXX) and renames over `path` at once; a process killed
// in any way before that, even by SIGKILL, leaves nothing behind. Where the
// file system has no unnamed files (O_TMPFILE refused), the temporary is
// named from the start, with the writer's pid in its name, and locked while
// it is written; the next AtomicFile for the same path removes the
// temporaries of writers that are gone (an unlocked one whose pid is no
// process, or that is older than a minute). Destroying an uncommitted
// writer discards its file. Creating and publishing happen in an
// OutputSection, so a signal that ends the process never splits them, and
// every temporary is known to the signal path (remove_live_temporaries)
// before it has a name on disk.
// "-" writes to stdout instead (commit flushes), refusing binary output to a
// terminal when `binary` is set. Nothing that is not a regular file is ever
// replaced by rename: a symbolic link is followed (its target is replaced,
// the link stays), an existing device or fifo is written in place, a
// directory or a dangling link is refused. `mode` applies to a new file.
class AtomicFile {
 public:
  explicit AtomicFile(const std::string& path, bool binary = false, mode_t mode = 0644);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  void write(ByteView v);
  void write(const std::string& s) { write(ByteView(s)); }
  // Whether write_at can go back: false for stdout and for a device or fifo
  // written in place.
  bool seekable() const { return !stdout_ && !direct_; }
  // Overwrites bytes already written (a header patched at the end). Throws
  // wit::Error when the output is not seekable or the range was not written yet.
  void write_at(uint64_t offset, ByteView v);
  // Flushes what was written so far to disk (fsync) now, so that a caller can
  // wait for it on another thread while it works on; commit() then skips its
  // own fsync unless more was written since. Throws wit::Error naming the file.
  void sync();
  // Asks the kernel to start writing what was written so far to disk without
  // waiting for it (sync_file_range), so that a later sync() waits less. A
  // hint: errors are left to sync() and commit().
  void start_writeback();
  // fsync (unless sync() covered it), link and rename into place, and fsync
  // the directory. sync_dir = false leaves the directory's fsync to the
  // caller (sync_parent_dir), for several files renamed into one directory.
  void commit(bool sync_dir = true);
  // commit's first half, the slow one (fsync, the output rules again), for a
  // caller that then commits several outputs inside one OutputSection.
  void prepare();
  // The file replaced (a symbolic link's target), for sync_parent_dir.
  const std::string& target() const { return target_; }

 private:
  void create_temporary(mode_t mode);
  std::string path_, target_, tmp_;  // tmp_: the temporary's name (an unnamed file gets it at commit)
  Fd fd_;
  int live_ = -1;  // live_: this temporary's slot for remove_live_temporaries
  uint64_t written_ = 0;
  bool stdout_ = false, direct_ = false, done_ = false, synced_ = false;
  bool unnamed_ = false;        // an O_TMPFILE file: no name until commit
  bool prepared_ = false;       // prepare() done
  bool direct_counts_ = false;  // a fifo written in place: bytes written are an output in part
};

// A directory built beside `target` (TARGET.tmp.PID.XXXXXX, locked while it
// is built) and renamed into place whole by commit(), for an output that is
// a folder (a run bundle, a board). Known to the signal path before it
// exists, which removes it with everything in it, as does destroying it
// uncommitted; one left by SIGKILL goes with the next TemporaryTree or
// AtomicFile for the same target (remove_stale_temporaries). Throws
// wit::Error naming the target.
class TemporaryTree {
 public:
  explicit TemporaryTree(const std::string& target);
  ~TemporaryTree();
  TemporaryTree(const TemporaryTree&) = delete;
  TemporaryTree& operator=(const TemporaryTree&) = delete;
  const std::string& path() const { return tmp_; }
  // Renames the tree over the target (which must not exist, or be an empty
  // directory) and fsyncs the directory above.
  void commit();

 private:
  std::string target_, tmp_;
  Fd fd_;  // the tree, locked: a live writer's
  int live_ = -1;
  bool done_ = false;
};

// The temporary directory: $TMPDIR, else /tmp.
std::string temp_root();

// A private directory (mode 0700) under $TMPDIR (else /tmp), removed with
// everything in it by the destructor. Throws wit::Error when it cannot be made.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "wit");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Advises transparent huge pages (madvise MADV_HUGEPAGE) for the whole 2 MiB
// pages inside [p, p + n) that nothing has touched yet: a 1.5 GB state in
// 4 KiB pages costs a page fault each. Advice only; a refusal changes nothing.
void advise_huge_pages(void* p, size_t n);
// `n` bytes in huge pages where the kernel allows: Bytes with its capacity
// advised, then sized. For buffers of many megabytes filled at once.
Bytes huge_page_bytes(size_t n);

// A read-only mapping of a byte range of an open file: the page cache's own
// pages, no copy (MAP_POPULATE: faulted in one pass). Unmapped on destruction.
class MappedRange {
 public:
  MappedRange(int fd, uint64_t offset, size_t n, const std::string& where);  // throws wit::Error
  ~MappedRange();
  MappedRange(const MappedRange&) = delete;
  MappedRange& operator=(const MappedRange&) = delete;
  ByteView view() const { return {data_, size_}; }

 private:
  void* map_ = nullptr;
  size_t map_len_ = 0;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

// An anonymous temporary file for data too large to hold in memory: created
// in $TMPDIR (else /tmp) and unlinked at once, so nothing is left behind
// however the process ends. Written at its end, read anywhere; closed (and
// its space freed) by the destructor. Throws wit::Error naming the directory.
class ScratchFile {
 public:
  ScratchFile();
  // The same in `dir` (a spilled commit's runs, beside its output).
  explicit ScratchFile(const std::string& dir);
  ~ScratchFile();
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;
  uint64_t size() const { return size_; }
  void append(ByteView v);
  // Fills dst[0, n) with the bytes at `offset`; the range must have been appended.
  void read(uint64_t offset, uint8_t* dst, size_t n) const;
  // The bytes at `offset` without a copy; the range must have been appended.
  std::unique_ptr<MappedRange> map(uint64_t offset, size_t n) const;

 private:
  void check_range(const char* what, uint64_t offset, size_t n) const;
  std::string dir_;
  Fd fd_;
  uint64_t size_ = 0;
};

// Convenience: atomically replace `path` ("-" = stdout) with `content`.
void write_file_atomic(const std::string& path, const std::string& content, bool binary = false);

// A new, empty private file in the temporary directory ($TMPDIR or /tmp),
// named PREFIX.XXXXXX, removed when the object is destroyed.
struct TempFile {
  explicit TempFile(const std::string& prefix);
  ~TempFile();
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  std::string path;
};

// Atomically replaces `to` with a copy of the file `from`, read in pieces
// (a large file is never held in memory).
void copy_file_atomic(const std::string& from, const std::string& to);

// While one exists, the signals that end a tool (SIGINT, SIGTERM) wait: they
// are blocked in the thread that holds it, and the handler, on whatever
// thread it runs, waits until no thread holds one. AtomicFile creates,
// publishes and discards its temporaries in one, so a signal never finds a
// temporary half-made or an output half-renamed; a caller that publishes
// several outputs that belong together (a commitment and its index) holds
// one around their commits, so a signal leaves both or neither. Sections are
// short (no waiting for locks or input inside). Once the signal path has
// begun, a thread that enters a section stops there for good (the handler
// is ending the process). Nests.
class OutputSection {
 public:
  OutputSection();
  ~OutputSection();
  OutputSection(const OutputSection&) = delete;
  OutputSection& operator=(const OutputSection&) = delete;

 private:
  sigset_t old_;
};

// Async-signal-safe, for a signal handler that ends the process (Ctrl-C):
// waits for every OutputSection to end (ten seconds at most), stops every
// thread from creating or publishing an output from then on, and removes
// the temporary file of every AtomicFile not yet committed or destroyed.
// The process must end after it.
void remove_live_temporaries() noexcept;

// Async-signal-safe: how many outputs this process has published (renamed
// into place, or written in part to a fifo), and their names, the first few
// of them, into buf ("a.json, b.widx and 3 more"; NUL-terminated, cut to n).
size_t written_outputs(char* buf, size_t n) noexcept;

// execv(path, argv) with SIGINT and SIGTERM held (blocked) across the exec,
// for a program that re-executes a tool that links LibTorch: the new image
// lets them through once its first instructions catch them (cli.cpp), so a
// signal while LibTorch loads is said, not silent. Returns only when the exec
// failed (errno set), with the signals as they were.
void exec_holding_signals(const char* path, char* const argv[]);

// If `path` is the name of an AtomicFile's temporary (TARGET.tmp.PID.XXXXXX,
// or an older writer's TARGET.tmp.XXXXXX), the output it was for; else "".
std::string temporary_target(const std::string& path);

// Removes the temporaries beside `path` (see AtomicFile) whose writer is
// gone: not locked, and either named for a pid that is no process or older
// than a minute. A kill during a write then leaves nothing behind for long.
void remove_stale_temporaries(const std::string& path);

// An exclusive advisory lock (flock) held for the object's lifetime, for a
// read-modify-write that must not interleave with another process's. A
// directory is locked through itself; any other path names a lock file,
// created when missing and never removed (removing it would let two
// processes hold "the" lock on different files). The lock file records
// "pid N on HOST" of its holder, so the loser of a race can name it.
class FileLock {
 public:
  // Blocks until the lock is free. `what` names the thing locked in errors.
  static FileLock wait(const std::string& path, const std::string& what);
  // Blocks until the lock on an existing file or directory itself is free,
  // creating and writing nothing. When the path was renamed over while this
  // waited (an atomic replace), it locks the new file instead, so holders
  // always agree on what they hold. Throws wit::Error when `path` is missing.
  static FileLock wait_existing(const std::string& path, const std::string& what);
  // Does not wait: throws wit::Error("WHAT is in use by pid N on HOST", path)
  // when another process holds the lock.
  static FileLock try_hold(const std::string& path, const std::string& what);
  // Blocks until no exclusive holder is left, then holds the lock shared
  // (readers of what an exclusive holder replaces). A directory only: it
  // creates and writes nothing.
  static FileLock wait_shared_dir(const std::string& dir, const std::string& what);
  FileLock(FileLock&& o) noexcept = default;
  FileLock& operator=(FileLock&&) = delete;
  FileLock(const FileLock&) = delete;
  const std::string& path() const { return path_; }

 private:
  FileLock(Fd fd, std::string path) : fd_(std::move(fd)), path_(std::move(path)) {}
  static FileLock acquire(const std::string& path, const std::string& what, bool block, bool shared = false);
  Fd fd_;
  std::string path_;
};

// The one rule for outputs against inputs, for every tool: throws
// wit::Error("output is one of the inputs", OUT) when an output path names
// the same file as an input (same device and inode, links followed), and
// "two outputs name the same file" when two outputs do. "-" and paths that
// do not exist yet are never the same as anything. Call it before the first
// write.
void check_outputs_apart(const std::vector<std::string>& inputs, const std::vector<std::string>& outputs);

// The same-file rule for every file a tool reads, wherever it found it (a
// path on the command line, a file inside a run directory or a bundle, a
// file named by a config): the readers here (MappedFile, read_file,
// WitnessLog, BundleReader, ...) note each file they open, and an AtomicFile
// for an output the user named (note_output: every output that
// check_outputs_apart, and so cli::run, sees) refuses, when it is created
// and again before its rename, to replace a file this process has read
// ("output is one of the inputs"). A tool's own read-modify-write of a file
// it maintains (a bundle's index) is not an output the user named.
void note_input(int fd);
void note_input(const std::string& path);
void note_output(const std::string& path);

// No tool writes inside a run directory except the trainer of that run and
// `wit-log sign`: an output whose directory, or a directory above it, is a
// run directory (it holds train.lock, or both run.json and run.wlog) is
// refused ("output is inside the run directory RUN") unless this process
// called allow_run_writes for that directory. Inside an allowed run, the
// process may also replace files it read there (the trainer rewrites its own
// seed, probe set and checkpoints).
void allow_run_writes(const std::string& run_dir);
// Both rules for one output path ("-", devices and fifos pass); throws wit::Error.
void check_output_place(const std::string& path);

// Makes a create or rename in `path`'s directory durable (fsync of the directory).
void sync_parent_dir(const std::string& path);

// Whether a file (or directory, device, ...) is at `path`, links followed: a
// dangling link is nothing. lexists: anything, a dangling link included.
bool exists(const std::string& path);
bool lexists(const std::string& path);

bool is_terminal_stdout();
bool is_terminal_stderr();

}  // namespace wit
