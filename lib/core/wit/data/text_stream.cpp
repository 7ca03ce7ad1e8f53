// Streaming text records in one pass (docs/commitment.md, "Performance";
// docs/records.md, "Streaming input"): a regular file in parts on all
// threads (stream_text_records, TextStreamer) and a stream (stdin, a pipe,
// a fifo) read once, in order, with bounded memory (stream_fd_records).
// The records and errors are the readers' own (line_rules.h).
#include "wit/data/text_stream.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <simdjson.h>

#include "wit/base/error.h"
#include "wit/base/io.h"
#include "wit/base/parallel.h"
#include "wit/data/readers.h"
#include "wit/data/line_rules.h"

namespace wit {

namespace {

// The end of the last "%" line of b[0, have) (after its '\n'), b[0] being a
// line's first byte; 0 when there is none. A stream of fortunes is cut there:
// no record crosses it.
uint64_t fortune_cut(const uint8_t* b, uint64_t have) {
  for (uint64_t e = have; e > 0;) {
    const void* nl = ::memrchr(b, '\n', e);
    if (!nl) return 0;
    const uint64_t p = uint64_t(static_cast<const uint8_t*>(nl) - b);
    const void* before = p > 0 ? ::memrchr(b, '\n', p) : nullptr;
    const uint64_t q = before ? uint64_t(static_cast<const uint8_t*>(before) - b) + 1 : 0;
    const uint64_t len = p - q - (p > q && b[p - 1] == '\r' ? 1 : 0);
    if (len == 1 && b[q] == '%') return p + 1;
    e = q;
  }
  return 0;
}

// One part of stream_text_records: lines starting in [begin, end) of the
// file open as fd, read `chunk` bytes at a time into one buffer; a line cut
// by a chunk's end is moved to the buffer's front and completed by the next
// read, and the part's last line is completed by reading past `end`.
class TextStreamer {
 public:
  // The longest line (or run of bytes before a part's first line) streamed.
  static constexpr uint64_t kMaxCarry = uint64_t(16) << 20;
  // Bytes per stage 1 of a document stream (simdjson's batch size: 64 KiB
  // to 1 MiB measured alike): a longer line is parsed alone.
  static constexpr uint64_t kBatch = kJsonlStreamBatch;
  // Bytes of lines per document stream (at most: streams end before a line
  // with a surrogate escape), so that they are read from cache by stage 1
  // after the scan for '\\'.
  static constexpr uint64_t kSegment = uint64_t(256) << 10;
  // A shorter run of lines is parsed one line at a time, and so are the
  // next kAlone bytes (lines with surrogate escapes are thick there).
  static constexpr uint64_t kMinStream = 1024, kAlone = uint64_t(64) << 10;

  TextStreamer(const ReaderSpec& spec, int fd, uint64_t size, uint64_t chunk)
      : spec_(spec), fd_(fd), size_(size), chunk_(chunk),
        capacity_((chunk + 2 * kMaxCarry + simdjson::SIMDJSON_PADDING + (size_t(2) << 20) - 1) /
                  (size_t(2) << 20) * (size_t(2) << 20)),
        field_(spec.field), quoted_field_("\"" + spec.field + "\""), h_(field_) {
    try {
      buf_ = static_cast<uint8_t*>(huge_alloc(capacity_));
    } catch (const std::bad_alloc&) {
      return;
    }
    if (spec.kind == ReaderKind::kJsonl) arena_.reserve(capacity_);
#ifdef SIMDJSON_THREADS_ENABLED
    many_.threaded = false;  // no lookahead thread: the parts are the threads
#endif
    recs_.reserve(size_t(chunk / 64) + 1024);  // grown, rarely, for shorter lines
  }
  // For stream_fd_records: parse_region() parses lines of buffers the caller owns.
  explicit TextStreamer(const ReaderSpec& spec)
      : spec_(spec), fd_(-1), size_(0), chunk_(0), capacity_(0), field_(spec.field),
        quoted_field_("\"" + spec.field + "\""), h_(field_) {
#ifdef SIMDJSON_THREADS_ENABLED
    many_.threaded = false;
#endif
  }
  ~TextStreamer() {
    if (capacity_) huge_free(buf_, capacity_);
  }
  TextStreamer(const TextStreamer&) = delete;
  TextStreamer& operator=(const TextStreamer&) = delete;

  // False when the part cannot be streamed (see stream_text_records).
  bool run(unsigned part, uint64_t begin, uint64_t end,
           const std::function<void(unsigned, const StreamChunk&)>& fn) {
    if (!buf_) return false;
    // A line starts at `begin` if it is 0 or follows a '\n'; else the line
    // running into the part is the previous part's.
    bool skipping = false;
    if (begin > 0) {
      uint8_t before = 0;
      if (!read(&before, 1, begin - 1)) return false;
      skipping = before != '\n';
    }
    uint64_t carry = 0;  // bytes of a cut line at buf_[0, carry)
    for (uint64_t pos = begin; pos < end;) {
      const uint64_t n = std::min(chunk_, end - pos);
      if (!read(buf_ + carry, n, pos)) return false;
      uint64_t start = 0, stop = carry + n;
      if (skipping) {
        const void* nl = std::memchr(buf_, '\n', n);
        if (nl) {
          start = uint64_t(static_cast<const uint8_t*>(nl) - buf_) + 1;
          skipping = false;
        } else {
          start = stop;  // all of this chunk is the previous part's line
        }
      }
      recs_.clear();
      arena_.clear();
      if (!whole_lines(start, stop)) return false;
      if (pos + n == end && start < stop) {
        // The part's last line runs on past its end (or is the file's last,
        // without a '\n'): read on until it ends.
        uint64_t at = end;
        const uint8_t* nl = nullptr;
        while (!nl && at < size_) {
          const uint64_t more = std::min<uint64_t>(uint64_t(64) << 10, size_ - at);
          if (stop + more + simdjson::SIMDJSON_PADDING > capacity_ || !read(buf_ + stop, more, at)) return false;
          nl = static_cast<const uint8_t*>(std::memchr(buf_ + stop, '\n', more));
          stop += more;
          at += more;
        }
        if (!line(start, nl ? uint64_t(nl - buf_) : stop)) return false;
        start = stop;
      }
      fn(part, StreamChunk{pos, ByteView(buf_ + carry, n), &recs_});
      const uint64_t rest = stop - start;  // a cut line, for the next chunk
      if (rest > kMaxCarry) return false;
      if (rest && start != 0) std::memmove(buf_, buf_ + start, rest);
      carry = skipping ? 0 : rest;
      pos += n;
    }
    return true;
  }

  uint64_t lines() const { return lines_; }

  // stream_fd_records: the records of the lines in buf[0, t), of which all
  // but the last end in '\n' (`last`: the input's last, which may not);
  // `buf` has SIMDJSON_PADDING bytes readable past t. lines() counts them.
  // False at the first line the reader refuses: bad() says why.
  bool parse_region(uint8_t* buf, uint64_t t) {
    buf_ = buf;
    recs_.clear();
    arena_.clear();
    lines_ = 0;
    bad_ = Bad{};
    if (spec_.kind != ReaderKind::kLines && arena_.capacity() < t) arena_.reserve(t);  // values are shorter than lines
    if (spec_.kind == ReaderKind::kFortune) {
      const ByteView b(buf, t);
      fortune_records(b, 1, [&](uint64_t off, uint64_t len, uint64_t, bool inner_cr) {
        if (!inner_cr) return recs_.push_back(b.sub(off, len));
        const ByteView v = fortune_bytes(b.sub(off, len), true, scratch_);
        const size_t at = arena_.size();
        arena_.append(v.str());
        recs_.push_back(ByteView(reinterpret_cast<const uint8_t*>(arena_.data()) + at, v.size));
      });
      lines_ = uint64_t(std::count(buf, buf + t, uint8_t('\n'))) + (t > 0 && buf[t - 1] != '\n' ? 1 : 0);
      return true;
    }
    uint64_t start = 0;
    if (!whole_lines(start, t)) return false;
    return start == t || line(start, t);
  }
  const RecordViews& records() const { return recs_; }
  // Why parse_region() refused a line.
  struct Bad {
    uint64_t off = 0, end = 0;  // the line, buf[off, end)
    uint64_t line = 0;          // its number, counted from the region's first line (1)
    std::string what;
  };
  const Bad& bad() const { return bad_; }

 private:
  // The lines of buf_[start, stop) that end in '\n': their records; start is
  // left at the cut line after them (or at stop).
  bool whole_lines(uint64_t& start, uint64_t stop) {
    if (spec_.kind == ReaderKind::kJsonl) {
      if (const void* nl = start < stop ? ::memrchr(buf_ + start, '\n', stop - start) : nullptr) {
        const uint64_t t = uint64_t(static_cast<const uint8_t*>(nl) - buf_) + 1;
        if (!jsonl_lines(start, t)) return false;
        start = t;
      }
    }
    while (start < stop) {
      const void* nl = std::memchr(buf_ + start, '\n', stop - start);
      if (!nl) break;
      const uint64_t e = uint64_t(static_cast<const uint8_t*>(nl) - buf_);
      if (!line(start, e)) return false;
      start = e + 1;
    }
    return true;
  }

  bool read(uint8_t* to, uint64_t len, uint64_t offset) {
    while (len > 0) {
      const ssize_t got = ::pread(fd_, to, len, off_t(offset));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) return false;
      to += got;
      offset += uint64_t(got);
      len -= uint64_t(got);
    }
    return true;
  }

  // The line at buf_[s, e) (without its '\n'): its record, if it has one.
  bool line(uint64_t s, uint64_t e) {
    lines_++;
    const uint8_t* p = buf_ + s;
    const uint64_t len = e - s;
    if (spec_.kind == ReaderKind::kLines) {
      const uint64_t l = len - (len > 0 && p[len - 1] == '\r' ? 1 : 0);
      if (l > 0) recs_.push_back(ByteView(p, l));
      return true;
    }
    // jsonl: blank lines (JSON whitespace) are no records; a line is an
    // object with the field, as JsonlSource's simdjson-then-nlohmann verdict.
    if (std::all_of(p, p + len, [](uint8_t c) { return c == ' ' || c == '\t' || c == '\r'; })) return true;
    const char* c = reinterpret_cast<const char*>(p);
    std::string_view value;
    const std::string_view text(c, len);
    if (has_surrogate_escape(text) || !simd_field(parser_, field_, c, len, value)) return reference(s, e);
    return emit(p, text, value);
  }

  // The jsonl line at buf_[s, e) as the reference parser (nlohmann) decides.
  bool reference(uint64_t s, uint64_t e) {
    const char* c = reinterpret_cast<const char*>(buf_ + s);
    if (!h_.parse(c, c + (e - s))) {  // open() words the error (stream_fd_records: bad_)
      bad_ = Bad{s, e, lines_, field_error(h_, field_)};
      return false;
    }
    return emit(buf_ + s, std::string_view(c, e - s), h_.value);
  }

  // The complete jsonl lines at buf_[s, t) (buf_[t - 1] is '\n'). Lines with
  // a surrogate escape go to the reference parser (nlohmann decides them);
  // the runs of lines between them, up to kSegment bytes each, to
  // stream_lines(). Where such lines come closer than kMinStream bytes apart
  // (a stream would not pay for itself), the next kAlone bytes of lines are
  // parsed one at a time by line(), as they always were.
  bool jsonl_lines(uint64_t s, uint64_t t) {
    uint64_t restarts = 4 + (t - s) / kBatch;  // streams stream_lines may start again
    uint64_t alone_until = s;                  // lines starting before this go to line()
    while (s < t) {
      if (s >= alone_until) {
        const uint64_t seg = segment_end(s, t);
        if (seg - s >= kMinStream) {
          if (!stream_lines(s, seg, restarts)) return false;
          s = seg;
          if (s < t) {  // a line with a surrogate escape
            const uint64_t e = uint64_t(static_cast<const uint8_t*>(std::memchr(buf_ + s, '\n', t - s)) - buf_);
            lines_++;
            if (!reference(s, e)) return false;
            s = e + 1;
          }
          continue;
        }
        alone_until = s + kAlone;
      }
      const uint64_t e = uint64_t(static_cast<const uint8_t*>(std::memchr(buf_ + s, '\n', t - s)) - buf_);
      if (!line(s, e)) return false;
      s = e + 1;
    }
    return true;
  }

  // The end of the run of lines from s (a line start) before the first line
  // with a surrogate escape, or after about kSegment bytes (at a line's
  // end), whichever is first: one memchr for '\\' over the run, which
  // stage 1 then reads from cache; only lines with a '\\' are looked at.
  uint64_t segment_end(uint64_t s, uint64_t t) const {
    uint64_t limit = t;
    if (t - s > kSegment)
      limit = uint64_t(static_cast<const uint8_t*>(std::memchr(buf_ + s + kSegment, '\n', t - s - kSegment)) - buf_) + 1;
    for (uint64_t from = s; from < limit;) {
      const void* q = std::memchr(buf_ + from, '\\', limit - from);
      if (!q) break;
      const uint64_t at = uint64_t(static_cast<const uint8_t*>(q) - buf_);
      const void* before = ::memrchr(buf_ + s, '\n', at - s);
      const uint64_t b = before ? uint64_t(static_cast<const uint8_t*>(before) - buf_) + 1 : s;
      const uint64_t e = uint64_t(static_cast<const uint8_t*>(std::memchr(buf_ + at, '\n', t - at)) - buf_);
      if (has_surrogate_escape(std::string_view(reinterpret_cast<const char*>(buf_) + b, e - b))) return b;
      from = e + 1;
    }
    return limit;
  }

  // The complete jsonl lines at buf_[s, t), none with a surrogate escape,
  // parsed by simdjson's document stream: one stage 1 over all of them
  // instead of one per line. A document is taken as a line's only when it is
  // an object that starts at the line's first non-blank byte and ends before
  // its '\n' with only blanks after it: it is then the line's bytes, parsed
  // as line() would parse them alone (no string can cross a '\n': simdjson
  // refuses a raw control character in a string). A line that is not an
  // object with the field once, as a string, goes to line(), which decides;
  // a line the stream does not match (an error, a document spanning lines,
  // two on one line, a scalar) goes to line() too and the stream restarts
  // after it, `restarts` times at most (then line() takes every line), so
  // that a file of such lines costs at most about two more stage 1 passes
  // (each segment's first stream, and the restarts).
  bool stream_lines(uint64_t s, uint64_t t, uint64_t& restarts) {
    auto blank = [](uint8_t c) { return c == ' ' || c == '\t' || c == '\r'; };
    bool first = true;
    while (s < t) {
      if (first || restarts > 0) {
        if (!first) restarts--;
        first = false;
        simdjson::dom::document_stream docs;
        if (!many_.parse_many(buf_ + s, t - s, kBatch).get(docs)) {
          const uint64_t base = s;
          auto it = docs.begin();
          while (s < t) {
            const uint8_t* p = buf_ + s;
            const uint64_t len = uint64_t(static_cast<const uint8_t*>(std::memchr(p, '\n', t - s)) - p);
            uint64_t b = 0;
            while (b < len && blank(p[b])) b++;
            if (b == len) {  // a blank line: no record, no document
              lines_++;
              s += len + 1;
              continue;
            }
            simdjson::dom::element doc;
            if (p[b] != '{' || !(it != docs.end()) || it.current_index() != s + b - base || (*it).get(doc))
              break;
            const uint64_t doc_end = b + it.source().size();
            if (doc_end > len || !std::all_of(p + doc_end, p + len, blank)) break;
            const std::string_view text(reinterpret_cast<const char*>(p), len);
            std::string_view value;
            if (!object_field(doc, field_, value)) {
              if (!line(s, s + len)) return false;
            } else {
              lines_++;
              if (!emit(p, text, value)) return false;
            }
            ++it;
            s += len + 1;
          }
          if (s == t) break;
        }
      }
      // This line alone, then a new stream after it.
      const uint64_t e = uint64_t(static_cast<const uint8_t*>(std::memchr(buf_ + s, '\n', t - s)) - buf_);
      if (!line(s, e)) return false;
      s = e + 1;
    }
    return true;
  }

  // Adds the record of a jsonl line whose field decodes to `value`.
  bool emit(const uint8_t* p, std::string_view text, std::string_view value) {
    // Bytes equal to the value, as record() returns them: in the line itself
    // when they lie there verbatim, else a copy of the decoded text.
    if (const size_t q = verbatim_after_key(text, value, quoted_field_); q != std::string_view::npos) {
      recs_.push_back(ByteView(p + q, value.size()));
      return true;
    }
    if (arena_.size() + value.size() > arena_.capacity()) {
      bad_ = Bad{size_t(p - buf_), size_t(p - buf_) + text.size(), lines_, "internal: decoded values overflow"};
      return false;
    }
    const size_t at = arena_.size();
    arena_.append(value);
    recs_.push_back(ByteView(reinterpret_cast<const uint8_t*>(arena_.data()) + at, value.size()));
    return true;
  }

  const ReaderSpec& spec_;
  int fd_;
  uint64_t size_, chunk_;
  size_t capacity_;
  uint8_t* buf_ = nullptr;
  const std::string& field_;
  const std::string quoted_field_;
  FieldFinder h_;
  simdjson::dom::parser parser_;  // one line at a time
  simdjson::dom::parser many_;    // document streams of many lines
  std::string arena_;  // decoded jsonl values, reserved once (never moves)
  RecordViews recs_;
  uint64_t lines_ = 0;
  Bad bad_;
  std::string scratch_;  // a fortune record rebuilt without its "\r"s
};

}  // namespace

// ---------------------------------------------------------------- streaming

bool stream_text_records(const ReaderSpec& spec, const std::string& path, unsigned parts, uint64_t align,
                         const std::function<void(unsigned, const StreamChunk&)>& fn, uint64_t& size) {
  if ((spec.kind != ReaderKind::kJsonl && spec.kind != ReaderKind::kLines) || path == "-" || align == 0 ||
      spec_problem(spec))
    return false;
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  struct stat st {};
  // Size 0: empty, or a file whose size stat does not know (/proc): read whole.
  if (!fd.ok() || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0) return false;
  note_input(fd.get());
  size = uint64_t(st.st_size);
  const uint64_t pieces = (size + align - 1) / align;
  if (parts == 0) parts = default_threads();
  parts = unsigned(std::max<uint64_t>(1, std::min<uint64_t>(parts, pieces)));
  const uint64_t chunk = align * std::max<uint64_t>(1, std::min<uint64_t>(16, (pieces + parts - 1) / parts));
  std::atomic<bool> ok{true};
  std::atomic<uint64_t> lines{0};
  parallel_for(parts, parts, 1, [&](uint64_t b, uint64_t e) {
    for (uint64_t p = b; p < e && ok; p++) {
      const uint64_t begin = std::min(size, pieces * p / parts * align),
                     end = std::min(size, pieces * (p + 1) / parts * align);
      TextStreamer s(spec, fd.get(), size, chunk);
      if (!s.run(unsigned(p), begin, end, fn)) ok = false;
      lines += s.lines();
    }
  });
  // The jsonl reader numbers lines in 32 bits: open() refuses more.
  if (spec.kind == ReaderKind::kJsonl && lines.load() > UINT32_MAX) return false;
  // A file that grew while read would hold records the digest does not cover.
  struct stat after {};
  if (::fstat(fd.get(), &after) != 0 || uint64_t(after.st_size) != size) return false;
  return ok;
}

// ---------------------------------------------------------------- streaming a pipe

uint64_t read_up_to(int fd, uint8_t* buf, uint64_t len, const std::string& path, uint64_t offset) {
  uint64_t got = 0;
  while (got < len) {
    const ssize_t r = ::read(fd, buf + got, size_t(std::min<uint64_t>(len - got, uint64_t(1) << 30)));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) throw Error("cannot read: " + errno_text(), display_name(path) + " at byte " + std::to_string(offset + got));
    if (r == 0) break;
    got += uint64_t(r);
  }
  return got;
}

unsigned stream_slots(unsigned threads) { return (threads == 0 ? default_threads() : threads) + 2; }

// A stream is read in chunks of 8 pieces (8 MiB for the text readers' 1 MiB
// pieces), not 16: a chunk is parsed by one worker, so the last one runs
// alone while the other cores wait, and the first must be read whole before
// any parse starts; and each slot's buffer is fresh memory, which costs about
// 1.3 ms a MB to touch on the machines measured. Not fewer: a chunk's source
// digest pieces are hashed side by side, one per SIMD lane, and 8 fill
// AVX-512's (4 pieces measured as fast in wall time but hashed on AVX2's
// four lanes). docs/records.md, "Streaming input".
constexpr uint64_t kStreamPieces = 8;

// The reading thread (the caller's) fills one slot at a time: the cut line
// carried from the previous chunk, then up to kStreamPieces `align` pieces
// read from fd; the whole lines in it (all of it at the end of the input) are its
// region, the rest is carried into the next slot, after which the previous
// slot goes to the workers. Workers parse a region and call work() on it, in
// any order; whoever finishes the oldest chunk calls done() for every
// finished chunk in input order (under the lock) and frees their slots. A
// refused line is reported when its chunk's turn comes, so the error is the
// input's first, numbered by the lines of the chunks before it.
uint64_t stream_fd_records(const ReaderSpec& spec, int fd, const std::string& path, unsigned threads, uint64_t align,
                           const std::function<void(unsigned slot, const StreamChunk& chunk)>& work,
                           const std::function<void(unsigned slot, const StreamChunk& chunk)>& done) {
  spec.validate();
  if ((spec.kind != ReaderKind::kJsonl && spec.kind != ReaderKind::kLines && spec.kind != ReaderKind::kFortune) ||
      align == 0)
    throw Error("internal: stream_fd_records reads the jsonl, lines and fortune readers only");
  if (threads == 0) threads = default_threads();
  const unsigned nslots = stream_slots(threads);
  const bool jsonl = spec.kind == ReaderKind::kJsonl;
  const uint64_t chunk = align * kStreamPieces;
  auto round_up = [](uint64_t b) { return (b + (uint64_t(2) << 20) - 1) / (uint64_t(2) << 20) * (uint64_t(2) << 20); };
  // Room for the chunk and a carried line of up to 1 MiB; a longer line grows its slot.
  const uint64_t base_cap = round_up(chunk + (uint64_t(1) << 20) + simdjson::SIMDJSON_PADDING);
  struct Slot {
    uint8_t* buf = nullptr;
    uint64_t cap = 0;
    uint64_t start = 0;   // input offset of buf[0]
    uint64_t carry = 0;   // buf[0, carry): the line cut at the previous chunk's end
    uint64_t n = 0;       // buf[carry, carry + n): read for this chunk
    uint64_t region = 0;  // buf[0, region): the whole lines parsed with it
    bool last = false;    // the input ends with this chunk
    bool too_long = false;  // the line carried on from it is already too long for jsonl
    bool parsed = false, worked = false;
    std::exception_ptr error;  // thrown by work()
    std::unique_ptr<TextStreamer> parser;
  };
  std::vector<Slot> slots(nslots);
  struct Buffers {
    std::vector<Slot>& s;
    ~Buffers() {
      for (Slot& x : s) huge_free(x.buf, x.cap);
    }
  } free_buffers{slots};
  for (Slot& x : slots) x.parser = std::make_unique<TextStreamer>(spec);

  std::mutex mu;
  std::condition_variable cv;
  std::vector<unsigned> free_slots;
  for (unsigned u = 0; u < nslots; u++) free_slots.push_back(nslots - 1 - u);
  std::deque<unsigned> ready;
  std::vector<unsigned> slot_of(nslots);  // chunk index % nslots -> slot
  uint64_t next_done = 0, lines_before = 0;
  bool reading_done = false, stop = false;
  std::exception_ptr failure;
  auto fail = [&](std::exception_ptr e) {  // under mu
    if (!failure) failure = e;
    stop = true;
    cv.notify_all();
  };
  auto chunk_of = [](const Slot& x) {
    return StreamChunk{x.start + x.carry, ByteView(x.buf + x.carry, x.n), &x.parser->records()};
  };
  auto deliver = [&] {  // under mu
    while (!stop) {
      const unsigned u = slot_of[next_done % nslots];
      Slot& x = slots[u];
      if (!x.worked) return;
      if (x.error) return fail(x.error);
      if (!x.parsed) {
        const TextStreamer::Bad& b = x.parser->bad();
        const bool unterminated = x.last && b.end == x.region && x.region > 0 && x.buf[x.region - 1] != '\n';
        return fail(std::make_exception_ptr(line_error(b.what, path, lines_before + b.line, x.start + b.off, unterminated)));
      }
      lines_before += x.parser->lines();
      // The jsonl reader numbers lines in 32 bits (as RecordSource::open).
      if (jsonl && lines_before > UINT32_MAX)
        return fail(std::make_exception_ptr(Error(kTooLong, line_where(path, uint64_t(UINT32_MAX) + 1))));
      try {
        done(u, chunk_of(x));
      } catch (...) {
        return fail(std::current_exception());
      }
      if (x.too_long)
        return fail(std::make_exception_ptr(line_error(kTooLong, path, lines_before + 1, x.start + x.region, false)));
      x.worked = false;
      free_slots.push_back(u);
      next_done++;
      cv.notify_all();
    }
  };
  auto worker = [&] {
    std::unique_lock<std::mutex> lk(mu);
    for (;;) {
      cv.wait(lk, [&] { return stop || !ready.empty() || reading_done; });
      if (stop || ready.empty()) return;
      const unsigned u = ready.front();
      ready.pop_front();
      lk.unlock();
      Slot& x = slots[u];
      x.parsed = x.parser->parse_region(x.buf, x.region);
      if (x.parsed) {
        try {
          work(u, chunk_of(x));
        } catch (...) {
          x.error = std::current_exception();
        }
      }
      lk.lock();
      x.worked = true;
      deliver();
    }
  };
  std::vector<std::thread> pool;
  uint64_t offset = 0;  // bytes read
  try {
    for (unsigned t = 0; t < threads; t++) pool.emplace_back(worker);
    auto submit = [&](unsigned u) {
      std::lock_guard<std::mutex> g(mu);
      ready.push_back(u);
      cv.notify_all();
    };
    int prev = -1;
    uint64_t carry = 0;
    for (uint64_t index = 0;; index++) {
      unsigned u;
      {
        std::unique_lock<std::mutex> lk(mu);
        cv.wait(lk, [&] { return stop || !free_slots.empty(); });
        if (stop) break;
        u = free_slots.back();
        free_slots.pop_back();
        slot_of[index % nslots] = u;
      }
      Slot& x = slots[u];
      // A read as long as the carried line at least (in whole chunks), so a
      // line of many chunks is copied a few times, not once per chunk.
      const uint64_t want = chunk * std::max<uint64_t>(1, (carry + chunk - 1) / chunk);
      const uint64_t need = carry + want + simdjson::SIMDJSON_PADDING;
      if (x.cap < need || (x.cap > base_cap && need <= base_cap)) {  // a long line's slot shrinks again
        huge_free(x.buf, x.cap);
        x.buf = nullptr;
        x.cap = 0;
        try {
          const uint64_t cap = std::max(base_cap, round_up(need));
          x.buf = static_cast<uint8_t*>(huge_alloc(size_t(cap)));
          x.cap = cap;
        } catch (const std::bad_alloc&) {
          throw Error("cannot allocate memory for a line of " + std::to_string(carry) + " bytes or more",
                      line_where(path, lines_before + 1));
        }
      }
      if (prev >= 0) {
        std::memcpy(x.buf, slots[unsigned(prev)].buf + slots[unsigned(prev)].region, carry);
        submit(unsigned(prev));
      }
      x.start = offset - carry;
      x.carry = carry;
      x.n = read_up_to(fd, x.buf + carry, want, path, offset);
      offset += x.n;
      x.last = x.n < want;
      const uint64_t have = carry + x.n;
      if (x.last) {
        x.region = have;
      } else if (spec.kind == ReaderKind::kFortune) {
        x.region = fortune_cut(x.buf, have);
      } else {
        const void* nl = ::memrchr(x.buf, '\n', have);
        x.region = nl ? uint64_t(static_cast<const uint8_t*>(nl) - x.buf) + 1 : 0;
      }
      carry = have - x.region;
      x.too_long = jsonl && carry > kMaxJsonlLine;
      if (x.last || x.too_long) {
        submit(u);
        break;
      }
      prev = int(u);
    }
  } catch (...) {
    std::lock_guard<std::mutex> g(mu);
    fail(std::current_exception());
  }
  {
    std::lock_guard<std::mutex> g(mu);
    reading_done = true;
    cv.notify_all();
  }
  for (auto& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
  return offset;
}

}  // namespace wit
