// The bytes of an input file in memory (FileBytes), and reading a file's
// bytes at an offset (pread_all): the buffers the readers read into.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "wit/base/bytes.h"
#include "wit/base/io.h"

namespace wit {

// Reads bytes [offset, offset + len) of the file open as `fd` into buf, the
// one pread loop (EINTR retried, short reads continued). Throws wit::Error
// naming `where`: "cannot read: ..." or, when the file ends first, `shorter`
// (each caller says what a file that shrank means for it).
inline constexpr const char* kShorterThanOpened = "file changed while reading (it is shorter than when opened)";
void pread_all(int fd, uint8_t* buf, uint64_t len, uint64_t offset, const std::string& where,
               const char* shorter = kShorterThanOpened);

// The whole bytes of one input file, in memory, for readers whose records are
// views of it. A large regular file is read with pread, in chunks on all
// threads, into anonymous memory backed by transparent huge pages: a mapping
// of the page cache costs a page fault (or a populate step) per 4 KiB, which
// was a sixth of a JSONL commit (docs/commitment.md, "Performance"). Small
// files, stdin, special files, and systems without transparent huge pages
// (where 4 KiB anonymous pages would cost more than the mapping) use
// MappedFile. Read-only once loaded.
class FileBytes {
 public:
  // Throws wit::Error naming the file ("cannot open: ...", "is a directory",
  // "cannot read: ...", "file changed while reading ...").
  static std::shared_ptr<const FileBytes> load(const std::string& path);
  // stdin, a pipe or a device (`name` for messages): read to its end.
  static std::shared_ptr<const FileBytes> read_all(int fd, const std::string& name);
  explicit FileBytes(std::shared_ptr<MappedFile> mapped);
  FileBytes(uint8_t* buf, size_t size, size_t capacity);  // takes an anonymous mapping
  ~FileBytes();
  FileBytes(const FileBytes&) = delete;
  FileBytes& operator=(const FileBytes&) = delete;
  ByteView view() const { return {data_, size_}; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  // True when the bytes were read into memory rather than held by a MappedFile.
  bool was_read() const { return !mapped_; }

  // Tuning, for tests: bytes per pread (default 1 MiB) and the file size
  // from which a file is read rather than mapped (default 4 MiB); `force`
  // reads even without transparent huge pages. Not thread-safe against a
  // concurrent load(); reset_tuning() restores the defaults.
  static void set_tuning(uint64_t chunk, uint64_t min_read_size, bool force);
  static void reset_tuning();

 private:
  std::shared_ptr<MappedFile> mapped_;
  uint8_t* buf_ = nullptr;  // anonymous mapping of capacity_ bytes, when read
  size_t capacity_ = 0;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace wit
