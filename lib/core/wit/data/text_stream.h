// Text records streamed in one pass: a regular file in parts on all threads
// (stream_text_records), a stream read once in order with bounded memory
// (stream_fd_records). The records are exactly RecordSource::open's
// (readers.h); docs/commitment.md and docs/records.md, "Streaming input".
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "wit/base/bytes.h"
#include "wit/base/parallel.h"

namespace wit {

struct ReaderSpec;

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
uint64_t stream_fd_records(const ReaderSpec& spec, int fd, const std::string& path, unsigned threads, uint64_t align,
                           const std::function<void(unsigned slot, const StreamChunk& chunk)>& work,
                           const std::function<void(unsigned slot, const StreamChunk& chunk)>& done);

}  // namespace wit
