// Committing a dataset: record leaves (in parallel), source digests, the two
// trees, and the commitment JSON.
#include "wit/commitment.h"

#include <algorithm>
#include <atomic>
#include <numeric>

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

std::string hex_field(const json& j, const char* key, const std::string& where) {
  if (!j.contains(key) || !j[key].is_string())
    throw Error(std::string("invalid commitment: missing or non-string field '") + key + "'", where);
  return j[key].get<std::string>();
}

Hash32 hash_field(const json& j, const char* key, const std::string& where) {
  Hash32 h;
  if (!Hash32::from_hex(hex_field(j, key, where), h))
    throw Error(std::string("invalid commitment: field '") + key + "' is not 64 hex digits", where);
  return h;
}

uint64_t u64_field(const json& j, const char* key, const std::string& where) {
  if (!j.contains(key) || !j[key].is_number_unsigned())
    throw Error(std::string("invalid commitment: missing or non-integer field '") + key + "'", where);
  return j[key].get<uint64_t>();
}

}  // namespace

json Commitment::to_json() const {
  json src = json::array();
  for (const auto& s : sources)
    src.push_back({{"path", s.path}, {"size", s.size}, {"piece_size", s.piece_size},
                   {"records", s.records}, {"digest", s.digest.hex()}});
  return json{{"format", kCommitFormat}, {"version", kCommitVersion}, {"hash", kBlake2bTree.name},
              {"reader", reader.to_json()}, {"n", n}, {"n_unique", n_unique},
              {"root", root.hex()}, {"sorted_root", sorted_root.hex()}, {"sources", src},
              {"inputs", inputs}};
}

std::string Commitment::dump() const { return to_json().dump(2) + "\n"; }

std::string Commitment::describe() const {
  std::string reader_words = ReaderSpec::kind_name(reader.kind);
  if (reader.kind == ReaderKind::kJsonl) reader_words += " (field \"" + reader.field + "\")";
  if (reader.kind == ReaderKind::kTokens) reader_words += " (" + std::to_string(reader.seq_len) + " tokens a record)";
  uint64_t bytes = 0;
  for (const auto& s : sources) bytes += s.size;
  std::string o;
  o += "records      " + std::to_string(n) + " (" + std::to_string(n_unique) + " distinct), read as " + reader_words + "\n";
  o += "root         " + root.hex() + "\n";
  o += "             dataset order: inclusion proofs, the data order of training runs\n";
  o += "sorted_root  " + sorted_root.hex() + "\n";
  o += "             sorted distinct records: exclusion proofs, contamination certificates\n";
  o += "sources      " + std::to_string(sources.size()) + " file(s), " + human_bytes(double(bytes)) + "\n";
  for (const auto& s : sources)
    o += "  " + s.path + "  " + human_bytes(double(s.size)) + ", " + std::to_string(s.records) + " records, digest " +
         s.digest.hex().substr(0, 16) + "\n";
  o += "hash         BLAKE2b-256, RFC 6962 trees (docs/commitment.md)\n";
  return o;
}

Commitment Commitment::from_json(const json& j, const std::string& where) {
  if (!j.is_object()) throw Error("invalid commitment: not a json object", where);
  if (!j.contains("format") || j["format"] != kCommitFormat)
    throw Error("not a wit commitment (format is not \"wit.commit\")", where);
  if (!j.contains("version") || !j["version"].is_number_integer())
    throw Error("invalid commitment: missing version", where);
  if (j["version"].get<int64_t>() != kCommitVersion)
    throw Error("unsupported commitment version " + j["version"].dump() + " (this wit reads version 1)", where);
  if (!j.contains("hash") || j["hash"] != kBlake2bTree.name)
    throw Error("invalid commitment: unsupported hash (want \"blake2b-256\")", where);
  Commitment c;
  if (!j.contains("reader")) throw Error("invalid commitment: missing reader", where);
  c.reader = ReaderSpec::from_json(j["reader"], where);
  c.n = u64_field(j, "n", where);
  c.n_unique = u64_field(j, "n_unique", where);
  if (c.n_unique > c.n || (c.n > 0 && c.n_unique == 0))
    throw Error("invalid commitment: n_unique is inconsistent with n", where);
  c.root = hash_field(j, "root", where);
  c.sorted_root = hash_field(j, "sorted_root", where);
  if (!j.contains("sources") || !j["sources"].is_array())
    throw Error("invalid commitment: missing sources", where);
  for (const auto& s : j["sources"]) {
    if (!s.is_object()) throw Error("invalid commitment: source is not an object", where);
    SourceInfo si;
    si.path = hex_field(s, "path", where);
    si.size = u64_field(s, "size", where);
    si.piece_size = u64_field(s, "piece_size", where);
    si.records = u64_field(s, "records", where);
    si.digest = hash_field(s, "digest", where);
    c.sources.push_back(si);
  }
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

LeafSet hash_records(const ReaderSpec& spec, const std::vector<std::string>& paths, unsigned threads,
                     const std::function<void(uint64_t)>& on_bytes) {
  spec.validate();
  LeafSet out;
  std::vector<uint64_t> offset;  // first leaf of each reader
  uint64_t total = 0;
  for (const auto& p : paths) {
    out.readers.push_back(RecordSource::open(spec, p));
    offset.push_back(total);
    total += out.readers.back()->count();
  }
  out.leaves.resize(total);
  out.source_of.resize(total);
  // Leaves of all readers as one flat range, so both cores stay busy even
  // when one file holds most of the records.
  const bool x4 = leaves_x4_available();
  parallel_for(total, threads, 256, [&](uint64_t b, uint64_t e) {
    std::string scratch[4];
    size_t r = size_t(std::upper_bound(offset.begin(), offset.end(), b) - offset.begin()) - 1;
    uint64_t pending = 0;
    for (uint64_t i = b; i < e;) {
      while (r + 1 < offset.size() && i >= offset[r + 1]) r++;
      // Four records of one reader with equal lengths (token windows always)
      // are hashed together, one per AVX2 lane.
      const uint64_t end_r = r + 1 < offset.size() ? std::min(e, offset[r + 1]) : e;
      if (x4 && i + 4 <= end_r) {
        ByteView v[4];
        for (int j = 0; j < 4; j++) v[j] = out.readers[r]->record(i + uint64_t(j) - offset[r], scratch[j]);
        if (v[0].size == v[1].size && v[0].size == v[2].size && v[0].size == v[3].size) {
          const uint8_t* d[4] = {v[0].data, v[1].data, v[2].data, v[3].data};
          leaves_x4(d, v[0].size, &out.leaves[i]);
          for (int j = 0; j < 4; j++) out.source_of[i + uint64_t(j)] = uint32_t(r);
          pending += 4 * v[0].size;
          i += 4;
          if (on_bytes && pending >= (uint64_t(1) << 22)) {
            on_bytes(pending);
            pending = 0;
          }
          continue;
        }
      }
      ByteView rec = out.readers[r]->record(i - offset[r], scratch[0]);
      out.leaves[i] = record_leaf(rec);
      out.source_of[i] = uint32_t(r);
      pending += rec.size;
      i++;
      if (on_bytes && pending >= (uint64_t(1) << 22)) {
        on_bytes(pending);
        pending = 0;
      }
    }
    if (on_bytes && pending) on_bytes(pending);
  });

  // Source digests. Token windows tile the file, so their leaves are the pieces.
  for (size_t r = 0; r < out.readers.size(); r++) {
    const auto& files = out.readers[r]->files();
    for (const auto& f : files) {
      SourceInfo si;
      si.path = f.path;
      si.size = f.content->size();
      si.records = files.size() == 1 ? out.readers[r]->count() : 1;
      ByteView all = f.content->view();
      std::vector<Hash32> pieces;
      if (spec.kind == ReaderKind::kTokens) {
        si.piece_size = 2 * spec.seq_len;
        pieces.assign(out.leaves.begin() + int64_t(offset[r]),
                      out.leaves.begin() + int64_t(offset[r] + out.readers[r]->count()));
        uint64_t covered = pieces.size() * si.piece_size;
        if (covered < all.size) pieces.push_back(record_leaf(all.sub(covered, all.size - covered)));
      } else {
        si.piece_size = kDefaultPieceSize;
        pieces.resize((all.size + si.piece_size - 1) / si.piece_size);
        parallel_for(pieces.size(), threads, 1, [&](uint64_t b, uint64_t e) {
          for (uint64_t i = b; i < e; i++) {
            uint64_t off = i * si.piece_size;
            pieces[i] = record_leaf(all.sub(off, std::min(si.piece_size, all.size - off)));
            if (on_bytes) on_bytes(std::min(si.piece_size, all.size - off));
          }
        });
      }
      si.digest = source_digest(si.size, si.piece_size, pieces, threads);
      out.sources.push_back(si);
    }
  }
  return out;
}

void sort_unique(const std::vector<Hash32>& leaves, std::vector<Hash32>& sorted,
                 std::vector<uint64_t>& first_pos) {
  // Sort (first 8 bytes big-endian, position) pairs, which compare as plain
  // integers; only equal prefixes (rare) fall back to the full 32 bytes. Ties
  // are broken by position, so the first occurrence survives de-duplication.
  struct Key {
    uint64_t prefix, pos;
  };
  std::vector<Key> keys(leaves.size());
  for (uint64_t i = 0; i < leaves.size(); i++) {
    uint64_t p = 0;
    for (int k = 0; k < 8; k++) p = (p << 8) | leaves[i].b[size_t(k)];
    keys[i] = {p, i};
  }
  std::sort(keys.begin(), keys.end(), [&](const Key& a, const Key& b) {
    if (a.prefix != b.prefix) return a.prefix < b.prefix;
    int c = std::memcmp(leaves[a.pos].data() + 8, leaves[b.pos].data() + 8, 24);
    return c < 0 || (c == 0 && a.pos < b.pos);
  });
  std::vector<uint64_t> order(keys.size());
  for (uint64_t i = 0; i < keys.size(); i++) order[i] = keys[i].pos;
  sorted.clear();
  first_pos.clear();
  for (uint64_t i : order) {
    if (!sorted.empty() && sorted.back() == leaves[i]) continue;
    sorted.push_back(leaves[i]);
    first_pos.push_back(i);
  }
}

CommitResult commit_dataset(const ReaderSpec& spec, const std::vector<std::string>& paths,
                            unsigned threads, const std::function<void(uint64_t)>& on_bytes) {
  LeafSet ls = hash_records(spec, paths, threads, on_bytes);
  CommitResult r;
  r.leaves = std::move(ls.leaves);
  sort_unique(r.leaves, r.sorted, r.first_pos);
  Commitment& c = r.commitment;
  c.reader = spec;
  c.n = r.leaves.size();
  c.n_unique = r.sorted.size();
  // The trees are built once, at the index's cache level, and their levels kept
  // for the index, so the leaves are hashed into nodes only once.
  MerkleTree order(kBlake2bTree, r.leaves.data(), r.leaves.size(), kIndexCacheLevel, threads);
  MerkleTree sorted(kBlake2bTree, r.sorted.data(), r.sorted.size(), kIndexCacheLevel, threads);
  c.root = order.root();
  c.sorted_root = sorted.root();
  r.order_levels.assign(order.levels(),
                        order.levels() + MerkleTree::level_entries(r.leaves.size(), kIndexCacheLevel));
  r.sorted_levels.assign(sorted.levels(),
                         sorted.levels() + MerkleTree::level_entries(r.sorted.size(), kIndexCacheLevel));
  c.sources = std::move(ls.sources);
  c.inputs = paths;
  return r;
}

Dataset::Dataset(const Commitment& c, const std::vector<std::string>& paths, unsigned threads)
    : ls_(hash_records(c.reader, paths, threads)) {
  if (ls_.leaves.size() != c.n || merkle_root(kBlake2bTree, ls_.leaves, threads) != c.root)
    throw Error("data files do not match the commitment (different records or order)",
                paths.empty() ? std::string("no files") : paths.front(),
                "pass the files committed, in the same order, with the same reader");
  uint64_t total = 0;
  for (const auto& r : ls_.readers) {
    first_.push_back(total);
    total += r->count();
  }
}

std::string Dataset::record(uint64_t i) const {
  size_t r = size_t(std::upper_bound(first_.begin(), first_.end(), i) - first_.begin()) - 1;
  std::string scratch;
  ByteView v = ls_.readers[r]->record(i - first_[r], scratch);
  return std::string(v.str());
}

}  // namespace wit
