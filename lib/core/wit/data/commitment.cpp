// Committing a dataset: record leaves (in parallel), the one sorted distinct
// tree (sorted in parallel), source digests, and the commitment JSON; and the
// check of files against a commitment that the trainer and wit-query rely on.
#include "wit/data/commitment.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <exception>
#include <future>
#include <mutex>
#include <numeric>
#include <thread>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "wit/hash/blake2b_x4.h"
#include "wit/base/error.h"
#include "wit/hash/hash.h"
#include "wit/data/index.h"
#include "wit/base/io.h"
#include "wit/hash/merkle.h"
#include "wit/base/page_buffer.h"
#include "wit/base/parallel.h"
#include "wit/base/progress.h"
#include "wit/data/sorted_merge.h"
#include "wit/hash/tags.h"

namespace wit {

using nlohmann::json;

Hash32 record_leaf(ByteView record) { return kBlake2bTree.leaf(record); }

bool is_data_tree_root(const std::vector<Hash32>& sorted_leaves, const Hash32& root) {
  return merkle_root(kDataTree, sorted_leaves) == root ||
         merkle_root(Commitment::data_tree_hash(kCommitVersionUnranged), sorted_leaves) == root;
}

namespace {

Hash32 source_digest(uint64_t size, uint64_t piece_size, const Hash32& mth) {
  Blake2b h;
  h.update_field(ByteView(tags::kSourceDigest));
  h.update_le64(size).update_le64(piece_size).update(ByteView(mth.data(), 32));
  return h.final();
}

std::string str_field(const json& j, const char* key, const std::string& where) {
  if (!j.contains(key) || !j[key].is_string())
    throw Error(std::string("invalid commitment: missing or non-string field '") + key + "'", where);
  return j[key].get<std::string>();
}

Hash32 hash_field(const json& j, const char* key, const std::string& where) {
  Hash32 h;
  if (!Hash32::from_hex(str_field(j, key, where), h))
    throw Error(std::string("invalid commitment: field '") + key + "' is not 64 hex digits", where);
  return h;
}

uint64_t u64_field(const json& j, const char* key, const std::string& where) {
  if (!j.contains(key) || !j[key].is_number_unsigned())
    throw Error(std::string("invalid commitment: missing or non-integer field '") + key + "'", where);
  return j[key].get<uint64_t>();
}

std::string count(uint64_t v) { return std::to_string(v); }

}  // namespace

json Commitment::to_json() const {
  json src = json::array();
  for (const auto& s : sources)
    src.push_back({{"path", s.path}, {"size", s.size}, {"piece_size", s.piece_size},
                   {"records", s.records}, {"digest", s.digest.hex()}});
  return json{{"format", kCommitFormat}, {"version", version}, {"hash", kBlake2bTree.name},
              {"reader", reader.to_json()}, {"records", records}, {"n", n},
              {"root", root.hex()}, {"sources", src}, {"inputs", inputs}};
}

std::string Commitment::dump() const { return to_json().dump(2) + "\n"; }

std::string Commitment::describe() const {
  std::string reader_words = ReaderSpec::kind_name(reader.kind);
  if (reader.kind == ReaderKind::kJsonl) reader_words += " (field \"" + reader.field + "\")";
  if (reader.kind == ReaderKind::kTokens)
    reader_words += " (" + std::to_string(reader.seq_len) + " tokens a record, uint" +
                    std::to_string(8 * reader.token_bytes) + " ids)";
  uint64_t bytes = 0;
  for (const auto& s : sources) bytes += s.size;
  std::string o;
  o += "records      " + count(records) + " in the files, " + count(n) + " distinct, read as " + reader_words + "\n";
  if (records > n)
    o += "             " + count(records - n) + (records - n == 1 ? " repeat" : " repeats") +
         ": a record is one leaf, however often the files hold it, and trains once per epoch\n";
  o += "root         " + root.hex() + "\n";
  o += "             the one data tree: the " + count(n) +
       " distinct record leaves, sorted; training batches, inclusion,\n"
       "             exclusion, usage and contamination are all proved against it\n";
  o += "sources      " + std::to_string(sources.size()) + " file(s), " + human_bytes(double(bytes)) + "\n";
  for (const auto& s : sources)
    o += "  " + s.path + "  " + human_bytes(double(s.size)) + ", " + count(s.records) + " records, digest " +
         s.digest.hex().substr(0, 16) + "\n";
  if (ranged())
    o += "hash         BLAKE2b-256, RFC 6962 shape, every node binds its children's key ranges (version 3,\n"
         "             docs/commitment.md): exclusion proofs stand alone\n";
  else
    o += "hash         BLAKE2b-256, RFC 6962 tree (version 2): exclusion proofs hold only if the tree is\n"
         "             sorted, which only an audit of the leaves shows; commit again for version 3\n";
  return o;
}

std::string Commitment::place_of(uint64_t record) const {
  uint64_t at = 0;
  for (const auto& s : sources) {
    if (record < at + s.records)
      return s.path + (reader.kind == ReaderKind::kFiles ? std::string() : ", record " + std::to_string(record - at + 1));
    at += s.records;
  }
  return "record " + std::to_string(record + 1) + " of the files";
}

Commitment Commitment::from_json(const json& j, const std::string& where) {
  if (!j.is_object()) throw Error("invalid commitment: not a json object", where);
  if (!j.contains("format") || j["format"] != kCommitFormat)
    throw Error("not a wit commitment (format is not \"wit.commit\")", where);
  if (!j.contains("version") || !j["version"].is_number_integer())
    throw Error("invalid commitment: missing version", where);
  const int64_t version = j["version"].get<int64_t>();
  if (version != kCommitVersion && version != kCommitVersionUnranged)
    throw Error("unsupported commitment version " + j["version"].dump() + " (this wit reads versions " +
                    std::to_string(kCommitVersionUnranged) + " and " + std::to_string(kCommitVersion) + ")",
                where,
                j["version"].get<int64_t>() == 1
                    ? "version 1 had two trees; commit the data again with this wit-commit"
                    : "");
  if (!j.contains("hash") || j["hash"] != kBlake2bTree.name)
    throw Error("invalid commitment: unsupported hash (want \"blake2b-256\")", where);
  Commitment c;
  c.version = int(version);
  if (!j.contains("reader")) throw Error("invalid commitment: missing reader", where);
  c.reader = ReaderSpec::from_json(j["reader"], where);
  c.records = u64_field(j, "records", where);
  c.n = u64_field(j, "n", where);
  if (c.n > c.records || (c.records > 0 && c.n == 0))
    throw Error("invalid commitment: n (distinct records) is inconsistent with records", where);
  c.root = hash_field(j, "root", where);
  if (!j.contains("sources") || !j["sources"].is_array())
    throw Error("invalid commitment: missing sources", where);
  uint64_t total = 0;
  for (const auto& s : j["sources"]) {
    if (!s.is_object()) throw Error("invalid commitment: source is not an object", where);
    SourceInfo si;
    si.path = str_field(s, "path", where);
    si.size = u64_field(s, "size", where);
    si.piece_size = u64_field(s, "piece_size", where);
    si.records = u64_field(s, "records", where);
    si.digest = hash_field(s, "digest", where);
    if (si.records > UINT64_MAX - total) throw Error("invalid commitment: source record counts overflow", where);
    total += si.records;
    c.sources.push_back(si);
  }
  if (total != c.records)
    throw Error("invalid commitment: the sources hold " + std::to_string(total) + " records, 'records' says " +
                    std::to_string(c.records),
                where);
  if (!j.contains("inputs") || !j["inputs"].is_array())
    throw Error("invalid commitment: missing inputs", where);
  for (const auto& s : j["inputs"]) {
    if (!s.is_string()) throw Error("invalid commitment: input is not a string", where);
    c.inputs.push_back(s.get<std::string>());
  }
  return c;
}

Commitment Commitment::load(const std::string& path) {
  std::string text = read_file(path);
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) throw Error("invalid commitment: not valid json", path);
  return from_json(j, path == "-" ? "stdin" : path);
}

// ---------------------------------------------------------------- records

RecordFiles RecordFiles::open(const ReaderSpec& spec, const std::vector<std::string>& paths) {
  spec.validate();
  RecordFiles f;
  for (const auto& p : paths) {
    f.readers.push_back(RecordSource::open(spec, p));
    f.first.push_back(f.records);
    f.records += f.readers.back()->count();
  }
  return f;
}

ByteView RecordFiles::record(uint64_t i, std::string& scratch) const {
  size_t r = size_t(std::upper_bound(first.begin(), first.end(), i) - first.begin()) - 1;
  return readers[r]->record(i - first[r], scratch);
}

namespace {

// Record leaves hashed hash_lanes() at a time (16 with AVX-512, 4 with
// AVX2), one per SIMD lane, when their leaf messages fill the same number of
// BLAKE2b blocks: up to lanes - 1 records wait per block count (counts of 64
// blocks and more share one class, holding one count at a time).
class LaneBatcher {
 public:
  LaneBatcher() : lanes_(hash_lanes()), wait_(lanes_ > 1 ? kClasses + 1 : 0) {}
  LaneBatcher(const LaneBatcher&) = delete;
  LaneBatcher& operator=(const LaneBatcher&) = delete;
  // Hashes v's leaf into *out, now or with others of its class before
  // finish(). v's bytes must stay put until then, unless they are in
  // *owner: then the batcher keeps them (*owner gets other storage).
  void add(ByteView v, Hash32* out, std::string* owner = nullptr) {
    if (lanes_ == 1) {
      *out = record_leaf(v);
      return;
    }
    const uint64_t blocks = x4_blocks(v.size);
    Waiting& w = wait_[std::min(blocks, kClasses)];
    if (w.n > 0 && w.blocks != blocks) flush(w);
    w.blocks = blocks;
    const size_t k = w.n++;
    if (owner) {
      std::swap(*owner, w.scratch[k]);
      v = ByteView(w.scratch[k]);
    }
    w.data[k] = v.data;
    w.len[k] = v.size;
    w.out[k] = out;
    if (w.n == lanes_) flush(w);
  }
  // Hashes every record still waiting.
  void finish() {
    for (Waiting& w : wait_) flush(w);
  }

 private:
  static constexpr uint64_t kClasses = 64;
  struct Waiting {
    uint64_t blocks = 0;
    size_t n = 0;
    const uint8_t* data[16];
    size_t len[16];
    Hash32* out[16];
    std::string scratch[16];
  };
  void flush(Waiting& w) {
    if (w.n) leaves_lanes(w.data, w.len, w.n, w.out);
    w.n = 0;
  }
  size_t lanes_;
  std::vector<Waiting> wait_;
};

// Leaf of every record of `f`, written at out + i * stride (stride >= 32).
// Records are hashed hash_lanes() at a time (16 with AVX-512, 4 with AVX2),
// one per SIMD lane, when their leaf messages fill the same number of
// BLAKE2b blocks: each chunk keeps up to lanes - 1 records waiting per block
// count (token windows are all one count).
// Fixed-size records (token windows) larger than this are hashed one at a
// time, streamed; smaller ones hash_lanes() at a time from a buffer.
constexpr uint64_t kLaneRecordMax = uint64_t(256) << 10;
// Bytes a thread reads at a time when streaming fixed-size records.
constexpr uint64_t kStreamChunk = uint64_t(1) << 20;

// hash_leaves for files whose records are fixed-size slices of the file
// (tokens): each thread streams its run of records through one buffer with
// read_bytes (no mapping, so no page fault per 4 KiB of input) and hashes
// them hash_lanes() at a time while they are in cache.
void hash_fixed(const RecordFiles& f, uint8_t* out, size_t stride, unsigned threads,
                const std::function<void(uint64_t)>& on_bytes) {
  const auto& offset = f.first;
  parallel_for(f.records, threads, 64, [&](uint64_t b, uint64_t e) {
    std::vector<uint8_t> buf;
    const uint8_t* data[16];
    size_t len[16];
    Hash32* res[16];
    size_t r = size_t(std::upper_bound(offset.begin(), offset.end(), b) - offset.begin()) - 1;
    for (uint64_t i = b; i < e;) {
      while (r + 1 < offset.size() && i >= offset[r + 1]) r++;
      const RecordSource& src = *f.readers[r];
      const uint64_t fs = src.fixed_size(), end_r = std::min(e, offset[r] + src.count());
      if (fs > kLaneRecordMax) {  // one window at a time, in pieces
        buf.resize(kStreamChunk);
        Blake2b h;
        h.update(uint8_t(0x00));  // the RFC 6962 leaf prefix
        for (uint64_t at = 0; at < fs; at += kStreamChunk) {
          const uint64_t n = std::min(kStreamChunk, fs - at);
          src.read_bytes((i - offset[r]) * fs + at, n, buf.data());
          h.update(ByteView(buf.data(), n));
          if (on_bytes) on_bytes(n);
        }
        *reinterpret_cast<Hash32*>(out + i * stride) = h.final();
        i++;
        continue;
      }
      const uint64_t per = std::max<uint64_t>(16, (kStreamChunk / fs + 15) / 16 * 16);
      const uint64_t n = std::min(per, end_r - i);
      buf.resize(n * fs);
      src.read_bytes((i - offset[r]) * fs, n * fs, buf.data());
      for (uint64_t k = 0; k < n; k += 16) {
        const size_t c = size_t(std::min<uint64_t>(16, n - k));
        for (size_t j = 0; j < c; j++) {
          data[j] = buf.data() + (k + j) * fs;
          len[j] = fs;
          res[j] = reinterpret_cast<Hash32*>(out + (i + k + j) * stride);
        }
        leaves_lanes(data, len, c, res);
      }
      if (on_bytes) on_bytes(n * fs);
      i += n;
    }
  });
}

void hash_leaves(const RecordFiles& f, uint8_t* out, size_t stride, unsigned threads,
                 const std::function<void(uint64_t)>& on_bytes) {
  if (!f.readers.empty() &&
      std::all_of(f.readers.begin(), f.readers.end(), [](const auto& r) { return r->fixed_size() > 0; }))
    return hash_fixed(f, out, stride, threads, on_bytes);
  const auto& offset = f.first;
  parallel_for(f.records, threads, 256, [&](uint64_t b, uint64_t e) {
    LaneBatcher batch;
    std::string cur;
    size_t r = size_t(std::upper_bound(offset.begin(), offset.end(), b) - offset.begin()) - 1;
    uint64_t pending = 0;
    for (uint64_t i = b; i < e; i++) {
      while (r + 1 < offset.size() && i >= offset[r + 1]) r++;
      ByteView v = f.readers[r]->record(i - offset[r], cur);
      pending += v.size;
      if (on_bytes && pending >= (uint64_t(1) << 22)) {
        on_bytes(pending);
        pending = 0;
      }
      batch.add(v, reinterpret_cast<Hash32*>(out + i * stride),
                v.size && v.data == reinterpret_cast<const uint8_t*>(cur.data()) ? &cur : nullptr);
    }
    batch.finish();
    if (on_bytes && pending) on_bytes(pending);
  });
}

using Entry = SortEntry;

// Sorts each bucket [start[b], start[b + 1]) of e, b < start.size() - 1, on
// up to `threads` threads.
template <class Starts>
void sort_buckets(Entry* e, const Starts& start, unsigned threads) {
  parallel_for(start.size() - 1, threads, 8, [&](uint64_t lo, uint64_t hi) {
    for (uint64_t b = lo; b < hi; b++) std::sort(e + start[b], e + start[b + 1], entry_less);
  });
}

}  // namespace

DataTree::DataTree(const RecordFiles& files, unsigned threads, const std::function<void(uint64_t)>& on_bytes,
                   const std::function<void(const uint8_t*, size_t)>& in_file_order) {
  const uint64_t total = files.records;
  // Raw memory, not a LeafRun: its zeroing would be one thread's first touch
  // of every page; the hashing threads touch their own.
  const size_t bytes = size_t(std::max<uint64_t>(1, total) * sizeof(Hash32));
  const std::unique_ptr<uint8_t[], HugeFree> raw(static_cast<uint8_t*>(huge_alloc(bytes)), HugeFree{bytes});
  const Hash32* leaves = reinterpret_cast<const Hash32*>(raw.get());
  hash_leaves(files, raw.get(), sizeof(Hash32), threads, on_bytes);
  phase_done("record leaves");
  if (in_file_order) {
    in_file_order(raw.get(), sizeof(Hash32));
    phase_done("leaves in file order (token digests)");
  }
  // The leaves in file order, cut into one run a thread for the bucket pass.
  const unsigned t = threads == 0 ? default_threads() : threads;
  std::vector<Span> runs;
  for (unsigned r = 0; r < t; r++) {
    const uint64_t b = total * r / t, e = total * (r + 1) / t;
    runs.push_back({leaves + b, e - b});
  }
  bucket_sort(runs, threads);
}

DataTree::DataTree(const std::vector<LeafRun>& runs, unsigned threads) {
  std::vector<Span> spans;
  for (const auto& run : runs) spans.push_back({run.data(), run.size()});
  bucket_sort(spans, threads);
}

void DataTree::bucket_sort(const std::vector<Span>& runs, unsigned threads) {
  uint64_t total = 0;
  for (const auto& run : runs) total += run.size;
  records_ = total;
  allocate(total);
  Entry* e = reinterpret_cast<Entry*>(buf_.get());
  // The first pass of the sort is this copy: each run's entries go straight
  // to their bucket (the leaf's first `bits` bits: about 16 entries a bucket,
  // 256 to 65,536 buckets), runs on all threads, each into its own slice of
  // every bucket; then the small buckets are sorted.
  unsigned bits = 8;
  while (bits < 16 && (total >> bits) > 16) bits++;
  const size_t nb = size_t(1) << bits;
  auto key = [bits](const Hash32& h) { return size_t((unsigned(h.b[0]) << 8 | h.b[1]) >> (16 - bits)); };
  const size_t m = runs.size();
  std::vector<std::vector<uint64_t>> count(m, std::vector<uint64_t>(nb, 0));
  std::vector<uint64_t> first(m + 1, 0);
  for (size_t r = 0; r < m; r++) first[r + 1] = first[r] + runs[r].size;
  parallel_for(m, threads, 1, [&](uint64_t lo, uint64_t hi) {
    for (uint64_t r = lo; r < hi; r++) {
      std::vector<uint64_t>& c = count[r];
      for (uint64_t i = 0; i < runs[r].size; i++) c[key(runs[r].data[i])]++;
    }
  });
  std::vector<uint64_t> start(nb + 1, 0);
  for (size_t b = 0; b < nb; b++) {
    uint64_t at = start[b];
    for (size_t r = 0; r < m; r++) {
      const uint64_t k = count[r][b];
      count[r][b] = at;  // now where run r's entries of bucket b go
      at += k;
    }
    start[b + 1] = at;
  }
  parallel_for(m, threads, 1, [&](uint64_t lo, uint64_t hi) {
    for (uint64_t r = lo; r < hi; r++) {
      std::vector<uint64_t>& to = count[r];
      const Span& run = runs[r];
      for (uint64_t i = 0; i < run.size; i++) e[to[key(run.data[i])]++] = Entry{run.data[i], first[r] + i};
    }
  });
  phase_done("leaves into the tree's buffer, by their first bits");
  sort_buckets(e, start, threads);
  phase_done("sort");
  distinct();
}

void DataTree::allocate(uint64_t records) {
  const size_t bytes = size_t(std::max<uint64_t>(1, records) * sizeof(Entry));
  buf_ = std::unique_ptr<uint8_t[], HugeFree>(static_cast<uint8_t*>(huge_alloc(bytes)), HugeFree{bytes});
}

void DataTree::distinct() {
  const uint64_t total = records_;
  const Entry* e = reinterpret_cast<const Entry*>(buf_.get());
  // De-duplicate and compact in one pass: the first of equal leaves has the
  // smallest record number; the k-th distinct leaf moves from entry i (byte
  // 40 i) to byte 32 k, k <= i, never past an entry still to be read. The
  // first-occurrence table is reserved at its largest (untouched pages cost
  // nothing) and filled once.
  uint8_t* const base = buf_.get();
  first_.reserve(total);
  uint64_t n = 0;
  for (uint64_t i = 0; i < total; i++) {
    if (n > 0 && std::memcmp(base + 32 * (n - 1), e[i].leaf.data(), 32) == 0) continue;
    first_.push_back(e[i].rec);
    std::memmove(base + 32 * n, e[i].leaf.data(), 32);
    n++;
  }
  n_ = n;
  phase_done("de-duplicate");
}

std::optional<uint64_t> DataTree::find(const Hash32& leaf) const {
  const uint64_t i = lower_bound(leaves(), n_, leaf);
  if (i >= n_ || leaves()[i] != leaf) return std::nullopt;
  return i;
}

// ---------------------------------------------------------------- digests

namespace {

// MTH over the n hashes at base + i * stride, then *extra (if not null) as
// hash n: the piece tree of a token file, from the leaves where they lie
// (no copy of them). Perfect subtrees of 256 are hashed on all threads, the
// few nodes above them as MerkleTree::range_hash would.
Hash32 strided_root(const uint8_t* base, size_t stride, uint64_t n, const Hash32* extra, unsigned threads) {
  const uint64_t total = n + (extra ? 1 : 0);
  auto piece = [&](uint64_t i) -> const Hash32& {
    return i < n ? *reinterpret_cast<const Hash32*>(base + i * stride) : *extra;
  };
  constexpr uint64_t kBlock = 256;
  std::vector<Hash32> blocks(total / kBlock);
  parallel_for(blocks.size(), threads, 16, [&](uint64_t b, uint64_t e) {
    std::vector<Hash32> buf(kBlock);
    for (uint64_t k = b; k < e; k++) {
      for (uint64_t j = 0; j < kBlock; j++) buf[j] = piece(k * kBlock + j);
      for (uint64_t w = kBlock / 2; w >= 1; w /= 2) node_pairs(buf.data(), w, buf.data());
      blocks[k] = buf[0];
    }
  });
  std::function<Hash32(uint64_t, uint64_t)> range = [&](uint64_t b, uint64_t e) -> Hash32 {
    const uint64_t m = e - b;
    if (m == 0) return kBlake2bTree.empty();
    if (m == 1) return piece(b);
    if (m == kBlock && b % kBlock == 0) return blocks[b / kBlock];
    const uint64_t k = split_point(m);
    return kBlake2bTree.node(range(b, b + k), range(b + k, e));
  };
  return range(0, total);
}

std::vector<SourceInfo> digests(const ReaderSpec& spec, const RecordFiles& f, unsigned threads,
                                const std::function<void(uint64_t)>& on_bytes, const uint8_t* leaves_in_order,
                                size_t stride) {
  std::vector<SourceInfo> out;
  std::vector<Hash32> own;  // tokens without leaves_in_order: hashed here
  if (spec.kind == ReaderKind::kTokens && !leaves_in_order) {
    own.resize(f.records);
    hash_leaves(f, reinterpret_cast<uint8_t*>(own.data()), sizeof(Hash32), threads, on_bytes);
    leaves_in_order = reinterpret_cast<const uint8_t*>(own.data());
    stride = sizeof(Hash32);
  }
  for (size_t r = 0; r < f.readers.size(); r++) {
    const auto& files = f.readers[r]->files();
    for (const auto& sf : files) {
      SourceInfo si;
      si.path = sf.path;
      si.size = sf.size;
      si.records = files.size() == 1 ? f.readers[r]->count() : 1;
      if (spec.kind == ReaderKind::kTokens) {
        // Token windows tile the file, so their leaves are the pieces; a
        // partial window at the end is one more piece.
        si.piece_size = uint64_t(spec.token_bytes) * spec.seq_len;
        const uint64_t cnt = f.readers[r]->count(), covered = cnt * si.piece_size;
        Hash32 tail;
        if (covered < si.size) {
          Bytes rest(si.size - covered);
          f.readers[r]->read_bytes(covered, rest.size(), rest.data());
          tail = record_leaf(ByteView(rest));
        }
        const Hash32 mth = strided_root(leaves_in_order + f.first[r] * stride, stride, cnt,
                                        covered < si.size ? &tail : nullptr, threads);
        si.digest = source_digest(si.size, si.piece_size, mth);
        out.push_back(si);
        continue;
      }
      ByteView all = sf.content->view();
      std::vector<Hash32> pieces;
      si.piece_size = kDefaultPieceSize;
      pieces.resize((all.size + si.piece_size - 1) / si.piece_size);
      // Whole pieces hash_lanes() at a time (one per SIMD lane), each
      // thread a run of them; the last, partial one alone.
      const uint64_t whole = all.size / si.piece_size;
      parallel_for(whole, threads, 1, [&](uint64_t b, uint64_t e) {
        constexpr uint64_t kStep = 16;
        for (uint64_t g = b; g < e; g += kStep) {
          const uint64_t c = std::min(kStep, e - g);
          leaves_lanes(all.data + g * si.piece_size, si.piece_size, si.piece_size, c, &pieces[g]);
          if (on_bytes) on_bytes(c * si.piece_size);
        }
      });
      for (uint64_t i = whole; i < pieces.size(); i++) {
        const uint64_t off = i * si.piece_size, len = std::min(si.piece_size, all.size - off);
        pieces[i] = record_leaf(all.sub(off, len));
        if (on_bytes) on_bytes(len);
      }
      si.digest = source_digest(si.size, si.piece_size, merkle_root(kBlake2bTree, pieces, threads));
      out.push_back(si);
    }
  }
  return out;
}

}  // namespace

std::vector<SourceInfo> source_digests(const ReaderSpec& spec, const RecordFiles& files, unsigned threads,
                                       const std::function<void(uint64_t)>& on_bytes, const uint8_t* leaves_in_order,
                                       size_t stride) {
  return digests(spec, files, threads, on_bytes, leaves_in_order, stride);
}

LeafSet hash_records(const ReaderSpec& spec, const std::vector<std::string>& paths, unsigned threads,
                     const std::function<void(uint64_t)>& on_bytes) {
  LeafSet out;
  out.files = RecordFiles::open(spec, paths);
  out.leaves.resize(out.files.records);
  hash_leaves(out.files, reinterpret_cast<uint8_t*>(out.leaves.data()), sizeof(Hash32), threads, on_bytes);
  out.sources = digests(spec, out.files, threads, on_bytes,
                        reinterpret_cast<const uint8_t*>(out.leaves.data()), sizeof(Hash32));
  return out;
}

// ---------------------------------------------------------------- committing

namespace {

// The leaves of `recs` into out[0 .. recs.size()), hash_lanes() at a time.
void hash_views(const RecordViews& recs, Hash32* out) {
  LaneBatcher batch;
  for (size_t i = 0; i < recs.size(); i++) batch.add(recs[i], &out[i]);
  batch.finish();
}

// Bounded memory for the streamed commit (CommitLimits): each thread's part
// of a file holds up to part_cap leaves before it is sorted and spilled as a
// run; the finished files' leaves, up to held_cap, before they are spilled
// as one run. Peak: about kCommitBytesPerRecord bytes for budget /
// kCommitBytesPerRecord records. A spilled entry's order key is its segment
// (a file's part: file * threads + part) and its number in the segment,
// segment << kLocalBits | local: in the order of the global record numbers,
// which are known only once each file is read (record_of).
class Spill {
 public:
  Spill(const CommitLimits& lim, unsigned threads, uint64_t input_bytes)
      : lim_(lim), threads_(threads), input_bytes_(input_bytes) {
    const uint64_t held = std::max<uint64_t>(16, lim.memory / kCommitBytesPerRecord);
    part_cap = std::max<uint64_t>(1, held / (2 * threads));
    held_cap = std::max<uint64_t>(1, held / 2);
  }
  uint64_t part_cap = 0, held_cap = 0;
  static constexpr unsigned kLocalBits = 36;
  uint64_t segment(size_t file, unsigned part) const {
    const uint64_t seg = uint64_t(file) * threads_ + part;
    if (seg >> (64 - kLocalBits))
      throw Error("too many files for a commit that spills (at most " +
                  std::to_string((uint64_t(1) << (64 - kLocalBits)) / threads_) + " at -j " +
                  std::to_string(threads_) + ")", "", "commit them as shards and merge them (wit-commit merge)");
    return seg;
  }
  // A chunk of `records` records over `bytes` bytes was read (for the disk estimate).
  void read(uint64_t bytes, uint64_t records) {
    bytes_ += bytes;
    records_ += records;
  }
  struct Tagged {
    const Hash32* data;
    uint64_t size, seg, local0;
  };
  // Sorts the leaves of `runs` with their order keys and spills them as one run.
  void spill(const std::vector<Tagged>& runs) {
    uint64_t m = 0;
    for (const auto& r : runs) m += r.size;
    if (m == 0) return;
    std::vector<SortEntry> e;
    e.reserve(m);
    for (const auto& r : runs) {
      if ((r.local0 + r.size) >> kLocalBits) throw Error("a file part too large for a commit that spills");
      for (uint64_t i = 0; i < r.size; i++) e.push_back(SortEntry{r.data[i], r.seg << kLocalBits | (r.local0 + i)});
    }
    runs_file().add_run(e);
  }
  bool active() const { return runs_ != nullptr; }
  SpilledRuns& runs() { return *runs_; }
  // Global record number of each segment's first record.
  void set_base(uint64_t seg, uint64_t base) {
    if (base_.size() <= seg) base_.resize(seg + 1, 0);
    base_[seg] = base;
  }
  uint64_t record_of(uint64_t key) const { return base_[key >> kLocalBits] + (key & ((uint64_t(1) << kLocalBits) - 1)); }

 private:
  // The scratch file, made at the first spill, after the disk it will need
  // (about 40 bytes a record for the runs, 8 + 40 for the index being
  // written, from the records a byte so far) is checked and told.
  SpilledRuns& runs_file() {
    const std::lock_guard<std::mutex> lock(mu_);
    if (!runs_) {
      const std::string dir = lim_.spill_dir.empty() ? temp_root() : lim_.spill_dir;
      const double per_byte = bytes_ ? double(records_.load()) / double(bytes_.load()) : 0;
      const uint64_t est = uint64_t(per_byte * double(input_bytes_) * 1.05) + 1;
      const uint64_t need = est * (sizeof(SortEntry) + 8 + 40);
      check_free_disk(dir, need, "the sorted runs of a commit larger than --memory");
      if (lim_.note)
        lim_.note("the records pass the memory budget (" + human_bytes(double(lim_.memory)) +
                  "): spilling sorted runs to " + dir + ", about " + human_bytes(double(est * 40)) +
                  " of temporary disk (" + human_bytes(double(need)) + " with the index; " +
                  human_bytes(double(free_disk(dir))) + " free)");
      runs_ = std::make_unique<SpilledRuns>(dir);
    }
    return *runs_;
  }
  const CommitLimits& lim_;
  unsigned threads_;
  uint64_t input_bytes_;
  std::atomic<uint64_t> bytes_{0}, records_{0};
  std::mutex mu_;
  std::unique_ptr<SpilledRuns> runs_;
  std::vector<uint64_t> base_;
};

// The source digest's piece leaves of `fresh` (whole pieces of P bytes, the
// last one perhaps short) into out[0 ..), hash_lanes() at a time.
void hash_pieces(ByteView fresh, uint64_t P, Hash32* out) {
  const uint64_t whole = fresh.size / P;
  for (uint64_t g = 0; g < whole; g += 16)
    leaves_lanes(fresh.data + g * P, P, P, size_t(std::min<uint64_t>(16, whole - g)), &out[g]);
  if (fresh.size % P) out[whole] = record_leaf(fresh.sub(whole * P, fresh.size % P));
}

// One leaf of a source digest's piece tree, pushed in order into a RootFolder
// over kBlake2bTree (the RFC 6962 root in O(log n) memory; sorted_merge.h).
void push_piece(RootFolder& f, const Hash32& leaf) { f.push({1, leaf, leaf, leaf}); }

// A stream of token windows, read once in order: each read of up to 16 MiB
// of whole windows is hashed on `threads` threads (a window over 16 MiB is
// hashed alone, in 1 MiB pieces), its leaves go to `leaves_in_order` and
// into the source digest's piece tree (a token file's pieces are its
// windows, then a partial window at the end), which is all that is kept.
void stream_tokens(const ReaderSpec& spec, const std::string& path, int fd, unsigned threads,
                   const std::function<void(uint64_t)>& on_bytes,
                   const std::function<void(const Hash32* leaves, size_t n)>& leaves_in_order, SourceInfo& si) {
  constexpr uint64_t kChunk = uint64_t(16) << 20, kPiece = uint64_t(1) << 20;
  const uint64_t W = uint64_t(spec.token_bytes) * spec.seq_len;
  const bool big = W > kChunk;
  const uint64_t chunk = big ? kPiece : kChunk / W * W;
  const std::unique_ptr<uint8_t[], HugeFree> buf(static_cast<uint8_t*>(huge_alloc(size_t(chunk))), HugeFree{size_t(chunk)});
  std::vector<Hash32> out(big ? 1 : chunk / W);
  RootFolder digest(kBlake2bTree);
  uint64_t size = 0, in_window = 0;  // big windows: bytes of the current one hashed so far
  std::unique_ptr<Blake2b> h;  // the big window being read
  for (;;) {
    const uint64_t want = big ? std::min(chunk, W - in_window) : chunk;
    const uint64_t n = read_up_to(fd, buf.get(), want, path, size);
    size += n;
    if (on_bytes) on_bytes(n);
    if (big) {
      if (in_window == 0 && n > 0) {
        h = std::make_unique<Blake2b>();
        h->update(uint8_t(0x00));  // the RFC 6962 leaf prefix
      }
      if (n > 0) h->update(ByteView(buf.get(), n));
      in_window += n;
      if (in_window == W) {
        out[0] = h->final();
        leaves_in_order(out.data(), 1);
        push_piece(digest, out[0]);
        in_window = 0;
      } else if (n < want) {  // the end, in a partial window
        if (in_window > 0) push_piece(digest, h->final());
        break;
      }
      continue;
    }
    const uint64_t whole = n / W;
    parallel_for(whole, threads, 16, [&](uint64_t b, uint64_t e) {
      for (uint64_t g = b; g < e; g += 16)
        leaves_lanes(buf.get() + g * W, W, W, size_t(std::min<uint64_t>(16, e - g)), &out[g]);
    });
    leaves_in_order(out.data(), whole);
    for (uint64_t k = 0; k < whole; k++) push_piece(digest, out[k]);
    if (n < chunk) {
      if (n > whole * W) push_piece(digest, record_leaf(ByteView(buf.get() + whole * W, n - whole * W)));
      break;
    }
  }
  check_token_size(size, spec.token_bytes, path);
  si.records = size / W;
  si.path = path;
  si.size = size;
  si.piece_size = W;
  si.digest = source_digest(size, W, digest.root(nullptr));
}

// One file that the one pass does not take, read the ordinary way
// (RecordSource::open, which words any error): its leaves as one more run.
// Progress counts only the bytes beyond the `reported` ones of a pass that
// gave up on it.
void ordinary_file(const ReaderSpec& spec, const std::string& path, unsigned threads,
                   const std::function<void(uint64_t)>& on_bytes, uint64_t reported,
                   std::vector<DataTree::LeafRun>& runs, std::vector<SourceInfo>& sources) {
  LeafSet one = hash_records(spec, {path}, threads, {});
  runs.emplace_back(one.leaves.begin(), one.leaves.end());
  for (auto& si : one.sources) {
    if (on_bytes && 2 * si.size > reported) on_bytes(2 * si.size - reported);
    sources.push_back(std::move(si));
  }
}

// A stream (stdin, a pipe, a fifo, a device) of jsonl or lines records, read
// once in order (stream_fd_records): each chunk's record leaves and source
// digest pieces are hashed on the workers; then, in input order, the leaves
// go to `leaves_in_order` (records numbered on from the previous call) and
// the pieces to the piece list. Nothing of the input is kept. A bad line
// throws the reader's error (line and byte offset).
void stream_pipe(const ReaderSpec& spec, const std::string& path, unsigned threads,
                 const std::function<void(uint64_t)>& on_bytes,
                 const std::function<void(const Hash32* leaves, size_t n)>& leaves_in_order, SourceInfo& si) {
  constexpr uint64_t P = kDefaultPieceSize;
  Fd own;
  if (path != "-") {
    own.reset(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!own.ok()) throw Error("cannot open: " + errno_text(), path);
  }
  const int fd = path == "-" ? 0 : own.get();
  note_input(fd);
  // A pipe's buffer of 1 MiB (the default limit of /proc/sys/fs/pipe-max-size)
  // instead of 64 KiB: the writer (zstdcat, cat) and the reads here wake
  // each other a sixteenth as often. Where it is refused, the buffer stays.
  ::fcntl(fd, F_SETPIPE_SZ, 1 << 20);
  if (spec.kind == ReaderKind::kTokens) return stream_tokens(spec, path, fd, threads, on_bytes, leaves_in_order, si);
  const unsigned slots = stream_slots(threads);
  std::vector<DataTree::LeafRun> leaves(slots);
  std::vector<std::vector<Hash32>> piece(slots);
  RootFolder pieces(kBlake2bTree);
  si.path = path;
  si.size = stream_fd_records(
      spec, fd, path, threads, P,
      [&](unsigned u, const StreamChunk& c) {
        piece[u].resize((c.fresh.size + P - 1) / P);
        hash_pieces(c.fresh, P, piece[u].data());
        leaves[u].resize(c.records->size());
        hash_views(*c.records, leaves[u].data());
      },
      [&](unsigned u, const StreamChunk& c) {
        leaves_in_order(leaves[u].data(), leaves[u].size());
        si.records += leaves[u].size();
        for (const Hash32& p : piece[u]) push_piece(pieces, p);
        if (on_bytes) on_bytes(2 * c.fresh.size);
      });
  si.piece_size = P;
  si.digest = source_digest(si.size, si.piece_size, pieces.root(nullptr));
}

// Whether `path` is read as a stream: stdin, a fifo or a character device.
bool is_stream(const std::string& path) {
  struct stat st {};
  return path == "-" || (::stat(path.c_str(), &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode)));
}

// The finished files' leaves (`runs`, one tag each), spilled as one run once
// past held_cap, or at once when spilling has begun.
void spill_held(Spill* spill, std::vector<DataTree::LeafRun>& runs, std::vector<Spill::Tagged>& tags) {
  if (!spill) return;
  uint64_t held = 0;
  for (const auto& r : runs) held += r.size();
  if (spill->active() || held >= spill->held_cap) {
    for (size_t k = 0; k < runs.size(); k++) tags[k].data = runs[k].data();
    spill->spill(tags);
    runs.clear();
    tags.clear();
  }
}

// A file read the ordinary way (ordinary_file: one run, one source) is one
// segment of the spill, numbered from the records before it.
void tag_ordinary(Spill* spill, size_t fi, std::vector<DataTree::LeafRun>& runs, const std::vector<SourceInfo>& sources,
                  std::vector<Spill::Tagged>& tags, uint64_t& before) {
  const uint64_t records = sources.back().records;
  if (spill) {
    const uint64_t seg = spill->segment(fi, 0);
    spill->set_base(seg, before);
    tags.push_back({nullptr, runs.back().size(), seg, 0});
  }
  before += records;
  spill_held(spill, runs, tags);
}

// The jsonl and lines readers' records of `paths`, streamed in one pass per
// file (stream_text_records): each chunk's record leaves and source digest
// pieces are hashed while the chunk is in cache, and the file is never held
// whole in memory. runs gets the leaves in file order (one run per part of
// each file). A stream is read once, in order (stream_pipe). False when some
// regular file cannot be streamed and no stream is among the paths: the
// caller then commits the ordinary way, which reports any problem. (With a
// stream among them, such a file is read the ordinary way alone, since the
// stream cannot be read again.) With `spill`, leaves past its caps are
// spilled (Spill); `tags` then gets each run's segment.
bool stream_commit(const ReaderSpec& spec, const std::vector<std::string>& paths, unsigned threads,
                   const std::function<void(uint64_t)>& on_bytes, std::vector<DataTree::LeafRun>& runs,
                   std::vector<SourceInfo>& sources, Spill* spill, std::vector<Spill::Tagged>& tags) {
  const bool streams = std::any_of(paths.begin(), paths.end(), is_stream);
  // Token streams are read once too. Token files are read with pread on all
  // threads (the ordinary path, which holds 72 bytes a window) unless their
  // windows pass the budget: then they are read as streams are, spilled.
  uint64_t windows = 0;
  if (spec.kind == ReaderKind::kTokens && spill)
    for (const auto& p : paths) {
      struct stat st {};
      if (::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode))
        windows += uint64_t(st.st_size) / (uint64_t(spec.token_bytes) * spec.seq_len);
    }
  const bool tokens = spec.kind == ReaderKind::kTokens && (streams || (spill && windows >= spill->held_cap));
  // Fortune files are read as streams are (a record runs to the next "%" line).
  const bool fortune = spec.kind == ReaderKind::kFortune;
  if (spec.kind != ReaderKind::kJsonl && spec.kind != ReaderKind::kLines && !tokens && !fortune) return false;
  if (threads == 0) threads = default_threads();
  constexpr uint64_t P = kDefaultPieceSize;
  uint64_t before = 0;  // records of the files before this one
  for (size_t fi = 0; fi < paths.size(); fi++) {
    const std::string& path = paths[fi];
    struct stat st {};
    const bool regular = path != "-" && ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
    if (is_stream(path) || ((fortune || tokens) && regular)) {
      // Runs of up to 2^20 leaves, reserved whole (untouched pages cost
      // nothing): no copies as they grow, and the tree's bucket pass takes
      // the runs on all threads.
      constexpr size_t kRun = size_t(1) << 20;
      const size_t first_run = runs.size();
      SourceInfo si;
      if (spill) {  // one segment: the stream's leaves in order, spilled past the part cap
        const uint64_t seg = spill->segment(fi, 0);
        DataTree::LeafRun v;
        uint64_t spilled_here = 0;
        stream_pipe(spec, path, threads, on_bytes, [&](const Hash32* l, size_t n) {
          // A regular token file's windows count towards the disk estimate
          // (its size is in the input's bytes; a stream's is not).
          if (regular && tokens) spill->read(n * uint64_t(spec.token_bytes) * spec.seq_len, n);
          // Room for a whole part at once (address space only, up to 1 GiB:
          // a page is touched when a leaf lands on it). Grown by doubling,
          // the run was copied at each step into fresh memory, which the
          // kernel zeroes: most of a pipe's extra time (docs/commitment.md).
          if (v.capacity() == 0) v.reserve(size_t(std::min<uint64_t>(spill->part_cap, uint64_t(1) << 25)));
          while (n > 0) {  // a read's leaves in pieces of at most the part cap (v is below it here)
            const size_t m = size_t(std::min<uint64_t>(n, spill->part_cap - v.size()));
            v.insert(v.end(), l, l + m);
            l += m;
            n -= m;
            if (v.size() >= spill->part_cap) {
              spill->spill({{v.data(), v.size(), seg, spilled_here}});
              spilled_here += v.size();
              DataTree::LeafRun().swap(v);
            }
          }
        }, si);
        spill->set_base(seg, before);
        tags.push_back({nullptr, v.size(), seg, spilled_here});
        runs.push_back(std::move(v));
        before += si.records;
        sources.push_back(si);
        spill_held(spill, runs, tags);
        continue;
      }
      stream_pipe(spec, path, threads, on_bytes, [&](const Hash32* l, size_t n) {
        while (n > 0) {
          if (runs.size() == first_run || runs.back().size() == kRun) {
            runs.emplace_back();
            runs.back().reserve(kRun);
          }
          DataTree::LeafRun& run = runs.back();
          const size_t m = std::min(n, kRun - run.size());
          run.insert(run.end(), l, l + m);
          l += m;
          n -= m;
        }
      }, si);
      sources.push_back(si);
      before += si.records;
      continue;
    }
    if (tokens || fortune || !regular) {
      if (!streams && !fortune) return false;
      ordinary_file(spec, path, threads, on_bytes, 0, runs, sources);  // words the error, if any
      tag_ordinary(spill, fi, runs, sources, tags, before);
      continue;
    }
    const uint64_t expect = uint64_t(st.st_size);
    std::vector<DataTree::LeafRun> part(threads);
    std::vector<uint64_t> spilled(threads, 0);  // leaves of each part spilled so far
    std::vector<Hash32> pieces((expect + P - 1) / P);
    std::atomic<bool> bad{false};
    std::atomic<uint64_t> reported{0};
    uint64_t size = 0;
    const bool ok = stream_text_records(spec, path, threads, P, [&](unsigned p, const StreamChunk& c) {
      const uint64_t first = c.offset / P;
      if (c.offset % P != 0 || first + (c.fresh.size + P - 1) / P > pieces.size()) {
        bad = true;  // the file changed size since the stat
        return;
      }
      hash_pieces(c.fresh, P, &pieces[first]);
      DataTree::LeafRun& v = part[p];
      if (v.capacity() == 0 && c.fresh.size > 0) {  // about the part's records, from its first chunk's
        size_t want = size_t(double(c.records->size()) * double(expect) / double(threads) / double(c.fresh.size) * 1.05) + 16;
        if (spill) want = size_t(std::min<uint64_t>(want, spill->part_cap + 2 * c.records->size()));
        v.reserve(want);
      }
      const size_t at = v.size();
      v.resize(at + c.records->size());
      hash_views(*c.records, v.data() + at);
      // The caller counts every byte twice (records, then the source digest): both are done here.
      reported += 2 * c.fresh.size;
      if (on_bytes) on_bytes(2 * c.fresh.size);
      if (spill) {
        spill->read(c.fresh.size, c.records->size());
        if (v.size() >= spill->part_cap) {
          spill->spill({{v.data(), v.size(), spill->segment(fi, p), spilled[p]}});
          spilled[p] += v.size();
          DataTree::LeafRun().swap(v);
        }
      }
    }, size);
    if (!ok || bad || size != expect) {
      if (!streams) return false;
      if (std::any_of(spilled.begin(), spilled.end(), [](uint64_t x) { return x > 0; }))
        throw Error("cannot commit this file in one pass after spilling part of it", path,
                    "commit it apart from the stream (a shard of its own) and merge (wit-commit merge)");
      ordinary_file(spec, path, threads, on_bytes, reported, runs, sources);
      tag_ordinary(spill, fi, runs, sources, tags, before);
      continue;
    }
    SourceInfo si;
    si.path = path;
    si.size = size;
    si.piece_size = P;
    for (unsigned p = 0; p < threads; p++) {
      auto& v = part[p];
      if (spill) {
        const uint64_t seg = spill->segment(fi, p);
        spill->set_base(seg, before + si.records);
        tags.push_back({nullptr, v.size(), seg, spilled[p]});
      }
      si.records += spilled[p] + v.size();
      runs.push_back(std::move(v));
    }
    before += si.records;
    si.digest = source_digest(si.size, si.piece_size, merkle_root(kBlake2bTree, pieces, threads));
    sources.push_back(si);
    spill_held(spill, runs, tags);
  }
  return true;
}

}  // namespace

namespace {

// The index sink's thread (commit_dataset): entries() at once, finish() once
// the caller says the tree is done; wait() joins it and rethrows its error.
// Destroyed without done(), as when the caller throws, it tells the thread to
// stop before finish() and joins it.
class IndexThread {
 public:
  IndexThread(const IndexSink& sink, const CommitResult& r) : sink_(sink) {
    if (!sink_) return;
    thread_ = std::thread([this, &r] {
      try {
        if (sink_.entries) sink_.entries(r.tree);
        if (tree_done_.get_future().get() && sink_.finish) sink_.finish(r);
      } catch (...) {
        error_ = std::current_exception();
      }
    });
  }
  ~IndexThread() {
    if (!thread_.joinable()) return;
    if (!told_) tree_done_.set_value(false);
    thread_.join();
  }
  IndexThread(const IndexThread&) = delete;
  IndexThread& operator=(const IndexThread&) = delete;
  void done() {
    if (thread_.joinable() && !told_) tree_done_.set_value(true);
    told_ = true;
  }
  void wait() {
    done();
    if (thread_.joinable()) thread_.join();
    if (error_) std::rethrow_exception(error_);
  }

 private:
  const IndexSink& sink_;
  std::promise<bool> tree_done_;
  bool told_ = false;
  std::exception_ptr error_;
  std::thread thread_;
};

}  // namespace

namespace {

// Per-run read buffers of a merge: a quarter of the budget shared by the runs,
// from 64 KiB to 4 MiB each.
size_t merge_buffer(const CommitLimits& lim, size_t runs) {
  const uint64_t share = (lim.memory ? lim.memory : kDefaultCommitMemory) / 4 / std::max<size_t>(1, runs);
  return size_t(std::clamp<uint64_t>(share, uint64_t(64) << 10, uint64_t(4) << 20));
}

// The bytes of those of `paths` that are regular files (what a commit can
// estimate up front; a pipe counts 0).
uint64_t regular_file_bytes(const std::vector<std::string>& paths) {
  uint64_t bytes = 0;
  for (const auto& p : paths) {
    struct stat st {};
    if (::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode)) bytes += uint64_t(st.st_size);
  }
  return bytes;
}

// The spilled runs merged into the tree and the index (StreamIndex, one pass).
void merge_spilled(Spill& spill, const IndexSink& index, const CommitLimits& lim, unsigned threads, CommitResult& r) {
  if (index && !index.file) throw Error("internal: a commit that spills writes its index itself (IndexSink::file)");
  Commitment& c = r.commitment;
  c.records = 0;
  for (const auto& s : c.sources) c.records += s.records;
  const auto cursors = spill.runs().cursors(merge_buffer(lim, spill.runs().runs()));
  std::vector<SortedCursor*> ptrs;
  for (const auto& k : cursors) ptrs.push_back(k.get());
  StreamIndex out(index.file, spill.runs().dir(), kDataTree, uint32_t(c.version), threads);
  merge_sorted(ptrs, [&](const Hash32& leaf, uint64_t key) { out.add(leaf, spill.record_of(key)); });
  out.finish(c.records);
  c.n = out.size();
  c.root = out.root();
  r.spilled_runs = spill.runs().runs();
  r.spilled_bytes = spill.runs().bytes();
  phase_done("merge the runs: tree and index");
}

}  // namespace

CommitResult commit_dataset(const ReaderSpec& spec, const std::vector<std::string>& paths, unsigned threads,
                            const std::function<void(uint64_t)>& on_bytes, const IndexSink& index,
                            const CommitLimits& limits) {
  phase_done("start of commit");
  CommitResult r;
  Commitment& c = r.commitment;
  c.reader = spec;
  c.inputs = paths;
  // Sources known before the tree is built: the streamed text readers', and
  // the tokens reader's (a tree over the record leaves in file order, which
  // sorting destroys, so it is taken before the sort).
  std::vector<SourceInfo> early_sources;
  bool have_sources = false;
  RecordFiles files;
  // Progress: the bytes the one pass reported before it gave up (a file it
  // cannot take) are not reported again by the ordinary path that follows,
  // so the count never passes the total (or goes back).
  std::atomic<uint64_t> streamed{0}, again{0};
  std::function<void(uint64_t)> stream_bytes, rest_bytes;
  if (on_bytes) {
    stream_bytes = [&](uint64_t b) {
      streamed += b;
      on_bytes(b);
    };
    rest_bytes = [&](uint64_t b) {
      const uint64_t before = again.fetch_add(b), shown = streamed.load();
      if (before + b > shown) on_bytes(before + b - std::max(before, shown));
    };
  }
  {
    std::vector<DataTree::LeafRun> runs;
    std::vector<Spill::Tagged> tags;
    const unsigned t = threads == 0 ? default_threads() : threads;
    const uint64_t input_bytes = regular_file_bytes(paths);
    std::unique_ptr<Spill> spill = limits.memory ? std::make_unique<Spill>(limits, t, input_bytes) : nullptr;
    if (stream_commit(spec, paths, threads, stream_bytes, runs, early_sources, spill.get(), tags)) {
      phase_done("stream the files: records, leaves, source digests");
      if (spill && spill->active()) {
        for (size_t k = 0; k < runs.size(); k++) tags[k].data = runs[k].data();
        spill->spill(tags);
        runs.clear();
        c.sources = std::move(early_sources);
        merge_spilled(*spill, index, limits, threads, r);
        return r;
      }
      r.tree = DataTree(runs, threads);
      have_sources = true;
    } else {
      early_sources.clear();
    }
  }
  const bool tokens = spec.kind == ReaderKind::kTokens;
  if (!have_sources) {
    files = RecordFiles::open(spec, paths);
    phase_done("open the readers");
    r.tree = DataTree(files, threads, rest_bytes, [&](const uint8_t* leaves, size_t stride) {
      if (tokens) early_sources = source_digests(spec, files, threads, {}, leaves, stride);
    });
    have_sources = tokens;
  }
  c.records = r.tree.records();
  c.n = r.tree.size();
  // The index's entries are written while the tree is built, its levels while
  // the source digests (if not known yet) are hashed.
  IndexThread writer(index, r);
  // The tree is built once, at the index's cache level, and its levels kept for
  // the index, so the leaves are hashed into nodes only once.
  MerkleTree tree(kDataTree, r.tree.leaves(), r.tree.size(), kIndexCacheLevel, threads);
  c.root = tree.root();
  r.levels.assign(tree.levels(), tree.levels() + MerkleTree::level_entries(r.tree.size(), kIndexCacheLevel));
  phase_done("tree");
  writer.done();
  if (!have_sources) c.sources = source_digests(spec, files, threads, rest_bytes);
  else c.sources = std::move(early_sources);
  phase_done("source digests");
  writer.wait();
  phase_done("wait for the index writer");
  return r;
}

// ---------------------------------------------------------------- checking files

namespace {

// The words of the first difference between commitment `c` and what the
// files hold (their sources, counts and root), in the order a person can
// act on: the one owner of first_mismatch's wording, for both ways of
// checking (the tree in memory, the bounded commit).
std::string mismatch_words(const Commitment& c, const std::vector<SourceInfo>& have, uint64_t records, uint64_t n,
                           const Hash32& root) {
  if (have.size() != c.sources.size())
    return "the files are " + std::to_string(have.size()) + " source(s), the commitment has " +
           std::to_string(c.sources.size()) + ": " + (have.empty() ? std::string("no files") : have.front().path);
  for (size_t i = 0; i < have.size(); i++) {
    const SourceInfo& h = have[i];
    const SourceInfo& w = c.sources[i];
    if (h.records != w.records)
      return "it holds " + std::to_string(h.records) + " records, the commitment's source " + std::to_string(i + 1) +
             " (" + w.path + ") " + std::to_string(w.records) + ": " + h.path;
    if (h.digest != w.digest || h.size != w.size)
      return "it is not the committed file (its digest differs from source " + std::to_string(i + 1) + ", " +
             w.path + "): " + h.path;
  }
  const std::string files_are = have.size() == 1 ? have.front().path : std::to_string(have.size()) + " files";
  if (records != c.records)
    return "the files hold " + std::to_string(records) + " records, the commitment says " + std::to_string(c.records) +
           ": " + files_are;
  if (n != c.n)
    return "the files hold " + std::to_string(n) + " distinct records, the commitment's tree has " +
           std::to_string(c.n) + " (a commitment that leaves records out of its tree): " + files_are;
  return "the files' tree has root " + root.hex().substr(0, 16) + "…, the commitment " + c.root.hex().substr(0, 16) +
         "… (the commitment's tree is not the files' records): " + files_are;
}

Error data_mismatch(const std::string& why) {
  return Error("data files do not match the commitment: " + why, "",
               "pass the files committed (their order does not change the tree), with the commitment wit-commit "
               "wrote for them");
}

}  // namespace

Problem first_mismatch(const Commitment& c, const ReaderSpec& spec, const RecordFiles& files, const DataTree& tree,
                       unsigned threads) {
  MerkleTree t(c.tree_hash(), tree.leaves(), tree.size(), MerkleTree::kDefaultCacheLevel, threads);
  if (tree.size() == c.n && tree.records() == c.records && t.root() == c.root) return {};
  // Something differs: name the first thing a person can act on.
  std::vector<SourceInfo> have = source_digests(spec, files, threads);  // tokens: hashed again, on this path only
  return mismatch_words(c, have, tree.records(), tree.size(), t.root());
}

// ---------------------------------------------------------------- records on demand

// Where each record of the checked files lies (docs/commitment.md, "reader
// of a corpus", step 3). Text readers (jsonl, lines, fortune): a second pass
// in order (stream_fd_records, bounded buffers) writes 16 B a record to
// `table`: the record's byte offset in its file and its length, or, for a
// record whose bytes are not a slice of the file as read (a jsonl value
// with escapes, a fortune with CRLF lines, a record in a line carried from
// the previous read), kCopied | its offset in `copies`, where its bytes are
// copied. Tokens: record k of a file is its bytes [k x window, + window).
// Nothing per record is held in memory. The scratch files are ScratchFile's
// (unnamed, O_TMPFILE, or unlinked as soon as made): nothing is left behind
// however the process ends; the disk they need is checked before either is
// made. At most kOpenFiles of the corpus's files are open at a time (a
// cache of descriptors, the least recently read closed first, reopened on
// demand): a file replaced meanwhile is read as it is now, and its records
// are refused by their leaves.
struct Dataset::OnDemand {
  static constexpr uint64_t kCopied = uint64_t(1) << 63;
  static constexpr size_t kOpenFiles = 16;
  struct File {
    std::string path;
    uint64_t first = 0;  // global number of its first record
  };
  ReaderSpec spec;
  unsigned threads_ = 0;
  uint64_t window = 0;  // tokens: bytes a record
  std::vector<File> files;
  std::unique_ptr<ScratchFile> table, copies;
  // The open files: file number and descriptor, most recently read last.
  // A reader holds its descriptor's shared_ptr while it reads, so closing
  // one in the cache never closes it under a read on another thread.
  mutable std::mutex open_mu;
  mutable std::vector<std::pair<size_t, std::shared_ptr<const Fd>>> open_fds;

  // Whether the files can be read on demand: a reader whose records have
  // places in the file, and regular files (a pipe cannot be read again).
  static bool fits(const ReaderSpec& spec, const std::vector<std::string>& paths) {
    if (spec.kind == ReaderKind::kFiles) return false;
    for (const auto& p : paths) {
      struct stat st {};
      if (::stat(p.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
    }
    return true;
  }

  // The scratch disk the text readers' places need, stated before any is
  // written: 16 B a record for the table, and for the copies what can be
  // copied: every record of jsonl (a value with escapes) and fortune (CRLF
  // lines) files, so their bytes; for lines files only a record cut by a
  // read, one a 16 MiB read of the average record's length.
  static uint64_t scratch_bytes(const Commitment& c, const std::vector<std::string>& paths) {
    uint64_t table = 0, copies = 0;
    for (size_t k = 0; k < paths.size(); k++) {
      const uint64_t records = c.sources[k].records, size = regular_file_bytes({paths[k]});
      table += 16 * records;
      if (c.reader.kind == ReaderKind::kLines)
        copies += records ? (size / (uint64_t(16) << 20) + 1) * (size / records + 1) : 0;
      else
        copies += size;
    }
    return table + copies;
  }

  OnDemand(const Commitment& c, const std::vector<std::string>& paths, unsigned threads, const CommitLimits& limits)
      : spec(c.reader), threads_(threads) {
    const bool tokens = spec.kind == ReaderKind::kTokens;
    if (tokens) window = spec.seq_len * spec.token_bytes;
    else {
      const std::string dir = limits.spill_dir.empty() ? temp_root() : limits.spill_dir;
      const uint64_t need = scratch_bytes(c, paths);
      const std::string what = "the data's places (16 B a record, and the records that are not a slice of their "
                               "file copied; --memory " + human_bytes(double(limits.memory)) + ")";
      try {
        check_free_disk(dir, need, what);
      } catch (const Error& e) {
        throw Error(e.what(), "", limits.spill_dir.empty() ? "free space there, or set TMPDIR to a larger disk"
                                                           : e.hint());
      }
      if (limits.note)
        limits.note("reading the data a record at a time: its places in " + dir + ", at most " +
                    human_bytes(double(need)) + " of temporary disk (" + human_bytes(double(free_disk(dir))) +
                    " free)");
      table = std::make_unique<ScratchFile>(dir);
      copies = std::make_unique<ScratchFile>(dir);
    }
    uint64_t first = 0;
    for (size_t k = 0; k < paths.size(); k++) {
      File f{paths[k], first};
      const uint64_t want = c.sources[k].records;  // checked: the file's count
      const uint64_t got = tokens ? want : note_places(f);
      if (got != want)
        throw Error("the file changed after it was checked: it holds " + std::to_string(got) +
                        " records, the commitment's source " + std::to_string(k + 1) + " " + std::to_string(want),
                    paths[k]);
      first += want;
      files.push_back(std::move(f));
    }
  }

  static Fd open_file(const std::string& path) {
    Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.ok()) throw Error("cannot open: " + errno_text(), path);
    return fd;
  }

  // File k's descriptor, from the cache or opened now (closing the least
  // recently read one past kOpenFiles).
  std::shared_ptr<const Fd> fd_of(size_t k) const {
    const std::lock_guard<std::mutex> lock(open_mu);
    for (size_t j = open_fds.size(); j-- > 0;)
      if (open_fds[j].first == k) {
        auto hit = open_fds[j];
        open_fds.erase(open_fds.begin() + std::ptrdiff_t(j));
        open_fds.push_back(hit);
        return hit.second;
      }
    auto fd = std::make_shared<const Fd>(open_file(files[k].path));
    if (open_fds.size() >= kOpenFiles) open_fds.erase(open_fds.begin());
    open_fds.emplace_back(k, fd);
    return fd;
  }

  // The places of one text file's records, appended to the table; returns
  // how many records the file holds. The file is open only while it is read.
  uint64_t note_places(const File& f) {
    const Fd fd = open_file(f.path);
    struct Out {
      std::vector<uint64_t> entries;  // offset (or kCopied | offset in `copied`), length
      std::string copied;
    };
    std::vector<Out> out(stream_slots(threads_));
    uint64_t n = 0;
    stream_fd_records(
        spec, fd.get(), f.path, threads_, kDefaultPieceSize,
        [&](unsigned u, const StreamChunk& ch) {
          Out& o = out[u];
          o.entries.clear();
          o.copied.clear();
          const uintptr_t lo = uintptr_t(ch.fresh.data), hi = lo + ch.fresh.size;
          for (const ByteView& v : *ch.records) {
            const uintptr_t at = uintptr_t(v.data);
            if (v.size > 0 && at >= lo && at + v.size <= hi) {
              o.entries.push_back(ch.offset + (at - lo));
            } else {
              o.entries.push_back(kCopied | o.copied.size());
              o.copied.append(v.str());
            }
            o.entries.push_back(v.size);
          }
        },
        [&](unsigned u, const StreamChunk&) {
          Out& o = out[u];
          const uint64_t base = copies->size();
          for (size_t e = 0; e < o.entries.size(); e += 2)
            if (o.entries[e] & kCopied) o.entries[e] += base;
          copies->append(ByteView(o.copied));
          table->append(ByteView(reinterpret_cast<const uint8_t*>(o.entries.data()), o.entries.size() * 8));
          n += o.entries.size() / 2;
        });
    return n;
  }

  // The bytes of global record r (as its file holds them now); `where` names them.
  std::string read(uint64_t r, std::string& where) const {
    size_t k = size_t(std::upper_bound(files.begin(), files.end(), r,
                                       [](uint64_t x, const File& f) { return x < f.first; }) -
                      files.begin()) - 1;
    const File& f = files[k];
    uint64_t off, len;
    if (window) {
      off = (r - f.first) * window;
      len = window;
    } else {
      uint64_t e[2];
      table->read(r * 16, reinterpret_cast<uint8_t*>(e), 16);
      off = e[0];
      len = e[1];
    }
    std::string s(len, '\0');
    if (!window && (off & kCopied)) {
      copies->read(off & ~kCopied, reinterpret_cast<uint8_t*>(&s[0]), len);
      where = f.path + " (record " + std::to_string(r - f.first + 1) + ", as read at the check)";
      return s;
    }
    where = f.path + " at byte " + std::to_string(off);
    const std::shared_ptr<const Fd> fd = fd_of(k);
    pread_all(fd->get(), reinterpret_cast<uint8_t*>(&s[0]), len, off, where,
              "the file changed after it was checked (it is shorter)");
    return s;
  }

};

void Dataset::open_whole(const Commitment& c, const std::vector<std::string>& paths, unsigned threads) {
  files_ = RecordFiles::open(c.reader, paths);
  tree_ = DataTree(files_, threads);
  if (auto why = first_mismatch(c, c.reader, files_, tree_, threads)) throw data_mismatch(*why);
}

Dataset::Dataset(const Commitment& c, const std::vector<std::string>& paths, unsigned threads) {
  open_whole(c, paths, threads);
}

Dataset::Dataset(const Commitment& c, const Index& index, const std::vector<std::string>& paths, unsigned threads,
                 const CommitLimits& limits) {
  if (index.n() != c.n || index.records() != c.records || index.root() != c.root)
    throw Error("internal: the index given to the data is not the commitment's", index.where());
  if (!c.ranged() || limits.memory == 0 || regular_file_bytes(paths) <= limits.memory / kDatasetWholeShare) {
    open_whole(c, paths, threads);
    return;
  }
  // The check: the commit itself, within the budget (its index discarded).
  {
    const CommitResult got = commit_dataset(c.reader, paths, threads, {}, {}, limits);
    const Commitment& g = got.commitment;
    if (g.n != c.n || g.records != c.records || g.root != c.root)
      throw data_mismatch(mismatch_words(c, g.sources, g.records, g.n, g.root));
  }
  // The files hold exactly the commitment's records, so the index (audited
  // against the same root) holds their leaves.
  index_ = &index;
  if (OnDemand::fits(c.reader, paths)) {
    demand_ = std::make_shared<const OnDemand>(c, paths, threads, limits);
    return;
  }
  files_ = RecordFiles::open(c.reader, paths);
  if (files_.records != c.records)
    throw data_mismatch(mismatch_words(c, source_digests(c.reader, files_, threads), files_.records, c.n, c.root));
}

uint64_t Dataset::size() const { return index_ ? index_->n() : tree_.size(); }

const Hash32& Dataset::leaf(uint64_t i) const { return index_ ? index_->tree().leaves()[i] : tree_.leaf(i); }

uint64_t Dataset::first(uint64_t i) const { return index_ ? index_->first_record(i) : tree_.first(i); }

const DataTree& Dataset::tree() const {
  if (index_) throw Error("internal: the data's tree is not held (its positions come from the index)");
  return tree_;
}

std::string Dataset::record(uint64_t i) const {
  if (demand_) {
    // Read now, from the file: bound to the committed leaf by its hash.
    std::string where;
    std::string r = demand_->read(first(i), where);
    if (record_leaf(ByteView(r)) != leaf(i))
      throw Error("the record at position " + std::to_string(i) + " (record " + std::to_string(first(i)) +
                      ") is not the committed one: the file changed after it was checked",
                  where, "train on files that stay as they were committed");
    return r;
  }
  std::string scratch;
  ByteView v = files_.record(first(i), scratch);
  // The index's first occurrences are audited only to be records of the
  // files: the record read must be the one at this position.
  if (index_ && record_leaf(v) != leaf(i))
    throw Error("the index's first occurrence of position " + std::to_string(i) + " (record " +
                    std::to_string(first(i)) + ") is not the record of that leaf",
                index_->where());
  return std::string(v.str());
}

}  // namespace wit
