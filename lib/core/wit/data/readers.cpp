// The record readers (jsonl, lines, fortune, tokens, files) and the reader spec
// JSON. docs/records.md is the normative description of the bytes produced here.
// The text streamer is text_stream.cpp; the buffer a file is read into,
// page_buffer.cpp.
#include "wit/data/readers.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <mutex>
#include <system_error>
#include <thread>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <simdjson.h>

#include "wit/base/error.h"
#include "wit/base/parallel.h"
#include "wit/data/line_rules.h"

namespace wit {

// ---------------------------------------------------------------- line rules (line_rules.h)

std::string display_name(const std::string& path) { return path == "-" ? "stdin" : path; }

std::string line_where(const std::string& path, uint64_t line) {
  return display_name(path) + ":" + std::to_string(line);
}

std::string printable(std::string_view s, size_t max) {
  std::string out;
  for (char c : s.substr(0, max)) out += (c >= 0x20 && c < 0x7f) ? c : '?';
  if (s.size() > max) out += "...";
  return out;
}

ByteView fortune_bytes(ByteView slice, bool inner_cr, std::string& scratch) {
  if (!inner_cr) return slice;
  // Every line but the last still carries its '\r' in the slice; the last
  // one's was already cut off, so it is copied as is.
  scratch.clear();
  std::string_view s = slice.str();
  size_t pos = 0;
  for (size_t nl; (nl = s.find('\n', pos)) != std::string_view::npos; pos = nl + 1) {
    size_t len = nl - pos;
    if (len > 0 && s[nl - 1] == '\r') len--;
    scratch.append(s.substr(pos, len));
    scratch += '\n';
  }
  scratch.append(s.substr(pos));
  return ByteView(scratch);
}

std::string field_error(const FieldFinder& h, const std::string& field) {
  std::string f = "'" + printable(field) + "'";
  if (h.syntax_error)
    return "invalid json: " + h.error_reason + " (column " + std::to_string(h.error_column) + ")";
  if (h.not_object) return "not a json object";
  if (h.duplicate) return "duplicate field " + f;
  if (!h.found) return "missing field " + f;
  return "field " + f + " is " + (h.type[0] == 'a' || h.type[0] == 'o' ? "an " : "a ") + h.type +
         ", not a string";
}

Error line_error(const std::string& what, const std::string& path, uint64_t line, uint64_t offset,
                 bool unterminated) {
  return Error(what, line_where(path, line) + " at byte " + std::to_string(offset),
               unterminated ? "the file does not end with a newline: it may be truncated" : "");
}

bool has_surrogate_escape(std::string_view line) {
  for (size_t i = line.find('\\'); i != std::string_view::npos && i + 3 < line.size(); i = line.find('\\', i + 1)) {
    if (line[i + 1] == '\\') {
      i++;
      continue;
    }
    if (line[i + 1] == 'u' && (line[i + 2] == 'd' || line[i + 2] == 'D')) {
      const char c = line[i + 3];
      if ((c >= '8' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')) return true;
    }
  }
  return false;
}

bool object_field(simdjson::dom::element doc, const std::string& field, std::string_view& value) {
  simdjson::dom::object obj;
  if (doc.get_object().get(obj)) return false;
  int found = 0;
  for (auto kv : obj)
    if (kv.key == field) {
      if (++found > 1 || kv.value.get_string().get(value)) return false;
    }
  return found == 1;
}

bool simd_field(simdjson::dom::parser& parser, const std::string& field, const char* in, size_t len,
                std::string_view& value) {
  simdjson::dom::element doc;
  if (parser.parse(in, len, false).get(doc)) return false;
  return object_field(doc, field, value);
}

size_t verbatim_after_key(std::string_view line, std::string_view value, std::string_view quoted_field) {
  // line.find(quoted_field), but a memcmp only where the '"' is followed by
  // the field's first byte (string_view::find compares at every '"'), and a
  // plain loop over the line's first bytes, where the key most often is,
  // before memchr calls.
  const size_t n = quoted_field.size();  // at least 3: the field is not empty
  if (line.size() < n) return std::string_view::npos;
  const char* const b = line.data();
  const char* const last = b + (line.size() - n);  // the last place the key can start
  auto at = [&](const char* k) { return k[1] == quoted_field[1] && std::memcmp(k, quoted_field.data(), n) == 0; };
  const char* k = b;
  for (const char* stop = std::min(last + 1, b + 64); k < stop && !(*k == '"' && at(k));) k++;
  if (k > last) return std::string_view::npos;
  while (*k != '"' || !at(k)) {
    k = static_cast<const char*>(std::memchr(k + 1, '"', size_t(last - k)));
    if (!k) return std::string_view::npos;
  }
  size_t q = size_t(k - b) + n;
  while (q < line.size() && (line[q] == ' ' || line[q] == '\t' || line[q] == ':')) q++;
  if (q < line.size() && line[q] == '"' && line.size() - q - 1 > value.size() && line[q + 1 + value.size()] == '"' &&
      std::memcmp(line.data() + q + 1, value.data(), value.size()) == 0)
    return q + 1;
  return std::string_view::npos;
}

namespace {

namespace fs = std::filesystem;

// Lines in `v` (an upper bound on records), so a reader's table is allocated
// once, at its final size.
uint64_t line_count(ByteView v) {
  return uint64_t(std::count(v.data, v.data + v.size, uint8_t('\n'))) + 1;
}

// The kept lines of `v` as a table of records, found on all threads: the
// file is cut into one piece per thread at line ends; each piece counts the
// lines it keeps, then writes its slice of the table (so the table is
// written once, at its final size, and the pages of a mapped file are first
// touched on all cores at once: docs/commitment.md, "Performance").
// keep(off, len, cr) says whether a line is a record; make(off, len, cr,
// line) builds it (line 1-based). Returns false, having built nothing, when
// some line has `too_long` bytes or more (with its '\r') or the file has
// `max_lines` lines or more, so that the caller's serial pass reports it.
template <class Table, class Keep, class Make>
bool split_lines(ByteView v, Table& out, uint64_t too_long, uint64_t max_lines, Keep&& keep,
                 Make&& make) {
  constexpr uint64_t kMinPiece = uint64_t(1) << 20;
  const uint64_t pieces = std::max<uint64_t>(1, std::min<uint64_t>(default_threads(), v.size / kMinPiece));
  std::vector<uint64_t> start(pieces + 1, v.size);
  start[0] = 0;
  for (uint64_t p = 1; p < pieces; p++) {
    uint64_t at = std::max(start[p - 1], v.size * p / pieces);
    const void* nl = at < v.size ? std::memchr(v.data + at, '\n', v.size - at) : nullptr;
    start[p] = nl ? uint64_t(static_cast<const uint8_t*>(nl) - v.data) + 1 : v.size;
  }
  std::vector<uint64_t> lines(pieces + 1, 0), kept(pieces + 1, 0);
  std::atomic<bool> serial{false};
  auto each = [&](uint64_t p, auto&& fn) {
    for_each_line(v.sub(start[p], start[p + 1] - start[p]), [&](size_t off, size_t len, bool cr, uint64_t line) {
      fn(start[p] + off, len, cr, line);
    });
  };
  parallel_for(pieces, 0, 1, [&](uint64_t b, uint64_t e) {
    for (uint64_t p = b; p < e; p++)
      each(p, [&](uint64_t off, size_t len, bool cr, uint64_t) {
        lines[p + 1]++;
        if (len + (cr ? 1 : 0) >= too_long) serial = true;
        if (keep(off, len, cr)) kept[p + 1]++;
      });
  });
  for (uint64_t p = 0; p < pieces; p++) {
    lines[p + 1] += lines[p];
    kept[p + 1] += kept[p];
  }
  if (serial || lines[pieces] >= max_lines) return false;
  out.resize(kept[pieces]);
  parallel_for(pieces, 0, 1, [&](uint64_t b, uint64_t e) {
    for (uint64_t p = b; p < e; p++) {
      uint64_t k = kept[p];
      each(p, [&](uint64_t off, size_t len, bool cr, uint64_t line) {
        if (keep(off, len, cr)) out[k++] = make(off, len, cr, lines[p] + line);
      });
    }
  });
  return true;
}

// Base for the readers over a single file ("-" is stdin).
class SingleFileSource : public RecordSource {
 public:
  explicit SingleFileSource(const std::string& path)
      : path_(path), file_(FileBytes::load(path)) {
    files_.push_back({path, file_, file_->size()});
  }
  const std::vector<SourceFile>& files() const override { return files_; }
  void read_bytes(uint64_t offset, uint64_t len, uint8_t* buf) const override {
    std::memcpy(buf, bytes().data + offset, len);
  }

 protected:
  ByteView bytes() const { return file_->view(); }
  std::string path_;
  std::shared_ptr<const FileBytes> file_;
  std::vector<SourceFile> files_;
};

// A record that is one line (lines, jsonl) or a run of lines (fortune).
struct LineRecord {
  uint64_t off = 0;   // first byte in the file
  uint64_t len = 0;   // bytes, without the final line's '\n' and '\r'
  uint64_t line = 0;  // 1-based line number of its first line
};

// lines: every non-empty line, without its '\n' and one trailing '\r'.
class LinesSource : public SingleFileSource {
 public:
  explicit LinesSource(const std::string& path) : SingleFileSource(path) {
    split_lines(
        bytes(), recs_, UINT64_MAX, UINT64_MAX, [](uint64_t, size_t len, bool) { return len > 0; },
        [](uint64_t off, size_t len, bool, uint64_t line) { return LineRecord{off, len, line}; });
  }
  uint64_t count() const override { return recs_.size(); }
  ByteView record(uint64_t i, std::string&) const override {
    return bytes().sub(recs_[i].off, recs_[i].len);
  }
  uint64_t line_of(uint64_t i) const override { return recs_[i].line; }

 private:
  std::vector<LineRecord, HugePageAllocator<LineRecord>> recs_;
};

// fortune: the lines between "%" lines, joined with '\n'. A record without
// '\r' inside is a contiguous slice of the file; one with CRLF line ends is
// rebuilt in scratch.
class FortuneSource : public SingleFileSource {
 public:
  explicit FortuneSource(const std::string& path) : SingleFileSource(path) {
    fortune_records(bytes(), 1, [&](uint64_t off, uint64_t len, uint64_t line, bool inner_cr) {
      recs_.push_back(Rec{{off, len, line}, inner_cr});
    });
  }
  uint64_t count() const override { return recs_.size(); }
  ByteView record(uint64_t i, std::string& scratch) const override {
    const Rec& r = recs_[i];
    return fortune_bytes(bytes().sub(r.off, r.len), r.inner_cr, scratch);
  }
  uint64_t line_of(uint64_t i) const override { return recs_[i].line; }

 private:
  struct Rec : LineRecord {
    bool inner_cr = false;  // some line other than the last ended in "\r\n"
  };
  std::vector<Rec, HugePageAllocator<Rec>> recs_;
};

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xC0 | (cp >> 6));
    out += char(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += char(0xE0 | (cp >> 12));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  } else {
    out += char(0xF0 | (cp >> 18));
    out += char(0x80 | ((cp >> 12) & 0x3F));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  }
}

// Reads 4 hex digits at s[i]; false if there are not 4.
bool hex4(std::string_view s, size_t i, uint32_t& v) {
  if (i + 4 > s.size()) return false;
  v = 0;
  for (size_t k = i; k < i + 4; k++) {
    char c = s[k];
    int d = c >= '0' && c <= '9'   ? c - '0'
            : c >= 'a' && c <= 'f' ? c - 'a' + 10
            : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                   : -1;
    if (d < 0) return false;
    v = v << 4 | uint32_t(d);
  }
  return true;
}

// Appends the decoded inside of a JSON string literal (without its quotes) to
// out. It serves record(), which must be fast; open() checks its result
// against nlohmann's for every record, so the two can never disagree. False on
// anything a valid literal cannot contain.
bool unescape_json(std::string_view in, std::string& out) {
  size_t i = 0;
  while (i < in.size()) {
    size_t bs = in.find('\\', i);
    if (bs == std::string_view::npos) bs = in.size();
    out.append(in.substr(i, bs - i));
    if (bs == in.size()) break;
    if (bs + 1 == in.size()) return false;
    char c = in[bs + 1];
    i = bs + 2;
    switch (c) {
      case '"': case '\\': case '/': out += c; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case 'u': {
        uint32_t cp, lo;
        if (!hex4(in, i, cp)) return false;
        i += 4;
        if (cp >= 0xDC00 && cp <= 0xDFFF) return false;
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          // A high surrogate must be followed by an escaped low one.
          if (i + 2 > in.size() || in[i] != '\\' || in[i + 1] != 'u' || !hex4(in, i + 2, lo) ||
              lo < 0xDC00 || lo > 0xDFFF)
            return false;
          i += 6;
          cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        }
        append_utf8(out, cp);
        break;
      }
      default: return false;
    }
  }
  return true;
}

// Where a string literal whose decoded value is `value` lies in `line`, for
// record() to reproduce it: [off, off + len) is the literal's inside, which
// unescape_json turns into `value`. Equality is checked, so any literal that
// decodes to the same bytes will do (the position is only a shortcut).
bool find_escaped_literal(std::string_view line, std::string_view value, size_t& off, size_t& len,
                          std::string& check) {
  size_t i = 0;
  while ((i = line.find('"', i)) != std::string_view::npos) {
    size_t j = i + 1;
    bool escaped = false;
    while (j < line.size() && line[j] != '"') j += line[j] == '\\' ? (escaped = true, 2) : 1;
    if (j >= line.size()) return false;
    std::string_view inside = line.substr(i + 1, j - i - 1);
    if (escaped && inside.size() >= value.size()) {
      check.clear();
      if (unescape_json(inside, check) && check == value) {
        off = i + 1;
        len = inside.size();
        return true;
      }
    }
    i = j + 1;
  }
  return false;
}

// jsonl: the string value of one top-level field of each non-blank line.
//
// Speed: parsing is the cost, so open() parses every line once, in parallel,
// with simdjson's validating DOM parser, and reports the first malformed line
// by number. nlohmann/json is the reference for what a valid line is
// (docs/records.md): any line simdjson refuses, and any line with a surrogate
// escape, is parsed again with nlohmann's SAX parser, which decides (and words
// the error). open() keeps no decoded text, only where a literal giving the
// value lies: a value that occurs verbatim in the line is returned as a view
// of the file, one with escapes is decoded by a small unescaper (checked
// against the parser's result in open()), and only if neither held would
// record() parse the line again. So memory is 24 bytes per record whatever the
// file size.
class JsonlSource : public SingleFileSource {
 public:
  JsonlSource(const std::string& path, const std::string& field)
      : SingleFileSource(path), field_(field), quoted_field_("\"" + field + "\"") {
    phase_done("load the file");
    ByteView b = bytes();
    // Blank (JSON whitespace only) lines are skipped; cr is whitespace too.
    auto not_blank = [&](uint64_t off, size_t len, bool) {
      return !std::all_of(b.data + off, b.data + off + len,
                          [](uint8_t c) { return c == ' ' || c == '\t' || c == '\r'; });
    };
    if (split_lines(b, recs_, kMaxLine + 1, uint64_t(UINT32_MAX) + 1, not_blank,
                    [](uint64_t off, size_t len, bool cr, uint64_t line) {
                      return Rec{off, uint32_t(len + (cr ? 1 : 0)), uint32_t(line), 0, kReparse};
                    })) {
      phase_done("split lines");
      validate_all();
      phase_done("parse (simdjson)");
      return;
    }
    // Some line is too long: this pass names the first.
    recs_.reserve(line_count(b));
    for_each_line(b, [&](size_t off, size_t len, bool cr, uint64_t line) {
      if (!not_blank(off, len, cr)) return;
      if (len + (cr ? 1 : 0) > kMaxLine || line > UINT32_MAX)
        throw line_error(kTooLong, path_, line, off, false);
      recs_.push_back({uint64_t(off), uint32_t(len + (cr ? 1 : 0)), uint32_t(line), 0, kReparse});
    });
    validate_all();
  }
  uint64_t count() const override { return recs_.size(); }
  ByteView record(uint64_t i, std::string& scratch) const override {
    const Rec& r = recs_[i];
    const uint32_t mode = r.vlen_mode & kModeMask, vlen = r.vlen_mode & ~kModeMask;
    if (mode == kView) return bytes().sub(r.off + r.vrel, vlen);
    // open() validated this line, so failing now means the file changed under us.
    auto changed = [&] { return Error("file changed while reading", line_where(path_, r.line)); };
    if (mode == kUnescape) {
      scratch.clear();
      if (!unescape_json(bytes().sub(r.off + r.vrel, vlen).str(), scratch)) throw changed();
      return ByteView(scratch);
    }
    FieldFinder h(field_);
    const char* p = reinterpret_cast<const char*>(bytes().data) + r.off;
    if (!h.parse(p, p + r.len)) throw changed();
    scratch = std::move(h.value);
    return ByteView(scratch);
  }
  uint64_t line_of(uint64_t i) const override { return recs_[i].line; }

 private:
  static constexpr uint64_t kMaxLine = kMaxJsonlLine;
  // How record() produces the value: the top two bits of vlen_mode.
  static constexpr uint32_t kView = 0,            // [off + vrel, + vlen) is the record
      kUnescape = uint32_t(1) << 30,               // ... is the inside of the literal, with escapes
      kReparse = uint32_t(2) << 30,                // parse the line again
      kModeMask = uint32_t(3) << 30;
  struct Rec {
    uint64_t off;   // first byte of the line
    uint32_t len;   // bytes, with a trailing '\r', without the '\n'
    uint32_t line;  // 1-based line number
    uint32_t vrel;  // the value's bytes start at off + vrel
    uint32_t vlen_mode;
  };
  static_assert(sizeof(Rec) == 24, "a jsonl record costs 24 bytes");

  // Parses every line in parallel; throws for the lowest-numbered bad line, so
  // the message does not depend on thread timing.
  void validate_all() {
    constexpr uint64_t kNone = std::numeric_limits<uint64_t>::max();
    std::mutex mu;
    std::atomic<uint64_t> first_bad{kNone};
    std::string bad_what;
    const char* base = reinterpret_cast<const char*>(bytes().data);
    const uint64_t size = bytes().size;
    parallel_for(recs_.size(), 0, 2048, [&](uint64_t lo, uint64_t hi) {
      simdjson::dom::parser parser;
      FieldFinder h(field_);
      std::string check, padded;
      for (uint64_t i = lo; i < hi; i++) {
        if (i > first_bad.load(std::memory_order_relaxed)) return;
        Rec& r = recs_[i];
        const char* p = base + r.off;
        if (fast_parse(parser, r, p, size - r.off, padded, check)) continue;
        // The reference parser decides.
        if (h.parse(p, p + r.len)) {
          locate(r, p, h.value, quoted_field_, check);
          continue;
        }
        std::string what = field_error(h, field_);
        std::lock_guard<std::mutex> g(mu);
        if (i < first_bad.load()) {
          first_bad.store(i);
          bad_what = std::move(what);
        }
        return;
      }
    });
    uint64_t i = first_bad.load();
    if (i == kNone) return;
    const Rec& r = recs_[i];
    ByteView b = bytes();
    throw line_error(bad_what, path_, r.line, r.off, r.off + r.len == b.size && b.data[b.size - 1] != '\n');
  }

  // simdjson's verdict on a line: true when it is an object with the field
  // once, as a string (and r then says where the value lies). False sends
  // the line to nlohmann. `avail` is how many bytes of the file start at p:
  // simdjson reads up to SIMDJSON_PADDING bytes past the line (their values do
  // not matter), so a line near the end of the file is copied first.
  bool fast_parse(simdjson::dom::parser& parser, Rec& r, const char* p, uint64_t avail, std::string& padded,
                  std::string& check) const {
    std::string_view line(p, r.len);
    if (has_surrogate_escape(line)) return false;
    const char* in = p;
    if (avail < uint64_t(r.len) + simdjson::SIMDJSON_PADDING) {
      padded.assign(p, r.len);
      padded.resize(r.len + simdjson::SIMDJSON_PADDING, ' ');
      in = padded.data();
    }
    std::string_view value;
    if (!simd_field(parser, field_, in, r.len, value)) return false;
    locate(r, p, value, quoted_field_, check);
    return true;
  }

  // Chooses how record() produces `value` from this line: a view of bytes that
  // equal it, or a literal that unescapes to it, whichever exists; else
  // parsing again.
  static void locate(Rec& r, const char* line, std::string_view value, std::string_view quoted_field,
                     std::string& check) {
    std::string_view l(line, r.len);
    r.vlen_mode = kReparse;
    if (value.size() >= kModeMask) return;
    if (value.empty()) {
      r.vrel = 0;
      r.vlen_mode = kView;
      return;
    }
    // Most often the value is the literal right after the key: try there first.
    if (const size_t q = verbatim_after_key(l, value, quoted_field); q != std::string_view::npos) {
      r.vrel = uint32_t(q);
      r.vlen_mode = kView | uint32_t(value.size());
      return;
    }
    if (const void* at = memmem(l.data(), l.size(), value.data(), value.size())) {
      r.vrel = uint32_t(static_cast<const char*>(at) - l.data());
      r.vlen_mode = kView | uint32_t(value.size());
      return;
    }
    size_t off = 0, len = 0;
    if (find_escaped_literal(l, value, off, len, check) && len < kModeMask) {
      r.vrel = uint32_t(off);
      r.vlen_mode = kUnescape | uint32_t(len);
    }
  }

  std::string field_;
  std::string quoted_field_;  // "field", as it appears unescaped in a line
  std::vector<Rec, HugePageAllocator<Rec>> recs_;
};

// tokens: non-overlapping windows of seq_len little-endian token ids of
// token_bytes bytes each (uint16 or uint32).
// A regular file is not mapped but read with pread: committing reads a token
// file once, front to back, and streaming it through a small buffer is
// several times cheaper than faulting in a mapping page by page. stdin is
// read into memory, as the other readers do.
class TokensSource : public RecordSource {
 public:
  TokensSource(const std::string& path, uint64_t seq_len, unsigned token_bytes)
      : path_(path), window_(token_bytes * seq_len) {
    if (path == "-") {
      mem_ = FileBytes::load(path);
      size_ = mem_->size();
    } else {
      fd_.reset(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
      if (!fd_.ok()) throw Error("cannot open: " + errno_text(), path);
      struct stat st {};
      if (::fstat(fd_.get(), &st) != 0) throw Error("cannot stat: " + errno_text(), path);
      if (S_ISDIR(st.st_mode)) throw Error("is a directory", path);
      if (!S_ISREG(st.st_mode)) {  // a pipe or device: read it whole, as stdin (from this open: a fifo
        mem_ = FileBytes::read_all(fd_.get(), path);  // opened twice would lose what its writer wrote between)
        fd_.reset();
        size_ = mem_->size();
      } else {
        size_ = uint64_t(st.st_size);
      }
    }
    files_.push_back({path, mem_, size_});
    check_token_size(size_, token_bytes, path);
  }
  // A trailing partial window is not a record.
  uint64_t count() const override { return size_ / window_; }
  ByteView record(uint64_t i, std::string& scratch) const override {
    if (mem_) return mem_->view().sub(i * window_, window_);
    scratch.resize(window_);
    read_bytes(i * window_, window_, reinterpret_cast<uint8_t*>(&scratch[0]));
    return ByteView(scratch);
  }
  uint64_t line_of(uint64_t) const override { return 0; }
  const std::vector<SourceFile>& files() const override { return files_; }
  uint64_t fixed_size() const override { return window_; }
  void read_bytes(uint64_t offset, uint64_t len, uint8_t* buf) const override {
    if (mem_) {
      std::memcpy(buf, mem_->data() + offset, len);
      return;
    }
    pread_all(fd_.get(), buf, len, offset, path_);
  }

 private:
  std::string path_;
  uint64_t window_;  // bytes per record
  uint64_t size_ = 0;
  Fd fd_;
  std::shared_ptr<const FileBytes> mem_;  // stdin or a special file, read whole
  std::vector<SourceFile> files_;
};

// files: every regular file below a directory, in bytewise order of its
// '/'-separated path relative to the directory. Symbolic links (to files or
// directories) and special files are skipped, so the record set cannot reach
// outside the directory or loop.
class FilesSource : public RecordSource {
 public:
  explicit FilesSource(const std::string& dir) {
    std::error_code ec;
    fs::file_status st;
    if (dir != "-") {
      st = fs::status(dir, ec);
      if (ec) throw Error("cannot open: " + errno_text(ec.value()), dir);
    }
    if (!fs::is_directory(st)) throw Error("the files reader needs a directory", display_name(dir));

    std::vector<std::string> rels;
    std::vector<std::string> todo{""};  // directories to list, relative to dir
    std::string prefix = dir.back() == '/' ? dir : dir + "/";
    while (!todo.empty()) {
      std::string rel = std::move(todo.back());
      todo.pop_back();
      std::string here = rel.empty() ? dir : prefix + rel;
      fs::directory_iterator it(here, ec), end;
      if (ec) throw Error("cannot read directory: " + errno_text(ec.value()), here);
      for (; it != end; it.increment(ec)) {
        if (ec) break;
        std::string name = rel.empty() ? it->path().filename().string()
                                       : rel + "/" + it->path().filename().string();
        fs::file_status s = it->symlink_status(ec);
        if (ec) throw Error("cannot stat: " + errno_text(ec.value()), prefix + name);
        if (fs::is_directory(s)) todo.push_back(name);
        else if (fs::is_regular_file(s)) rels.push_back(name);
      }
      if (ec) throw Error("cannot read directory: " + errno_text(ec.value()), here);
    }
    // Bytewise, whatever the locale or char signedness.
    std::sort(rels.begin(), rels.end(), [](const std::string& a, const std::string& b) {
      int c = std::memcmp(a.data(), b.data(), std::min(a.size(), b.size()));
      return c != 0 ? c < 0 : a.size() < b.size();
    });
    for (const std::string& rel : rels) {
      std::string p = prefix + rel;
      auto content = std::make_shared<const FileBytes>(std::make_shared<MappedFile>(p));
      files_.push_back({p, content, content->size()});
    }
  }
  uint64_t count() const override { return files_.size(); }
  ByteView record(uint64_t i, std::string&) const override { return files_[i].content->view(); }
  uint64_t line_of(uint64_t) const override { return 0; }
  const std::vector<SourceFile>& files() const override { return files_; }

 private:
  std::vector<SourceFile> files_;
};

constexpr uint64_t kMaxSeqLen = uint64_t(1) << 32;

struct KindName {
  ReaderKind kind;
  const char* name;
};
constexpr KindName kKinds[] = {{ReaderKind::kJsonl, "jsonl"},
                               {ReaderKind::kLines, "lines"},
                               {ReaderKind::kFortune, "fortune"},
                               {ReaderKind::kTokens, "tokens"},
                               {ReaderKind::kFiles, "files"}};

}  // namespace

Problem spec_problem(const ReaderSpec& s) {
  if (s.kind == ReaderKind::kJsonl && s.field.empty()) return "jsonl field name is empty";
  if (s.kind == ReaderKind::kTokens && (s.seq_len < 1 || s.seq_len > kMaxSeqLen))
    return "--seq-len (seq_len) must be between 1 and " + std::to_string(kMaxSeqLen) + " for the tokens reader";
  if (s.token_bytes != 2 && s.token_bytes != 4) return "--token-bytes (token_bytes) must be 2 or 4";
  if (s.kind != ReaderKind::kTokens && s.token_bytes != 2) return "--token-bytes applies to the tokens reader only";
  return {};
}

nlohmann::json ReaderSpec::to_json() const {
  nlohmann::json j = {{"kind", kind_name(kind)}};
  if (kind == ReaderKind::kJsonl) j["field"] = field;
  if (kind == ReaderKind::kTokens) j["seq_len"] = seq_len;
  if (kind == ReaderKind::kTokens && token_bytes != 2) j["token_bytes"] = token_bytes;
  return j;
}

ReaderSpec ReaderSpec::from_json(const nlohmann::json& j, const std::string& where) {
  auto fail = [&](const std::string& why) { throw Error("invalid reader spec: " + why, where); };
  if (!j.is_object()) fail("not a json object");
  auto k = j.find("kind");
  if (k == j.end()) fail("missing 'kind'");
  if (!k->is_string()) fail("'kind' is not a string");
  ReaderSpec s;
  std::string name = k->get<std::string>();
  const KindName* found = nullptr;
  for (const KindName& kn : kKinds)
    if (name == kn.name) found = &kn;
  if (!found) fail("unknown kind '" + printable(name) + "'");
  s.kind = found->kind;
  // Keys that do not apply to the kind are refused, so a spec has one spelling.
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& key = it.key();
    bool ok = key == "kind" || (key == "field" && s.kind == ReaderKind::kJsonl) ||
              ((key == "seq_len" || key == "token_bytes") && s.kind == ReaderKind::kTokens);
    if (!ok) fail("unexpected key '" + printable(key) + "' for reader '" + name + "'");
  }
  if (s.kind == ReaderKind::kJsonl) {
    auto f = j.find("field");
    if (f != j.end()) {
      if (!f->is_string()) fail("'field' is not a string");
      s.field = f->get<std::string>();
    }
  }
  if (s.kind == ReaderKind::kTokens) {
    auto n = j.find("seq_len");
    if (n == j.end()) fail("missing 'seq_len'");
    if (n->is_number_unsigned()) {
      s.seq_len = n->get<uint64_t>();
    } else if (n->is_number_integer()) {
      int64_t v = n->get<int64_t>();
      s.seq_len = v < 0 ? 0 : uint64_t(v);
    } else {
      fail("'seq_len' is not an integer");
    }
    // The default (2) is never written, so a spec has one spelling.
    if (auto w = j.find("token_bytes"); w != j.end()) {
      if (!w->is_number_integer() || w->get<int64_t>() != 4)
        fail("'token_bytes' must be 4 (uint32 ids); uint16 ids are the default and leave it out");
      s.token_bytes = 4;
    }
  }
  if (const Problem why = spec_problem(s)) fail(*why);
  return s;
}

ReaderKind ReaderSpec::parse_kind(const std::string& name) {
  for (const KindName& kn : kKinds)
    if (name == kn.name) return kn.kind;
  throw Error("unknown reader kind '" + printable(name) + "'", "",
              "expected jsonl, lines, fortune, tokens or files");
}

const char* ReaderSpec::kind_name(ReaderKind k) {
  for (const KindName& kn : kKinds)
    if (k == kn.kind) return kn.name;
  return "unknown";
}

std::vector<std::string> ReaderSpec::kind_names() {
  std::vector<std::string> out;
  for (const KindName& kn : kKinds) out.push_back(kn.name);
  return out;
}

void ReaderSpec::validate() const {
  if (const Problem why = spec_problem(*this)) throw Error("invalid reader spec: " + *why);
}

TokenAt first_token_at_least(ByteView record, unsigned token_bytes, uint64_t bound) {
  const uint64_t n = token_count(record, token_bytes);
  for (uint64_t i = 0; i < n; i++)
    if (const uint32_t id = token_id(record, token_bytes, i); id >= bound) return {i, id};
  return {n, 0};
}

// ---------------------------------------------------------------- tokens

void check_token_size(uint64_t size, unsigned token_bytes, const std::string& path) {
  if (size % token_bytes == 0) return;
  const std::string at = display_name(path) + " at byte " + std::to_string(size - size % token_bytes);
  if (token_bytes == 2) throw Error("token file has odd size", at);
  throw Error("token file size " + std::to_string(size) + " is not a multiple of " + std::to_string(token_bytes) +
                  " (uint32 ids, --token-bytes 4)",
              at, "its last id is cut short; was it written with 2-byte ids (--token-bytes 2)?");
}

// ---------------------------------------------------------------- RecordSource

void RecordSource::read_bytes(uint64_t offset, uint64_t len, uint8_t* buf) const {
  const auto& f = files();
  if (f.size() != 1 || !f[0].content) throw Error("internal: read_bytes on a source of several files");
  std::memcpy(buf, f[0].content->data() + offset, len);
}

std::unique_ptr<RecordSource> RecordSource::open(const ReaderSpec& spec, const std::string& path) {
  spec.validate();
  switch (spec.kind) {
    case ReaderKind::kJsonl: return std::make_unique<JsonlSource>(path, spec.field);
    case ReaderKind::kLines: return std::make_unique<LinesSource>(path);
    case ReaderKind::kFortune: return std::make_unique<FortuneSource>(path);
    case ReaderKind::kTokens: return std::make_unique<TokensSource>(path, spec.seq_len, spec.token_bytes);
    case ReaderKind::kFiles: return std::make_unique<FilesSource>(path);
  }
  throw Error("invalid reader spec: unknown kind");
}

}  // namespace wit

