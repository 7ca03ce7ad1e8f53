// Record readers: turn files into an ordered list of records whose canonical
// bytes are what gets hashed (docs/records.md). The reader spec is part of a
// commitment, so a query hashes exactly the bytes the commitment did.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "wit/base/bytes.h"
#include "wit/base/io.h"
#include "wit/base/page_buffer.h"  // FileBytes
#include "wit/base/parallel.h"
#include "wit/data/text_stream.h"  // streaming records in one pass

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

// The tokens reader's check of an input's size (a whole number of ids):
// throws its error (docs/records.md, tokens) naming `path`.
void check_token_size(uint64_t size, unsigned token_bytes, const std::string& path);

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

}  // namespace wit
