// MappedFile, read_file and AtomicFile over POSIX calls.
#include "wit/io.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <cstdlib>

#include "wit/crash.h"
#include "wit/error.h"

namespace wit {

namespace {

std::string errno_text() { return std::strerror(errno); }

// Lowercase first letter, as CLI.md wants for error messages.
std::string lower_first(std::string s) {
  if (!s.empty() && s[0] >= 'A' && s[0] <= 'Z') s[0] = char(s[0] - 'A' + 'a');
  return s;
}

Bytes read_fd(int fd, const std::string& path) {
  Bytes out;
  uint8_t buf[1 << 16];
  for (;;) {
    ssize_t r = ::read(fd, buf, sizeof buf);
    if (r < 0) {
      if (errno == EINTR) continue;
      throw Error("cannot read: " + lower_first(errno_text()), path);
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
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error("cannot open: " + lower_first(errno_text()), path);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    throw Error("cannot stat: " + lower_first(errno_text()), path);
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    throw Error("is a directory", path);
  }
  // Small files are read, not mapped: a process may hold only ~65,000 maps,
  // and the files reader opens one MappedFile per record.
  if (S_ISREG(st.st_mode) && st.st_size >= (1 << 16)) {
    size_ = size_t(st.st_size);
    if (size_ > 0) {
      // Populated up front (one pass in the kernel instead of a fault per page
      // while the hashing threads run), unless the file is too large to hold.
      const int populate = size_ <= (size_t(4) << 30) ? MAP_POPULATE : 0;
      map_ = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE | populate, fd, 0);
      if (map_ == MAP_FAILED) {
        map_ = nullptr;
        ::close(fd);
        throw Error("cannot map: " + lower_first(errno_text()), path);
      }
      ::madvise(map_, size_, MADV_SEQUENTIAL);
      data_ = static_cast<const uint8_t*>(map_);
    }
  } else {
    buf_ = read_fd(fd, path);
    data_ = buf_.data();
    size_ = buf_.size();
  }
  ::close(fd);
}

MappedFile::~MappedFile() {
  if (map_) ::munmap(map_, size_);
}

std::string read_file(const std::string& path) {
  MappedFile f(path);
  return std::string(f.view().str());
}

bool is_terminal_stdout() { return ::isatty(1); }
bool is_terminal_stderr() { return ::isatty(2); }

AtomicFile::AtomicFile(const std::string& path, bool binary) : path_(path) {
  if (path == "-" || path.empty()) {
    stdout_ = true;
    if (binary && is_terminal_stdout())
      throw Error("refusing to write binary output to a terminal", "stdout", "use -o FILE or a pipe");
    return;
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    // A device or pipe (/dev/null, a fifo) is written in place; there is nothing to replace.
    fd_ = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd_ < 0) throw Error("cannot open: " + lower_first(errno_text()), path);
    direct_ = true;
    return;
  }
  tmp_ = path + ".tmp.XXXXXX";
  fd_ = ::mkstemp(tmp_.data());
  if (fd_ < 0) throw Error("cannot create: " + lower_first(errno_text()), path);
  ::fchmod(fd_, 0644);
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!stdout_ && !direct_ && !done_ && !tmp_.empty()) ::unlink(tmp_.c_str());
}

void AtomicFile::write(ByteView v) {
  if (!write_all(stdout_ ? 1 : fd_, v.data, v.size, "atomic-write"))
    throw Error("cannot write: " + lower_first(errno_text()), stdout_ ? std::string("stdout") : path_);
}

void AtomicFile::commit() {
  if (done_) return;
  if (stdout_) {
    done_ = true;
    return;
  }
  if (direct_) {
    ::close(fd_);
    fd_ = -1;
    done_ = true;
    return;
  }
  if (::fsync(fd_) != 0) throw Error("cannot sync: " + lower_first(errno_text()), path_);
  ::close(fd_);
  fd_ = -1;
  if (::rename(tmp_.c_str(), path_.c_str()) != 0)
    throw Error("cannot rename into place: " + lower_first(errno_text()), path_);
  done_ = true;
  // Make the rename durable too.
  sync_parent_dir(path_);
}

void sync_parent_dir(const std::string& path) {
  std::string dir = path.find('/') == std::string::npos ? "." : path.substr(0, path.rfind('/'));
  if (dir.empty()) dir = "/";
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

void write_file_atomic(const std::string& path, const std::string& content, bool binary) {
  AtomicFile f(path, binary);
  f.write(content);
  f.commit();
}

}  // namespace wit
