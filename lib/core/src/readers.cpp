// The record readers (jsonl, lines, fortune, tokens, files) and the reader spec
// JSON. docs/records.md is the normative description of the bytes produced here.
#include "wit/readers.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <filesystem>
#include <fstream>
#include <limits>
#include <mutex>
#include <system_error>
#include <thread>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <simdjson.h>

#include "wit/error.h"
#include "wit/parallel.h"

namespace wit {

namespace {

namespace fs = std::filesystem;

// The name a message uses for a path ("-" is stdin).
std::string display_name(const std::string& path) { return path == "-" ? "stdin" : path; }

std::string line_where(const std::string& path, uint64_t line) {
  return display_name(path) + ":" + std::to_string(line);
}

// Makes text taken from the input safe for a one-line message: control and
// non-ASCII bytes become '?', and long text is cut.
std::string printable(std::string_view s, size_t max = 80) {
  std::string out;
  for (char c : s.substr(0, max)) out += (c >= 0x20 && c < 0x7f) ? c : '?';
  if (s.size() > max) out += "...";
  return out;
}

// Reads bytes [offset, offset + len) of the file open as `fd` into buf.
// Throws wit::Error naming `path` if it cannot be read or has become shorter.
void pread_all(int fd, uint8_t* buf, uint64_t len, uint64_t offset, const std::string& path) {
  while (len > 0) {
    const ssize_t got = ::pread(fd, buf, std::min<uint64_t>(len, uint64_t(1) << 30), off_t(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw Error("cannot read: " + errno_text(), path);
    if (got == 0) throw Error("file changed while reading (it is shorter than when opened)", path);
    buf += got;
    offset += uint64_t(got);
    len -= uint64_t(got);
  }
}

// Calls fn(offset, length, had_cr, line_number) for each '\n'-terminated line
// (the last line may lack the '\n'); length excludes the '\n' and one trailing
// '\r', had_cr says whether that '\r' was there. Line numbers are 1-based.
template <class F>
void for_each_line(ByteView v, F&& fn) {
  size_t off = 0;
  uint64_t line = 0;
  while (off < v.size) {
    const void* nl = std::memchr(v.data + off, '\n', v.size - off);
    size_t end = nl ? size_t(static_cast<const uint8_t*>(nl) - v.data) : v.size;
    size_t len = end - off;
    bool cr = len > 0 && v.data[off + len - 1] == '\r';
    fn(off, len - (cr ? 1 : 0), cr, ++line);
    off = end + 1;
  }
}

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

// The fortune records of the lines of b (docs/records.md): emit(off, len,
// line, inner_cr) for each, in order: the record is b[off, off + len)
// without its last line's '\n' and '\r' (a slice of the file), `line` its
// first line's number (b's first line is `first_line`), and inner_cr says
// some line before its last ended in "\r\n" (fortune_bytes rebuilds it).
template <class Emit>
void fortune_records(ByteView b, uint64_t first_line, Emit&& emit) {
  uint64_t start = 0, len = 0, first = 0;
  bool open = false, any_text = false, last_cr = false, inner_cr = false;
  auto flush = [&] {
    // A record of nothing but empty lines is no record (docs/records.md).
    if (open && any_text) emit(start, len, first, inner_cr);
    open = any_text = false;
  };
  for_each_line(b, [&](size_t off, size_t l, bool cr, uint64_t line) {
    if (l == 1 && b.data[off] == '%') {
      flush();
      return;
    }
    if (!open) {
      start = off;
      first = first_line - 1 + line;
      inner_cr = false;
      open = true;
    } else if (last_cr) {
      inner_cr = true;  // the previous line's '\r' now sits inside the record
    }
    len = off + l - start;
    any_text |= l > 0;
    last_cr = cr;
  });
  flush();
}

// The bytes of a fortune record whose slice is `slice`: the slice itself, or
// (inner_cr) rebuilt in scratch without the '\r' of each "\r\n".
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

// SAX handler that checks one JSONL line is an object and extracts the string
// value of `field` at its top level: the reference for what a valid line is.
// No DOM is built: only the value is kept.
struct FieldFinder {
  using json = nlohmann::json;
  explicit FieldFinder(const std::string& f) : field(f) {}

  const std::string& field;
  int depth = 0;
  bool next_is_field = false;  // the key just read at depth 1 was `field`
  bool not_object = false, duplicate = false, found = false;
  const char* type = nullptr;  // JSON type of the field's value
  std::string value;           // the field's value, when a string
  // Parse error, if any.
  bool syntax_error = false;
  uint64_t error_column = 0;
  std::string error_reason;

  void reset() {
    depth = 0;
    next_is_field = not_object = duplicate = found = syntax_error = false;
    type = nullptr;
    value.clear();
  }

  // A scalar, or the start of an object or array. False aborts the parse.
  bool on_value(const char* t) {
    if (depth == 0 && std::strcmp(t, "object") != 0) {
      not_object = true;
      return false;
    }
    if (depth == 1 && next_is_field) {
      type = t;
      next_is_field = false;
    }
    return true;
  }
  bool null() { return on_value("null"); }
  bool boolean(bool) { return on_value("boolean"); }
  bool number_integer(json::number_integer_t) { return on_value("number"); }
  bool number_unsigned(json::number_unsigned_t) { return on_value("number"); }
  bool number_float(json::number_float_t, const json::string_t&) { return on_value("number"); }
  bool binary(json::binary_t&) { return on_value("binary"); }
  bool string(json::string_t& s) {
    if (depth == 1 && next_is_field) value.assign(s);  // a copy: moving would take the lexer's buffer
    return on_value("string");
  }
  bool start_object(std::size_t) {
    bool ok = on_value("object");
    depth++;
    return ok;
  }
  bool end_object() {
    depth--;
    return true;
  }
  bool start_array(std::size_t) {
    bool ok = on_value("array");
    depth++;
    return ok;
  }
  bool end_array() {
    depth--;
    return true;
  }
  bool key(json::string_t& k) {
    if (depth == 1 && k == field) {
      // Parsers disagree on which of two equal keys wins; refuse to guess.
      if (found) {
        duplicate = true;
        return false;
      }
      found = next_is_field = true;
    }
    return true;
  }
  bool parse_error(std::size_t position, const std::string& last_token,
                   const nlohmann::detail::exception& ex) {
    syntax_error = true;
    error_column = position;
    // "[json.exception.parse_error.101] parse error at line 1, column 5: syntax
    // error while parsing value - ...; last read: '...'": keep the reason only.
    // The last-read text can be long and binary, and the column says where.
    std::string msg = ex.what();
    size_t p = msg.find("] ");
    if (p != std::string::npos) msg.erase(0, p + 2);
    if (msg.rfind("parse error at line", 0) == 0 && (p = msg.find(": ")) != std::string::npos)
      msg.erase(0, p + 2);
    std::string lr = "; last read: '" + last_token + "'";
    if ((p = msg.find(lr)) != std::string::npos) msg.erase(p, lr.size());
    error_reason = printable(msg, 120);
    return false;
  }

  // Parses [b, e); true when the line is an object with a string `field`.
  bool parse(const char* b, const char* e) {
    reset();
    return json::sax_parse(b, e, this, json::input_format_t::json, /*strict=*/true) &&
           found && std::strcmp(type, "string") == 0;
  }
};

// Why the reference parser refused a jsonl line (docs/records.md, jsonl errors).
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

// The error for a bad line, whatever read it (a whole file or a stream):
// "WHAT: FILE:LINE at byte OFFSET", OFFSET the line's first byte in the input.
// `unterminated`: the line is the input's last and has no '\n'.
Error line_error(const std::string& what, const std::string& path, uint64_t line, uint64_t offset,
                 bool unterminated) {
  return Error(what, line_where(path, line) + " at byte " + std::to_string(offset),
               unterminated ? "the file does not end with a newline: it may be truncated" : "");
}

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

// A line with a \u escape of a UTF-16 surrogate (\uD800-\uDFFF): simdjson and
// nlohmann might disagree on a lone one, so nlohmann, the reference, decides.
// A line without a backslash costs one memchr.
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

// True when `doc` is an object with `field` once, as a string, whose decoded
// value is then `value` (in its parser's buffer).
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

// simdjson's verdict on the `len` bytes at `in` (SIMDJSON_PADDING readable
// bytes after them): true when they are an object with `field` once, as a
// string, whose decoded value is then `value` (in the parser's buffer).
bool simd_field(simdjson::dom::parser& parser, const std::string& field, const char* in, size_t len,
                std::string_view& value) {
  simdjson::dom::element doc;
  if (parser.parse(in, len, false).get(doc)) return false;
  return object_field(doc, field, value);
}

// Where `value` lies verbatim in `line` as the literal right after the first
// `quoted_field` ("field"), the usual case; npos when it does not.
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
constexpr uint64_t kMaxJsonlLine = (uint64_t(1) << 31) - 1;  // bytes, with a trailing '\r'
constexpr const char* kTooLong = "line too long for the jsonl reader (at most 2 GiB, 2^32 lines)";

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

// The reason a spec is unusable, or "" when it is fine.
std::string spec_problem(const ReaderSpec& s) {
  if (s.kind == ReaderKind::kJsonl && s.field.empty()) return "jsonl field name is empty";
  if (s.kind == ReaderKind::kTokens && (s.seq_len < 1 || s.seq_len > kMaxSeqLen))
    return "--seq-len (seq_len) must be between 1 and " + std::to_string(kMaxSeqLen) + " for the tokens reader";
  if (s.token_bytes != 2 && s.token_bytes != 4) return "--token-bytes (token_bytes) must be 2 or 4";
  if (s.kind != ReaderKind::kTokens && s.token_bytes != 2) return "--token-bytes applies to the tokens reader only";
  return "";
}

}  // namespace

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
  std::string why = spec_problem(s);
  if (!why.empty()) fail(why);
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
  std::string why = spec_problem(*this);
  if (!why.empty()) throw Error("invalid reader spec: " + why);
}

TokenAt first_token_at_least(ByteView record, unsigned token_bytes, uint64_t bound) {
  const uint64_t n = token_count(record, token_bytes);
  for (uint64_t i = 0; i < n; i++)
    if (const uint32_t id = token_id(record, token_bytes, i); id >= bound) return {i, id};
  return {n, 0};
}

// ---------------------------------------------------------------- FileBytes

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

// ---------------------------------------------------------------- streaming

bool stream_text_records(const ReaderSpec& spec, const std::string& path, unsigned parts, uint64_t align,
                         const std::function<void(unsigned, const StreamChunk&)>& fn, uint64_t& size) {
  if ((spec.kind != ReaderKind::kJsonl && spec.kind != ReaderKind::kLines) || path == "-" || align == 0 ||
      !spec_problem(spec).empty())
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

void check_token_size(uint64_t size, unsigned token_bytes, const std::string& path) {
  if (size % token_bytes == 0) return;
  const std::string at = display_name(path) + " at byte " + std::to_string(size - size % token_bytes);
  if (token_bytes == 2) throw Error("token file has odd size", at);
  throw Error("token file size " + std::to_string(size) + " is not a multiple of " + std::to_string(token_bytes) +
                  " (uint32 ids, --token-bytes 4)",
              at, "its last id is cut short; was it written with 2-byte ids (--token-bytes 2)?");
}

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
