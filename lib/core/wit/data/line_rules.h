// The line rules of the jsonl, lines and fortune readers, shared by the
// readers (readers.cpp, which defines what is not a template here) and the
// text streamer (text_stream.cpp), so that a streamed input gives exactly the
// records and the errors of the same bytes read as a file (docs/records.md).
// Private to wit_core: included by those two files only.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>
#include <simdjson.h>

#include "wit/base/bytes.h"
#include "wit/base/check.h"
#include "wit/base/error.h"
#include "wit/data/readers.h"

namespace wit {

// The name a message uses for a path ("-" is stdin).
std::string display_name(const std::string& path);
// "PATH:LINE" (stdin for "-").
std::string line_where(const std::string& path, uint64_t line);
// Makes text taken from the input safe for a one-line message: control and
// non-ASCII bytes become '?', and long text is cut.
std::string printable(std::string_view s, size_t max = 80);

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
ByteView fortune_bytes(ByteView slice, bool inner_cr, std::string& scratch);

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
std::string field_error(const FieldFinder& h, const std::string& field);

// The error for a bad line, whatever read it (a whole file or a stream):
// "WHAT: FILE:LINE at byte OFFSET", OFFSET the line's first byte in the input.
// `unterminated`: the line is the input's last and has no '\n'.
Error line_error(const std::string& what, const std::string& path, uint64_t line, uint64_t offset,
                 bool unterminated);

// A line with a \u escape of a UTF-16 surrogate (\uD800-\uDFFF): simdjson and
// nlohmann might disagree on a lone one, so nlohmann, the reference, decides.
bool has_surrogate_escape(std::string_view line);
// True when `doc` is an object with `field` once, as a string, whose decoded
// value is then `value` (in its parser's buffer).
bool object_field(simdjson::dom::element doc, const std::string& field, std::string_view& value);
// simdjson's verdict on the `len` bytes at `in` (SIMDJSON_PADDING readable
// bytes after them): true when they are an object with `field` once, as a
// string, whose decoded value is then `value` (in the parser's buffer).
bool simd_field(simdjson::dom::parser& parser, const std::string& field, const char* in, size_t len,
                std::string_view& value);
// Where `value` lies verbatim in `line` as the literal right after the first
// `quoted_field` ("field"), the usual case; npos when it does not.
size_t verbatim_after_key(std::string_view line, std::string_view value, std::string_view quoted_field);

// The longest jsonl line, and the words of its error (RecordSource::open and the streamers).
inline constexpr uint64_t kMaxJsonlLine = (uint64_t(1) << 31) - 1;  // bytes, with a trailing '\r'
inline constexpr const char* kTooLong = "line too long for the jsonl reader (at most 2 GiB, 2^32 lines)";

// The reason a spec is unusable, if it is.
Problem spec_problem(const ReaderSpec& s);

}  // namespace wit
