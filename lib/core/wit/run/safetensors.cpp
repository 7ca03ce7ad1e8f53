// Reading, validating and writing safetensors files (docs/safetensors.md), and
// the tensor leaves and checkpoint root that bind a training state.
#include "wit/run/safetensors.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include <nlohmann/json.hpp>

#include "wit/base/error.h"
#include "wit/hash/hash.h"
#include "wit/hash/merkle.h"
#include "wit/hash/tags.h"

namespace wit {

using nlohmann::json;

namespace {

// The reference implementation (huggingface/safetensors, MAX_HEADER_SIZE)
// refuses larger headers; so do we, so a hostile length cannot make us parse
// or allocate without bound.
constexpr uint64_t kMaxHeaderSize = 100'000'000;
// A valid header nests at most three deep: the top object, a tensor entry (or
// "__metadata__"), and a shape or data_offsets array.
constexpr size_t kMaxDepth = 3;
constexpr const char* kMetadataKey = "__metadata__";

struct DTypeInfo {
  DType d;
  const char* name;
  size_t size;
};
constexpr DTypeInfo kDTypes[] = {
    {DType::kF64, "F64", 8}, {DType::kF32, "F32", 4}, {DType::kF16, "F16", 2}, {DType::kBF16, "BF16", 2},
    {DType::kI64, "I64", 8}, {DType::kI32, "I32", 4}, {DType::kI16, "I16", 2}, {DType::kI8, "I8", 1},
    {DType::kU8, "U8", 1},   {DType::kBool, "BOOL", 1},
};

bool lookup_dtype(const std::string& name, DType& out) {
  for (const auto& i : kDTypes)
    if (name == i.name) {
      out = i.d;
      return true;
    }
  return false;
}

// A name as it appears in a one-line message: JSON-quoted (so control bytes
// and newlines are escaped), ASCII only, and cut short when long.
std::string quote(const std::string& s) {
  constexpr size_t kMax = 80;
  std::string cut = s.size() > kMax ? s.substr(0, kMax) : s;
  std::string q = json(cut).dump(-1, ' ', true, json::error_handler_t::replace);
  if (s.size() > kMax) q += "...";
  return q;
}

std::string at_byte(const std::string& where, uint64_t byte) { return where + " at byte " + std::to_string(byte); }

[[noreturn]] void bad(const std::string& what, const std::string& where, uint64_t byte) {
  throw Error("invalid safetensors: " + what, at_byte(where, byte));
}

// a * b, or false when it does not fit in 64 bits.
bool mul_u64(uint64_t a, uint64_t b, uint64_t& out) {
  if (a != 0 && b > std::numeric_limits<uint64_t>::max() / a) return false;
  out = a * b;
  return true;
}

// The byte size of a tensor, or false when it overflows 64 bits. Zero
// dimensions are skipped in the overflow test, so an empty tensor is judged by
// its other dimensions the same way whatever the order of its dimensions.
bool byte_size(const std::vector<int64_t>& shape, DType d, uint64_t& out) {
  uint64_t n = dtype_size(d);
  bool empty = false;
  for (int64_t dim : shape) {
    if (dim == 0) {
      empty = true;
      continue;
    }
    if (!mul_u64(n, uint64_t(dim), n)) return false;
  }
  out = empty ? 0 : n;
  return true;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); i++) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

// Builds the header DOM while refusing duplicate keys (at any level: nlohmann
// would silently keep the last, so two readers could disagree on a tensor) and
// deeper nesting than a valid header has. The first problem stops the parse.
class HeaderSax : public nlohmann::json_sax<json> {
 public:
  json root;
  std::string error;             // set when the handler stopped the parse
  bool syntax_error = false;     // set by parse_error
  size_t error_position = 0;     // nlohmann's count of bytes read at a syntax error

  bool null() override { return add(json(nullptr)); }
  bool boolean(bool v) override { return add(json(v)); }
  bool number_integer(number_integer_t v) override { return add(json(v)); }
  bool number_unsigned(number_unsigned_t v) override { return add(json(v)); }
  bool number_float(number_float_t v, const string_t&) override { return add(json(v)); }
  bool string(string_t& v) override { return add(json(std::move(v))); }
  bool binary(binary_t&) override { return fail("header holds binary data"); }
  bool start_object(std::size_t) override { return open(json::object()); }
  bool start_array(std::size_t) override { return open(json::array()); }
  bool end_object() override { stack_.pop_back(); return true; }
  bool end_array() override { stack_.pop_back(); return true; }
  bool key(string_t& k) override {
    if (stack_.back()->contains(k)) return fail("duplicate key " + quote(k) + " in header");
    key_ = std::move(k);
    return true;
  }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception&) override {
    syntax_error = true;
    error_position = position;
    return false;
  }

 private:
  // Parents of the value being parsed. Pointers stay valid: objects are
  // std::map, and an array only grows while none of its elements is open.
  std::vector<json*> stack_;
  std::string key_;

  bool fail(std::string e) {
    error = std::move(e);
    return false;
  }
  json* place(json v) {
    if (stack_.empty()) {
      root = std::move(v);
      return &root;
    }
    json* top = stack_.back();
    if (top->is_array()) {
      top->push_back(std::move(v));
      return &top->back();
    }
    return &((*top)[key_] = std::move(v));
  }
  bool add(json v) {
    place(std::move(v));
    return true;
  }
  bool open(json v) {
    if (stack_.size() >= kMaxDepth) return fail("header nests deeper than a safetensors header can");
    stack_.push_back(place(std::move(v)));
    return true;
  }
};

// A non-negative JSON integer, as nlohmann holds it (-0 parses as a signed 0).
bool json_u64(const json& v, uint64_t& out) {
  if (v.is_number_unsigned()) {
    out = v.get<uint64_t>();
    return true;
  }
  if (v.is_number_integer() && v.get<int64_t>() >= 0) {
    out = uint64_t(v.get<int64_t>());
    return true;
  }
  return false;
}

struct Entry {
  TensorView view;
  uint64_t begin = 0, end = 0;
};

// One tensor entry of the header; `hdr` is the header's byte offset in the
// file, which is where entry errors point (nlohmann keeps no positions).
Entry parse_entry(const std::string& name, const json& j, uint64_t data_size, const std::string& where,
                  uint64_t hdr) {
  const std::string t = "tensor " + quote(name) + ": ";
  if (!j.is_object()) bad(t + "entry is not an object", where, hdr);
  for (const auto& kv : j.items())
    if (kv.key() != "dtype" && kv.key() != "shape" && kv.key() != "data_offsets")
      bad(t + "unknown field " + quote(kv.key()), where, hdr);
  for (const char* f : {"dtype", "shape", "data_offsets"})
    if (!j.contains(f)) bad(t + "missing field \"" + f + "\"", where, hdr);

  Entry e;
  e.view.name = name;
  const json& dt = j["dtype"];
  if (!dt.is_string()) bad(t + "dtype is not a string", where, hdr);
  if (!lookup_dtype(dt.get<std::string>(), e.view.dtype))
    bad(t + "unknown dtype " + quote(dt.get<std::string>()), where, hdr);

  const json& sh = j["shape"];
  if (!sh.is_array()) bad(t + "shape is not an array", where, hdr);
  for (const json& d : sh) {
    if (d.is_number_integer() && !d.is_number_unsigned() && d.get<int64_t>() < 0)
      bad(t + "negative dimension " + std::to_string(d.get<int64_t>()) + " in shape", where, hdr);
    uint64_t v;
    if (!json_u64(d, v)) bad(t + "shape holds something other than an integer", where, hdr);
    if (v > uint64_t(std::numeric_limits<int64_t>::max()))
      bad(t + "dimension " + std::to_string(v) + " in shape is too large", where, hdr);
    e.view.shape.push_back(int64_t(v));
  }
  uint64_t need;
  if (!byte_size(e.view.shape, e.view.dtype, need))
    bad(t + "shape " + shape_text(e.view.shape) + " is too large (byte size overflows 64 bits)", where, hdr);

  const json& off = j["data_offsets"];
  if (!off.is_array() || off.size() != 2 || !json_u64(off[0], e.begin) || !json_u64(off[1], e.end))
    bad(t + "data_offsets is not two non-negative integers", where, hdr);
  if (e.begin > e.end)
    bad(t + "data_offsets begin " + std::to_string(e.begin) + " is after end " + std::to_string(e.end), where,
        hdr);
  if (e.end > data_size)
    bad(t + "data_offsets end " + std::to_string(e.end) + " is beyond the data (" + std::to_string(data_size) +
            " bytes)",
        where, hdr);
  if (e.end - e.begin != need)
    bad(t + "data_offsets span " + std::to_string(e.end - e.begin) + " bytes but " +
            dtype_name(e.view.dtype) + " " + shape_text(e.view.shape) + " needs " + std::to_string(need),
        where, hdr);
  return e;
}

// Checks what the writer must never produce and the reader would refuse.
void check_for_encoding(const std::vector<TensorView>& sorted, const std::string& where) {
  for (size_t i = 0; i < sorted.size(); i++) {
    const TensorView& t = sorted[i];
    if (t.name == kMetadataKey) throw Error("tensor name \"__metadata__\" is reserved", where);
    if (i > 0 && sorted[i - 1].name == t.name) throw Error("duplicate tensor name " + quote(t.name), where);
    for (int64_t d : t.shape)
      if (d < 0) throw Error("tensor " + quote(t.name) + ": negative dimension in shape", where);
    uint64_t need;
    if (!byte_size(t.shape, t.dtype, need))
      throw Error("tensor " + quote(t.name) + ": shape is too large", where);
    if (t.data.size != need)
      throw Error("tensor " + quote(t.name) + ": " + std::to_string(t.data.size) + " bytes of data but " +
                      dtype_name(t.dtype) + " " + shape_text(t.shape) + " needs " + std::to_string(need),
                  where);
  }
}

// A JSON string literal; names and metadata must be valid UTF-8.
std::string json_string(const std::string& s, const std::string& where) {
  try {
    return json(s).dump();
  } catch (const json::exception&) {
    throw Error("string is not valid utf-8: " + quote(s), where);
  }
}

// The padded header text for tensors already sorted by name; data is laid out
// in the same order.
std::string header_text(const std::vector<TensorView>& sorted, const std::map<std::string, std::string>& metadata,
                        const std::string& where) {
  // Built by hand rather than with nlohmann (which sorts keys, putting
  // "__metadata__" after names that start with a capital letter or digit) so
  // that the layout is exactly the one docs/safetensors.md fixes.
  std::string h = "{";
  bool first = true;
  if (!metadata.empty()) {
    h += "\"__metadata__\":{";
    bool mfirst = true;
    for (const auto& kv : metadata) {
      if (!mfirst) h += ",";
      mfirst = false;
      h += json_string(kv.first, where) + ":" + json_string(kv.second, where);
    }
    h += "}";
    first = false;
  }
  uint64_t off = 0;
  for (const TensorView& t : sorted) {
    if (!first) h += ",";
    first = false;
    h += json_string(t.name, where) + ":{\"dtype\":\"" + dtype_name(t.dtype) + "\",\"shape\":" +
         shape_text(t.shape) + ",\"data_offsets\":[" + std::to_string(off) + "," +
         std::to_string(off + t.data.size) + "]}";
    off += t.data.size;
  }
  h += "}";
  // Spaces up to a multiple of 8 (the 8-byte length is itself a multiple), so
  // the data section starts 8-aligned in a mapped file.
  h.append((8 - h.size() % 8) % 8, ' ');
  if (h.size() > kMaxHeaderSize)
    throw Error("safetensors header would exceed " + std::to_string(kMaxHeaderSize) + " bytes", where);
  return h;
}

void sort_by_name(std::vector<TensorView>& v) {
  std::stable_sort(v.begin(), v.end(), [](const TensorView& a, const TensorView& b) { return a.name < b.name; });
}

}  // namespace

const char* dtype_name(DType d) {
  for (const auto& i : kDTypes)
    if (i.d == d) return i.name;
  return "?";
}

size_t dtype_size(DType d) {
  for (const auto& i : kDTypes)
    if (i.d == d) return i.size;
  return 0;
}

DType parse_dtype(const std::string& name, const std::string& where) {
  DType d;
  if (!lookup_dtype(name, d)) throw Error("unknown dtype " + quote(name), where);
  return d;
}

uint64_t TensorView::numel() const {
  uint64_t n = 1;
  for (int64_t d : shape) n *= uint64_t(d);
  return n;
}

SafetensorsPieces safetensors_pieces(std::vector<TensorView> tensors, const std::map<std::string, std::string>& metadata,
                                     const std::string& where) {
  sort_by_name(tensors);
  check_for_encoding(tensors, where);
  const std::string h = header_text(tensors, metadata, where);
  SafetensorsPieces out;
  out.head.resize(8 + h.size());
  put_le64(out.head.data(), h.size());
  std::memcpy(out.head.data() + 8, h.data(), h.size());
  out.size = out.head.size();
  for (const TensorView& t : tensors) {
    out.data.push_back(t.data);
    out.size += t.data.size;
  }
  return out;
}

std::vector<ByteView> SafetensorsPieces::all() const {
  std::vector<ByteView> out{ByteView(head)};
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

Bytes encode_safetensors(std::vector<TensorView> tensors, const std::map<std::string, std::string>& metadata) {
  const SafetensorsPieces p = safetensors_pieces(std::move(tensors), metadata, "encoding safetensors");
  Bytes out;
  out.reserve(size_t(p.size));
  for (const ByteView& v : p.all()) out.insert(out.end(), v.data, v.data + v.size);
  return out;
}

void write_safetensors(const std::string& path, const std::vector<TensorView>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  // Streamed tensor by tensor: a checkpoint is never copied whole in memory.
  const SafetensorsPieces p = safetensors_pieces(tensors, metadata, path);
  AtomicFile f(path, true);
  for (const ByteView& v : p.all()) f.write(v);
  f.commit();
}

Safetensors Safetensors::open(const std::string& path) {
  auto file = std::make_shared<MappedFile>(path);
  Safetensors s = parse(file->view(), path);
  s.file_ = std::move(file);
  return s;
}

Safetensors Safetensors::parse(ByteView bytes, const std::string& where) {
  if (bytes.size < 8) bad("file is shorter than the 8-byte header length", where, 0);
  const uint64_t n = get_le64(bytes.data);
  if (n > kMaxHeaderSize)
    bad("header length " + std::to_string(n) + " exceeds the limit of " + std::to_string(kMaxHeaderSize) +
            " bytes",
        where, 0);
  if (n > bytes.size - 8)
    bad("header length " + std::to_string(n) + " exceeds the file (" + std::to_string(bytes.size - 8) +
            " bytes after the length)",
        where, 0);
  const char* h = reinterpret_cast<const char*>(bytes.data + 8);
  // The reference reader requires the header to open with '{' (no leading
  // whitespace, no byte-order mark); JSON itself would allow both.
  if (n == 0 || h[0] != '{') bad("header is not a json object (does not start with '{')", where, 8);

  // nlohmann's lexer takes a NUL byte between tokens for the end of input, so
  // "{}\0<anything>" would parse. A raw NUL is never valid JSON (not even
  // inside a string), so refuse it here rather than ignore what follows it.
  if (const void* nul = std::memchr(h, 0, n))
    bad("header is not valid json (NUL byte)", where, 8 + uint64_t(static_cast<const char*>(nul) - h));

  HeaderSax sax;
  if (!json::sax_parse(h, h + n, &sax, nlohmann::detail::input_format_t::json, true, false)) {
    if (sax.syntax_error) {
      const uint64_t pos = std::min<uint64_t>(sax.error_position > 0 ? sax.error_position - 1 : 0, n);
      bad("header is not valid json", where, 8 + pos);
    }
    bad(sax.error.empty() ? "header is not valid json" : sax.error, where, 8);
  }
  const json& root = sax.root;
  if (!root.is_object()) bad("header is not a json object", where, 8);

  const uint64_t data_start = 8 + n, data_size = bytes.size - data_start;
  Safetensors s;
  std::vector<Entry> entries;
  for (const auto& kv : root.items()) {
    if (kv.key() == kMetadataKey) {
      if (!kv.value().is_object()) bad("\"__metadata__\" is not an object", where, 8);
      for (const auto& m : kv.value().items()) {
        if (!m.value().is_string()) bad("metadata value for " + quote(m.key()) + " is not a string", where, 8);
        s.metadata_[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    entries.push_back(parse_entry(kv.key(), kv.value(), data_size, where, 8));
  }

  // In offset order every tensor, empty ones included, must start exactly
  // where the previous one ends, and the last must end at the end of the file:
  // that is "no overlaps, no holes, no trailing bytes" in one sweep, and the
  // rule the reference reader applies.
  std::vector<const Entry*> by_off;
  for (const Entry& e : entries) by_off.push_back(&e);
  std::sort(by_off.begin(), by_off.end(), [](const Entry* a, const Entry* b) {
    if (a->begin != b->begin) return a->begin < b->begin;
    if (a->end != b->end) return a->end < b->end;
    return a->view.name < b->view.name;
  });
  uint64_t pos = 0;
  const Entry* prev = nullptr;
  for (const Entry* e : by_off) {
    if (e->begin < pos)
      bad("tensors " + quote(prev->view.name) + " and " + quote(e->view.name) + " overlap", where,
          data_start + e->begin);
    if (e->begin > pos)
      bad("hole of " + std::to_string(e->begin - pos) + " bytes before tensor " + quote(e->view.name) +
              " (data not covered by any tensor)",
          where, data_start + pos);
    pos = e->end;
    prev = e;
  }
  if (pos != data_size)
    bad(std::to_string(data_size - pos) + " trailing bytes after the last tensor", where, data_start + pos);

  // root.items() went in key order, so entries are already in name order.
  for (Entry& e : entries) {
    e.view.data = bytes.sub(data_start + e.begin, e.end - e.begin);
    s.tensors_.push_back(std::move(e.view));
  }
  return s;
}

const TensorView* Safetensors::find(const std::string& name) const {
  auto it = std::lower_bound(tensors_.begin(), tensors_.end(), name,
                             [](const TensorView& t, const std::string& n) { return t.name < n; });
  return it != tensors_.end() && it->name == name ? &*it : nullptr;
}

}  // namespace wit
