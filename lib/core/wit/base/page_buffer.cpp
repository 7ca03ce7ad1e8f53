// FileBytes: the whole bytes of an input file in memory, read into anonymous
// memory backed by transparent huge pages, or mapped (page_buffer.h).
#include "wit/base/page_buffer.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <fstream>
#include <string>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "wit/base/error.h"
#include "wit/base/parallel.h"

namespace wit {

void pread_all(int fd, uint8_t* buf, uint64_t len, uint64_t offset, const std::string& where, const char* shorter) {
  while (len > 0) {
    const ssize_t got = ::pread(fd, buf, std::min<uint64_t>(len, uint64_t(1) << 30), off_t(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw Error("cannot read: " + errno_text(), where);
    if (got == 0) throw Error(shorter, where);
    buf += got;
    offset += uint64_t(got);
    len -= uint64_t(got);
  }
}

namespace {

struct Tuning {
  std::atomic<uint64_t> chunk{uint64_t(1) << 20};
  std::atomic<uint64_t> min_read{uint64_t(4) << 20};
  std::atomic<bool> force{false};
};
Tuning g_tuning;

constexpr size_t kHugePage = size_t(2) << 20;

// Whether anonymous memory can be backed by transparent huge pages here
// ("always" or "madvise"): without them, reading a file into 4 KiB pages costs
// more page faults than mapping it.
bool huge_pages_available() {
  static const bool yes = [] {
    std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
    std::string line;
    if (!std::getline(f, line)) return false;
    return line.find("[always]") != std::string::npos || line.find("[madvise]") != std::string::npos;
  }();
  return yes;
}

}  // namespace

void FileBytes::set_tuning(uint64_t chunk, uint64_t min_read_size, bool force) {
  g_tuning.chunk = std::max<uint64_t>(1, chunk);
  g_tuning.min_read = min_read_size;
  g_tuning.force = force;
}

void FileBytes::reset_tuning() { set_tuning(uint64_t(1) << 20, uint64_t(4) << 20, false); }

FileBytes::FileBytes(std::shared_ptr<MappedFile> mapped)
    : mapped_(std::move(mapped)), data_(mapped_->data()), size_(mapped_->size()) {}

FileBytes::FileBytes(uint8_t* buf, size_t size, size_t capacity)
    : buf_(buf), capacity_(capacity), data_(buf), size_(size) {}

FileBytes::~FileBytes() {
  if (buf_) ::munmap(buf_, capacity_);
}

// Read straight into anonymous memory marked for huge pages that grows by
// mremap (the kernel moves the pages; nothing is copied). (Growing a vector
// 64 KiB at a time cost 2.4 s for 209 MB on stdin: a fault per fresh 4 KiB
// page and a copy at every doubling.)
std::shared_ptr<const FileBytes> FileBytes::read_all(int fd, const std::string& name) {
  size_t capacity = size_t(64) << 20;  // untouched pages cost nothing
  void* m = ::mmap(nullptr, capacity, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) throw Error("cannot allocate memory to read into: " + errno_text(), name);
  ::madvise(m, capacity, MADV_HUGEPAGE);
  uint8_t* buf = static_cast<uint8_t*>(m);
  size_t size = 0;
  for (;;) {
    if (size == capacity) {
      void* g = ::mremap(buf, capacity, 2 * capacity, MREMAP_MAYMOVE);
      if (g == MAP_FAILED) {
        const int err = errno;
        ::munmap(buf, capacity);
        throw Error("cannot allocate memory to read into: " + errno_text(err), name);
      }
      buf = static_cast<uint8_t*>(g);
      ::madvise(buf + capacity, capacity, MADV_HUGEPAGE);
      capacity *= 2;
    }
    const ssize_t r = ::read(fd, buf + size, std::min(capacity - size, size_t(16) << 20));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      const int err = errno;
      ::munmap(buf, capacity);
      throw Error("cannot read: " + errno_text(err), name);
    }
    if (r == 0) break;
    size += size_t(r);
  }
  ::mprotect(buf, capacity, PROT_READ);
  return std::make_shared<const FileBytes>(buf, size, capacity);
}

std::shared_ptr<const FileBytes> FileBytes::load(const std::string& path) {
  if (path == "-") return read_all(0, "stdin");
  const uint64_t chunk = g_tuning.chunk, min_read = g_tuning.min_read;
  const bool force = g_tuning.force;
  // Anything but a large regular file that fits easily in memory is mapped
  // (a file larger than a quarter of the memory stays evictable page cache).
  const uint64_t memory = uint64_t(::sysconf(_SC_PHYS_PAGES)) * uint64_t(::sysconf(_SC_PAGESIZE));
  struct stat st {};
  const bool known = ::stat(path.c_str(), &st) == 0;
  if (known && (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode))) {
    Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.ok()) throw Error("cannot open: " + errno_text(), path);
    note_input(fd.get());
    return read_all(fd.get(), path);
  }
  if ((!force && !huge_pages_available()) || !known ||
      !S_ISREG(st.st_mode) || st.st_size == 0 || uint64_t(st.st_size) < min_read ||
      uint64_t(st.st_size) > memory / 4)
    return std::make_shared<const FileBytes>(std::make_shared<MappedFile>(path));
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.ok()) throw Error("cannot open: " + errno_text(), path);
  if (::fstat(fd.get(), &st) != 0) throw Error("cannot stat: " + errno_text(), path);
  if (!S_ISREG(st.st_mode) || st.st_size == 0)  // replaced since: as any other file
    return std::make_shared<const FileBytes>(std::make_shared<MappedFile>(path));
  note_input(fd.get());
  const size_t size = size_t(st.st_size), capacity = (size + kHugePage - 1) / kHugePage * kHugePage;
  void* m = ::mmap(nullptr, capacity, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) throw Error("cannot allocate " + std::to_string(size) + " bytes: " + errno_text(), path);
  auto out = std::make_shared<FileBytes>(static_cast<uint8_t*>(m), size, capacity);
  ::madvise(m, capacity, MADV_HUGEPAGE);
  // Each thread reads a run of chunks: the huge pages are faulted in (and
  // zeroed by the kernel) on all cores at once.
  const uint64_t chunks = (size + chunk - 1) / chunk;
  uint8_t* const buf = static_cast<uint8_t*>(m);
  parallel_for(chunks, 0, std::max<uint64_t>(1, (uint64_t(4) << 20) / chunk), [&](uint64_t b, uint64_t e) {
    for (uint64_t c = b; c < e; c++) {
      const uint64_t off = c * chunk;
      pread_all(fd.get(), buf + off, std::min<uint64_t>(chunk, size - off), off, path);
    }
  });
  ::mprotect(m, capacity, PROT_READ);
  return out;
}

}  // namespace wit
