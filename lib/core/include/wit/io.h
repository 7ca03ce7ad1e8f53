// File input and crash-safe output: read-only memory maps, whole-file reads
// ("-" is stdin), and atomic writes (temp file, fsync, rename) so a failed
// tool never leaves a partial output behind.
#pragma once
#include <memory>
#include <string>

#include "wit/bytes.h"

namespace wit {

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

// Writes `path` atomically: bytes go to a temporary file beside it, which is
// fsync'd and renamed over `path` by commit(). Destroying an uncommitted
// writer removes the temporary file. "-" writes to stdout instead (commit
// flushes), refusing binary output to a terminal when `binary` is set.
class AtomicFile {
 public:
  explicit AtomicFile(const std::string& path, bool binary = false);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  void write(ByteView v);
  void write(const std::string& s) { write(ByteView(s)); }
  void commit();

 private:
  std::string path_, tmp_;
  int fd_ = -1;
  bool stdout_ = false, direct_ = false, done_ = false;
};

// Convenience: atomically replace `path` ("-" = stdout) with `content`.
void write_file_atomic(const std::string& path, const std::string& content, bool binary = false);

// Makes a create or rename in `path`'s directory durable (fsync of the directory).
void sync_parent_dir(const std::string& path);

bool is_terminal_stdout();
bool is_terminal_stderr();

}  // namespace wit
