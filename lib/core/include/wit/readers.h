// Record readers: turn files into an ordered list of records whose canonical
// bytes are what gets hashed (docs/records.md). The reader spec is part of a
// commitment, so a query hashes exactly the bytes the commitment did.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "wit/bytes.h"
#include "wit/io.h"
#include "wit/parallel.h"

namespace wit {

enum class ReaderKind { kJsonl, kLines, kFortune, kTokens, kFiles };

struct ReaderSpec {
  ReaderKind kind = ReaderKind::kLines;
  std::string field = "text";  // jsonl only
  uint64_t seq_len = 0;        // tokens only: tokens per record (window)
  unsigned token_bytes = 2;    // tokens only: bytes per little-endian id, 2 (uint16) or 4 (uint32)

  // {"kind": "jsonl", "field": "text"} / {"kind": "tokens", "seq_len": 1024} / {"kind": "lines"} ...
  // Only the keys that apply to the kind are written, so the JSON is canonical;
  // tokens writes "token_bytes": 4 for uint32 ids and nothing for the default
  // uint16 ids (so a uint16 commitment is what it always was).
  nlohmann::json to_json() const;
  // Throws wit::Error("invalid reader spec: ...", where) on unknown kinds or bad values.
  static ReaderSpec from_json(const nlohmann::json& j, const std::string& where);
  // Parses a kind name ("jsonl", "lines", "fortune", "tokens", "files"); throws wit::Error.
  static ReaderKind parse_kind(const std::string& name);
  static const char* kind_name(ReaderKind k);
  // Every kind name, in documentation order (the tools' --reader choices).
  static std::vector<std::string> kind_names();
  // Throws wit::Error when the combination is unusable (tokens without seq_len > 0, ...).
  void validate() const;
};

// Token ids of a `tokens` record: little-endian, `token_bytes` (2 or 4) bytes
// each (docs/records.md). The one decoder of token records: training,
// contamination and the vocabulary check all read ids through it.
inline uint64_t token_count(ByteView record, unsigned token_bytes) { return record.size / token_bytes; }
inline uint32_t token_id(ByteView record, unsigned token_bytes, uint64_t i) {
  const uint8_t* p = record.data + i * token_bytes;
  uint32_t v = uint32_t(p[0]) | uint32_t(p[1]) << 8;
  if (token_bytes == 4) v |= uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
  return v;
}
// The first id >= bound in `record` ({position, id}), or position == count when none is.
struct TokenAt {
  uint64_t position = 0;
  uint32_t id = 0;
};
TokenAt first_token_at_least(ByteView record, unsigned token_bytes, uint64_t bound);

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

// One input file as the reader saw it (for the commitment's source list).
struct SourceFile {
  std::string path;                         // as given, or dir/relative-path for the files reader
  std::shared_ptr<const FileBytes> content;  // whole file bytes; null where the reader reads with
                                             // RecordSource::read_bytes instead (tokens, a regular file)
  uint64_t size = 0;                        // bytes in the file
};

// The records of one input path (a file, or a directory for the files reader),
// split up front; canonical bytes are produced on demand and record() is safe
// to call from several threads at once.
class RecordSource {
 public:
  virtual ~RecordSource() = default;
  // Opens `path` and splits it into records. Throws wit::Error naming the file
  // (and line, for text formats) on malformed input.
  static std::unique_ptr<RecordSource> open(const ReaderSpec& spec, const std::string& path);

  virtual uint64_t count() const = 0;
  // Canonical bytes of record i (i < count()). The view points into the mapped
  // file or into `scratch`, and stays valid until `scratch` changes.
  // Throws wit::Error naming file and line when the record is malformed.
  virtual ByteView record(uint64_t i, std::string& scratch) const = 0;
  // 1-based line of record i in its file for text readers (for messages), else 0.
  virtual uint64_t line_of(uint64_t i) const = 0;
  // The files read, in record order.
  virtual const std::vector<SourceFile>& files() const = 0;

  // Bytes per record where every record is that many raw bytes of the one
  // file, record i at byte i * fixed_size() (tokens); else 0.
  virtual uint64_t fixed_size() const { return 0; }
  // Copies bytes [offset, offset + len) of a single-file source into buf, for
  // streaming through the file (a page fault per 4 KiB of a mapping costs
  // more than copying: docs/commitment.md, "Performance"). Throws wit::Error
  // naming the file if it cannot be read or has changed size.
  virtual void read_bytes(uint64_t offset, uint64_t len, uint8_t* buf) const;
};

// One call of stream_text_records: `fresh` is the bytes of the file just
// read, [offset, offset + fresh.size) (whole `align`-byte pieces of the
// part's range, the last piece of the file excepted); `records` are the
// part's records completed since the previous call, in file order (views of
// the read buffer or of decoded text, valid during the call only).
// A chunk's record views (huge pages: a fault per 2 MiB, not per 4 KiB).
using RecordViews = std::vector<ByteView, HugePageAllocator<ByteView>>;

struct StreamChunk {
  uint64_t offset = 0;
  ByteView fresh;
  const RecordViews* records = nullptr;
};

// Committing a text file in one pass (docs/commitment.md, "Performance"):
// the records of `path` read with the jsonl or lines reader, exactly those
// RecordSource::open would give, found while each chunk of the file is in
// cache instead of after reading the whole file into memory. The file is cut
// into up to `parts` ranges of whole `align`-byte pieces, streamed on a thread
// each through one reused buffer of 16 pieces; fn(part, chunk) is called for
// each chunk of part `part` in file order (calls of different parts run at
// once). A record belongs to the part in which its line starts.
// Returns false, having perhaps called fn, when the file cannot be streamed:
// not a regular file (stdin, a pipe), a file of size 0 (empty, or one whose
// size stat does not know, as in /proc), another reader, a line of which more
// than 16 MiB must be carried from one chunk to the next (lines up to 16 MiB
// always stream), any line RecordSource::open would refuse (malformed JSON, too
// many lines), a read error or a file that changed size. The caller then
// discards what fn saw and uses RecordSource::open, which reports the
// problem in its words. `size` is set to the file's size.
// jsonl lines are parsed as simdjson document streams of this many bytes (one
// stage 1 over many lines); a longer line is parsed alone, as is any line the
// stream does not match line for line (the verdict is always open()'s).
inline constexpr uint64_t kJsonlStreamBatch = uint64_t(1) << 20;
bool stream_text_records(const ReaderSpec& spec, const std::string& path, unsigned parts, uint64_t align,
                         const std::function<void(unsigned part, const StreamChunk& chunk)>& fn, uint64_t& size);

// Committing a stream (stdin, a pipe, a fifo, a device) in one sequential
// pass, with bounded memory (docs/records.md, "Streaming input"): the jsonl,
// lines or fortune records of the bytes read from `fd` until its end,
// exactly those RecordSource::open would give for a file of the same bytes.
// The input is read once, 8 `align`-byte pieces at a time (more, in whole
// such chunks, after a line longer than that), into one of
// stream_slots(threads) buffers; a line cut by a read (for fortune, all
// after the last "%" line) is carried to the next buffer (a buffer grows for
// a line longer than 1 MiB and shrinks again).
// Each chunk's records are parsed on one of `threads` workers (0: all
// cores), which then calls work(slot, chunk) (chunks in any order, several at
// once); done(slot, chunk) follows for every chunk in input order, one at a
// time, with the same slot (slot < stream_slots(threads): per-chunk results
// can live there until done). `chunk.fresh` is the bytes read for the chunk:
// whole `align` pieces at chunk.offset, the input's last piece excepted;
// `chunk.records` the records of the lines that were carried into it or
// start in it and end before the next chunk's carried line. A line the reader refuses throws the reader's error, naming its
// line and byte offset ("...: stdin:LINE at byte OFFSET"), once the chunks
// before it are done (nothing after it is); so does an exception from work
// or done, and a read error. Returns the bytes read. `path` names the input
// in messages ("-" is stdin).
unsigned stream_slots(unsigned threads);
// Reads from fd until `len` bytes or the end of the input; returns the bytes
// read. Throws wit::Error("cannot read: ...", "PATH at byte N"), N = `offset`
// (the input offset of buf[0]) plus the bytes read before the error.
uint64_t read_up_to(int fd, uint8_t* buf, uint64_t len, const std::string& path, uint64_t offset);
// The tokens reader's check of an input's size (a whole number of ids):
// throws its error (docs/records.md, tokens) naming `path`.
void check_token_size(uint64_t size, unsigned token_bytes, const std::string& path);
uint64_t stream_fd_records(const ReaderSpec& spec, int fd, const std::string& path, unsigned threads, uint64_t align,
                           const std::function<void(unsigned slot, const StreamChunk& chunk)>& work,
                           const std::function<void(unsigned slot, const StreamChunk& chunk)>& done);

}  // namespace wit
