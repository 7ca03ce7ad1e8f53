// Committing a dataset: record leaves (in parallel), the one sorted distinct
// tree (sorted in parallel), source digests, and the commitment JSON; and the
// check of files against a commitment that the trainer and wit-query rely on.
#include "wit/commitment.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <exception>
#include <numeric>
#include <thread>

#include "wit/blake2b_x4.h"
#include "wit/error.h"
#include "wit/hash.h"
#include "wit/io.h"
#include "wit/merkle.h"
#include "wit/parallel.h"
#include "wit/progress.h"
#include "wit/tags.h"

namespace wit {

using nlohmann::json;

Hash32 record_leaf(ByteView record) { return kBlake2bTree.leaf(record); }

namespace {

Hash32 source_digest(uint64_t size, uint64_t piece_size, const std::vector<Hash32>& pieces, unsigned threads) {
  Hash32 mth = merkle_root(kBlake2bTree, pieces, threads);
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
  return json{{"format", kCommitFormat}, {"version", kCommitVersion}, {"hash", kBlake2bTree.name},
              {"reader", reader.to_json()}, {"records", records}, {"n", n},
              {"root", root.hex()}, {"sources", src}, {"inputs", inputs}};
}

std::string Commitment::dump() const { return to_json().dump(2) + "\n"; }

std::string Commitment::describe() const {
  std::string reader_words = ReaderSpec::kind_name(reader.kind);
  if (reader.kind == ReaderKind::kJsonl) reader_words += " (field \"" + reader.field + "\")";
  if (reader.kind == ReaderKind::kTokens) reader_words += " (" + std::to_string(reader.seq_len) + " tokens a record)";
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
  o += "hash         BLAKE2b-256, RFC 6962 tree (docs/commitment.md)\n";
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
  if (j["version"].get<int64_t>() != kCommitVersion)
    throw Error("unsupported commitment version " + j["version"].dump() + " (this wit reads version " +
                    std::to_string(kCommitVersion) + ")",
                where,
                j["version"].get<int64_t>() == 1
                    ? "version 1 had two trees; commit the data again with this wit-commit"
                    : "");
  if (!j.contains("hash") || j["hash"] != kBlake2bTree.name)
    throw Error("invalid commitment: unsupported hash (want \"blake2b-256\")", where);
  Commitment c;
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

// Leaf of every record of `f`, written at out + i * stride (stride >= 32).
// Records are hashed four at a time, one per AVX2 lane, when their leaf
// messages fill the same number of BLAKE2b blocks: each chunk keeps up to
// three records waiting per block count (token windows are all one count).
void hash_leaves(const RecordFiles& f, uint8_t* out, size_t stride, unsigned threads,
                 const std::function<void(uint64_t)>& on_bytes) {
  const bool x4 = leaves_x4_available();
  const auto& offset = f.first;
  constexpr uint64_t kClasses = 64;  // block counts grouped one by one; larger ones share the last class
  parallel_for(f.records, threads, 256, [&](uint64_t b, uint64_t e) {
    auto at = [&](uint64_t i) { return reinterpret_cast<Hash32*>(out + i * stride); };
    struct Waiting {
      uint64_t blocks = 0;
      int n = 0;
      uint64_t idx[4];
      const uint8_t* data[4];
      size_t len[4];
      std::string scratch[4];
    };
    std::vector<Waiting> wait(x4 ? kClasses + 1 : 0);
    auto flush_scalar = [&](Waiting& w) {
      for (int j = 0; j < w.n; j++) *at(w.idx[j]) = record_leaf(ByteView(w.data[j], w.len[j]));
      w.n = 0;
    };
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
      const uint64_t blocks = x4_blocks(v.size);
      if (!x4) {
        *at(i) = record_leaf(v);
        continue;
      }
      Waiting& w = wait[std::min(blocks, kClasses)];
      if (w.n > 0 && w.blocks != blocks) flush_scalar(w);  // the shared class holds one count at a time
      w.blocks = blocks;
      const int k = w.n++;
      w.idx[k] = i;
      if (v.size && v.data == reinterpret_cast<const uint8_t*>(cur.data())) {
        std::swap(cur, w.scratch[k]);  // the bytes live in scratch: keep them until hashed
        v = ByteView(w.scratch[k]);
      }
      w.data[k] = v.data;
      w.len[k] = v.size;
      if (w.n == 4) {
        Hash32 h[4];
        leaves_x4(w.data, w.len, h);
        for (int j = 0; j < 4; j++) *at(w.idx[j]) = h[j];
        w.n = 0;
      }
    }
    for (Waiting& w : wait) flush_scalar(w);
    if (on_bytes && pending) on_bytes(pending);
  });
}

// A record leaf and its global record number: the unit the tree is sorted in.
struct Entry {
  Hash32 leaf;
  uint64_t rec;
};
static_assert(sizeof(Entry) == 40, "Entry is packed into 40 bytes");

inline uint64_t be64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return __builtin_bswap64(v);
}

// Bytewise order of leaves (the first 8 bytes as one integer), ties broken by
// record number so that de-duplication keeps the first occurrence.
inline bool entry_less(const Entry& a, const Entry& b) {
  const uint64_t x = be64(a.leaf.data()), y = be64(b.leaf.data());
  if (x != y) return x < y;
  const int c = std::memcmp(a.leaf.data() + 8, b.leaf.data() + 8, 24);
  return c < 0 || (c == 0 && a.rec < b.rec);
}

// Sorts [e, e + n) in place on up to `threads` threads, with no second
// buffer: the leaves are hashes, so their first byte spreads them evenly over
// 256 buckets; one pass moves every entry into its bucket (American flag
// sort), then the buckets are sorted at once.
void parallel_sort(Entry* e, uint64_t n, unsigned threads) {
  if (n < (uint64_t(1) << 14)) {
    std::sort(e, e + n, entry_less);
    return;
  }
  std::array<uint64_t, 257> start{};
  for (uint64_t i = 0; i < n; i++) start[size_t(e[i].leaf.b[0]) + 1]++;
  for (size_t b = 0; b < 256; b++) start[b + 1] += start[b];
  std::array<uint64_t, 256> next;
  std::copy(start.begin(), start.begin() + 256, next.begin());
  for (size_t b = 0; b < 256; b++) {
    while (next[b] < start[b + 1]) {
      const size_t c = e[next[b]].leaf.b[0];
      if (c == b) next[b]++;
      else std::swap(e[next[b]], e[next[c]++]);
    }
  }
  parallel_for(256, threads, 8, [&](uint64_t lo, uint64_t hi) {
    for (uint64_t b = lo; b < hi; b++) std::sort(e + start[b], e + start[b + 1], entry_less);
  });
}

}  // namespace

DataTree::DataTree(const RecordFiles& files, unsigned threads, const std::function<void(uint64_t)>& on_bytes,
                   const std::function<void(const uint8_t*, size_t)>& in_file_order)
    : records_(files.records) {
  const uint64_t total = files.records;
  buf_.reset(new uint8_t[std::max<uint64_t>(1, total) * sizeof(Entry)]);
  Entry* e = reinterpret_cast<Entry*>(buf_.get());
  hash_leaves(files, buf_.get(), sizeof(Entry), threads, on_bytes);
  if (in_file_order) in_file_order(buf_.get(), sizeof(Entry));
  parallel_for(total, threads, 1 << 16, [&](uint64_t b, uint64_t end) {
    for (uint64_t i = b; i < end; i++) e[i].rec = i;
  });
  parallel_sort(e, total, threads);
  // De-duplicate in place: the first of equal leaves has the smallest record number.
  uint64_t n = 0;
  for (uint64_t i = 0; i < total; i++)
    if (n == 0 || e[n - 1].leaf != e[i].leaf) e[n++] = e[i];
  n_ = n;
  first_.resize(n);
  for (uint64_t i = 0; i < n; i++) first_[i] = e[i].rec;
  // Compact the leaves to the front: leaf i moves from byte 40 i to byte 32 i,
  // never past an entry still to be read.
  for (uint64_t i = 0; i < n; i++) std::memmove(buf_.get() + 32 * i, &e[i].leaf, 32);
}

std::optional<uint64_t> DataTree::find(const Hash32& leaf) const {
  const uint64_t i = lower_bound(leaves(), n_, leaf);
  if (i >= n_ || leaves()[i] != leaf) return std::nullopt;
  return i;
}

// ---------------------------------------------------------------- digests

namespace {

std::vector<SourceInfo> digests(const ReaderSpec& spec, const RecordFiles& f, unsigned threads,
                                const std::function<void(uint64_t)>& on_bytes, const uint8_t* leaves_in_order,
                                size_t stride) {
  std::vector<SourceInfo> out;
  for (size_t r = 0; r < f.readers.size(); r++) {
    const auto& files = f.readers[r]->files();
    for (const auto& sf : files) {
      SourceInfo si;
      si.path = sf.path;
      si.size = sf.content->size();
      si.records = files.size() == 1 ? f.readers[r]->count() : 1;
      ByteView all = sf.content->view();
      std::vector<Hash32> pieces;
      if (spec.kind == ReaderKind::kTokens) {
        // Token windows tile the file, so their leaves are the pieces.
        si.piece_size = 2 * spec.seq_len;
        const uint64_t cnt = f.readers[r]->count();
        pieces.resize(cnt);
        parallel_for(cnt, threads, 1 << 14, [&](uint64_t b, uint64_t e) {
          std::string scratch;
          for (uint64_t i = b; i < e; i++)
            pieces[i] = leaves_in_order
                            ? *reinterpret_cast<const Hash32*>(leaves_in_order + (f.first[r] + i) * stride)
                            : record_leaf(f.readers[r]->record(i, scratch));
        });
        const uint64_t covered = cnt * si.piece_size;
        if (covered < all.size) pieces.push_back(record_leaf(all.sub(covered, all.size - covered)));
      } else {
        si.piece_size = kDefaultPieceSize;
        pieces.resize((all.size + si.piece_size - 1) / si.piece_size);
        const bool x4 = leaves_x4_available();
        // Whole pieces four at a time (one per AVX2 lane), the last one alone.
        const uint64_t whole = all.size / si.piece_size, groups = whole / 4;
        parallel_for(groups, threads, 1, [&](uint64_t b, uint64_t e) {
          for (uint64_t g = b; g < e; g++) {
            const uint8_t* d[4];
            for (int j = 0; j < 4; j++) d[j] = all.data + (4 * g + uint64_t(j)) * si.piece_size;
            if (x4) {
              leaves_x4(d, si.piece_size, &pieces[4 * g]);
            } else {
              for (int j = 0; j < 4; j++) pieces[4 * g + uint64_t(j)] = record_leaf(ByteView(d[j], si.piece_size));
            }
            if (on_bytes) on_bytes(4 * si.piece_size);
          }
        });
        for (uint64_t i = 4 * groups; i < pieces.size(); i++) {
          const uint64_t off = i * si.piece_size, len = std::min(si.piece_size, all.size - off);
          pieces[i] = record_leaf(all.sub(off, len));
          if (on_bytes) on_bytes(len);
        }
      }
      si.digest = source_digest(si.size, si.piece_size, pieces, threads);
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

CommitResult commit_dataset(const ReaderSpec& spec, const std::vector<std::string>& paths, unsigned threads,
                            const std::function<void(uint64_t)>& on_bytes,
                            const std::function<void(const CommitResult&)>& write_index) {
  RecordFiles files = RecordFiles::open(spec, paths);
  CommitResult r;
  Commitment& c = r.commitment;
  c.reader = spec;
  c.inputs = paths;
  // The tokens reader's digest is a tree over the record leaves in file order,
  // which sorting destroys: it is taken before the sort.
  const bool tokens = spec.kind == ReaderKind::kTokens;
  std::vector<SourceInfo> token_sources;
  r.tree = DataTree(files, threads, on_bytes, [&](const uint8_t* leaves, size_t stride) {
    if (tokens) token_sources = source_digests(spec, files, threads, {}, leaves, stride);
  });
  c.records = r.tree.records();
  c.n = r.tree.size();
  // The tree is built once, at the index's cache level, and its levels kept for
  // the index, so the leaves are hashed into nodes only once.
  MerkleTree tree(kBlake2bTree, r.tree.leaves(), r.tree.size(), kIndexCacheLevel, threads);
  c.root = tree.root();
  r.levels.assign(tree.levels(), tree.levels() + MerkleTree::level_entries(r.tree.size(), kIndexCacheLevel));

  // The index is written while the text readers' digests hash the files.
  std::exception_ptr write_error;
  std::thread writer;
  if (write_index) writer = std::thread([&] {
      try {
        write_index(r);
      } catch (...) {
        write_error = std::current_exception();
      }
    });
  try {
    c.sources = tokens ? std::move(token_sources) : source_digests(spec, files, threads, on_bytes);
  } catch (...) {
    if (writer.joinable()) writer.join();
    throw;
  }
  if (writer.joinable()) writer.join();
  if (write_error) std::rethrow_exception(write_error);
  return r;
}

// ---------------------------------------------------------------- checking files

std::optional<std::string> first_mismatch(const Commitment& c, const ReaderSpec& spec, const RecordFiles& files,
                                          const DataTree& tree, unsigned threads) {
  MerkleTree t(kBlake2bTree, tree.leaves(), tree.size(), MerkleTree::kDefaultCacheLevel, threads);
  if (tree.size() == c.n && tree.records() == c.records && t.root() == c.root) return std::nullopt;
  // Something differs: name the first thing a person can act on.
  std::vector<SourceInfo> have = source_digests(spec, files, threads);  // tokens: hashed again, on this path only
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
  if (tree.records() != c.records)
    return "the files hold " + std::to_string(tree.records()) + " records, the commitment says " +
           std::to_string(c.records) + ": " + files_are;
  if (tree.size() != c.n)
    return "the files hold " + std::to_string(tree.size()) + " distinct records, the commitment's tree has " +
           std::to_string(c.n) + " (a commitment that leaves records out of its tree): " + files_are;
  return "the files' tree has root " + t.root().hex().substr(0, 16) + "…, the commitment " +
         c.root.hex().substr(0, 16) + "… (the commitment's tree is not the files' records): " + files_are;
}

Dataset::Dataset(const Commitment& c, const std::vector<std::string>& paths, unsigned threads)
    : files_(RecordFiles::open(c.reader, paths)), tree_(files_, threads) {
  if (auto why = first_mismatch(c, c.reader, files_, tree_, threads))
    throw Error("data files do not match the commitment: " + *why, "",
                "pass the files committed (their order does not change the tree), with the commitment wit-commit "
                "wrote for them");
}

std::string Dataset::record(uint64_t i) const {
  std::string scratch;
  ByteView v = files_.record(tree_.first(i), scratch);
  return std::string(v.str());
}

}  // namespace wit
