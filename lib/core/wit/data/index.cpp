// Encoding, mapping and validating the data index (docs/index.md).
#include "wit/data/index.h"

#include <xxhash.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include "wit/base/error.h"
#include "wit/base/parallel.h"

namespace wit {

namespace {

// Header layout (little-endian), kIndexHeaderSize bytes:
//   0 magic[8] | 8 version u32 | 12 cache_level u32 | 16 n u64 | 24 records u64
//  32 root[32] | 64 reserved (zero) | 96 body_xxh3 u64 | 104 header_xxh3 u64 (of bytes 0..103)
// 112 reserved (zero) to 128.
constexpr size_t kOffVersion = 8, kOffLevel = 12, kOffN = 16, kOffRecords = 24, kOffRoot = 32, kOffBodySum = 96,
                 kOffHeaderSum = 104;

uint64_t body_size(uint64_t n, unsigned level) { return 40 * n + 32 * MerkleTree::level_entries(n, level); }

// The body's sections in order, as pieces of at most a few MiB (the
// first-occurrence section is encoded a chunk at a time), for writing and
// checksumming alike: the entries (sorted leaves, then where each first
// occurs), then the cached levels.
constexpr uint64_t kChunk = uint64_t(1) << 16;  // entries

template <class F>
void for_each_entries_piece(const DataTree& t, F&& f) {
  const uint64_t n = t.size();
  const uint8_t* leaves = reinterpret_cast<const uint8_t*>(t.leaves());
  for (uint64_t i = 0; i < n; i += kChunk) f(ByteView(leaves + 32 * i, 32 * std::min(kChunk, n - i)));
  Bytes buf;
  for (uint64_t i = 0; i < n; i += kChunk) {
    const uint64_t e = std::min(n, i + kChunk);
    buf.resize(8 * (e - i));
    for (uint64_t k = i; k < e; k++) put_le64(buf.data() + 8 * (k - i), t.first(k));
    f(ByteView(buf));
  }
}

template <class F>
void for_each_levels_piece(const CommitResult& c, F&& f) {
  const uint8_t* lv = c.levels.empty() ? nullptr : c.levels.front().data();
  const uint64_t m = c.levels.size();
  for (uint64_t i = 0; i < m; i += kChunk) f(ByteView(lv + 32 * i, 32 * std::min(kChunk, m - i)));
}

template <class F>
void for_each_body_piece(const CommitResult& c, F&& f) {
  for_each_entries_piece(c.tree, f);
  for_each_levels_piece(c, f);
}

std::array<uint8_t, kIndexHeaderSize> header_of(const CommitResult& c) {
  XXH3_state_t* st = XXH3_createState();
  XXH3_64bits_reset(st);
  for_each_body_piece(c, [&](ByteView v) { XXH3_64bits_update(st, v.data, v.size); });
  const uint64_t body_sum = XXH3_64bits_digest(st);
  XXH3_freeState(st);
  return encode_index_header(uint32_t(c.commitment.version), c.tree.size(), c.tree.records(), c.commitment.root,
                             body_sum);
}

}  // namespace

std::array<uint8_t, kIndexHeaderSize> encode_index_header(uint32_t version, uint64_t n, uint64_t records,
                                                          const Hash32& root, uint64_t body_sum) {
  std::array<uint8_t, kIndexHeaderSize> h{};
  std::memcpy(h.data(), kIndexMagic, 8);
  put_le32(h.data() + kOffVersion, version);
  put_le32(h.data() + kOffLevel, kIndexCacheLevel);
  put_le64(h.data() + kOffN, n);
  put_le64(h.data() + kOffRecords, records);
  std::memcpy(h.data() + kOffRoot, root.data(), 32);
  put_le64(h.data() + kOffBodySum, body_sum);
  put_le64(h.data() + kOffHeaderSum, XXH3_64bits(h.data(), kOffHeaderSum));
  return h;
}

IndexHeader parse_index_header(ByteView b, uint64_t file_size, const std::string& where) {
  if (b.size >= 8 && std::memcmp(b.data, kIndexMagic, 8) != 0) throw Error("not a wit index (wrong magic)", where);
  if (b.size < kIndexHeaderSize)
    throw Error("index is truncated (header needs " + std::to_string(kIndexHeaderSize) + " bytes, file has " +
                    std::to_string(b.size) + ")",
                where);
  const uint8_t* h = b.data;
  IndexHeader r;
  r.version = get_le32(h + kOffVersion);
  if (r.version != kIndexVersion && r.version != uint32_t(kCommitVersionUnranged))
    throw Error("unsupported index version " + std::to_string(r.version) + " (this wit reads versions " +
                    std::to_string(kCommitVersionUnranged) + " and " + std::to_string(kIndexVersion) + ")",
                where, r.version == 1 ? "version 1 indexes had two trees; run wit-commit again" : "");
  if (get_le64(h + kOffHeaderSum) != XXH3_64bits(h, kOffHeaderSum))
    throw Error("index header is corrupt (checksum mismatch)", where + " at byte 0");
  r.cache_level = get_le32(h + kOffLevel);
  r.n = get_le64(h + kOffN);
  r.records = get_le64(h + kOffRecords);
  if (r.cache_level < 1 || r.cache_level > 63 || r.n > r.records || (r.records > 0 && r.n == 0) ||
      r.records > (uint64_t(1) << 50))
    throw Error("index header is corrupt (impossible sizes)", where + " at byte 12");
  const uint64_t want = kIndexHeaderSize + body_size(r.n, r.cache_level);
  if (file_size != want)
    throw Error("index size " + std::to_string(file_size) + " does not match its header (expected " +
                    std::to_string(want) + " bytes)",
                where);
  r.body_sum = get_le64(h + kOffBodySum);
  std::memcpy(r.root.data(), h + kOffRoot, 32);
  return r;
}

void write_index(AtomicFile& out, const CommitResult& c) {
  const auto h = header_of(c);
  out.write(ByteView(h.data(), h.size()));
  for_each_body_piece(c, [&](ByteView v) { out.write(v); });
}

void IndexWriter::entries(const DataTree& tree) {
  if (!out_.seekable()) return;
  const std::array<uint8_t, kIndexHeaderSize> placeholder{};
  out_.write(ByteView(placeholder.data(), placeholder.size()));
  for_each_entries_piece(tree, [&](ByteView v) { out_.write(v); });
  out_.start_writeback();
  early_ = true;
}

void IndexWriter::finish(const CommitResult& c) {
  if (!early_) {
    write_index(out_, c);
  } else {
    for_each_levels_piece(c, [&](ByteView v) { out_.write(v); });
    const auto h = header_of(c);
    out_.write_at(0, ByteView(h.data(), h.size()));
  }
  out_.sync();
}

void write_index(const std::string& path, const CommitResult& c) {
  AtomicFile f(path, true);
  write_index(f, c);
  f.commit();
}

Bytes encode_index(const CommitResult& c) {
  const auto h = header_of(c);
  Bytes out(h.begin(), h.end());
  for_each_body_piece(c, [&](ByteView v) { out.insert(out.end(), v.data, v.data + v.size); });
  return out;
}

std::optional<FileLock> lock_commit_pair(const std::string& commit_path, bool exclusive) {
  if (commit_path.empty() || commit_path == "-") return std::nullopt;
  const size_t slash = commit_path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : commit_path.substr(0, slash);
  if (exclusive) return FileLock::wait(dir, "the commitment's directory");
  try {
    return FileLock::wait_shared_dir(dir, "the commitment's directory");
  } catch (const Error&) {
    return std::nullopt;
  }
}

CommitPair load_commit_pair(const std::string& commit_path, const std::string& index_path, IndexUse use,
                            unsigned threads) {
  if (index_path.empty() && use == IndexUse::kIndexNeeded)
    throw Error("no data index for this commitment", commit_path, "give --index, the .widx wit-commit wrote beside it");
  const auto pair_lock = lock_commit_pair(commit_path, false);
  CommitPair p{Commitment::load(commit_path), nullptr};
  if (!index_path.empty()) {
    p.index = std::make_unique<Index>(index_path);
    p.index->check_matches(p.commit, commit_path, threads);
  }
  return p;
}

Index::Index(const std::string& path) : where_(path), file_(new MappedFile(path)) { parse(file_->view()); }

Index::Index(ByteView bytes, const std::string& where) : where_(where) { parse(bytes); }

void Index::parse(ByteView b) {
  const IndexHeader hd = parse_index_header(b, b.size, where_);
  const uint8_t* h = b.data;
  if (hd.body_sum != XXH3_64bits(h + kIndexHeaderSize, b.size - kIndexHeaderSize))
    throw Error("index is corrupt (body checksum mismatch)", where_ + " at byte " + std::to_string(kIndexHeaderSize));
  n_ = hd.n;
  records_ = hd.records;
  root_ = hd.root;
  version_ = int(hd.version);
  const unsigned level = hd.cache_level;

  const uint8_t* p = h + kIndexHeaderSize;
  const Hash32* leaves = reinterpret_cast<const Hash32*>(p);
  p += 32 * n_;
  first_ = p;
  p += 8 * n_;
  tree_ = std::make_unique<MerkleTree>(Commitment::data_tree_hash(version_), leaves, n_, level,
                                       reinterpret_cast<const Hash32*>(p));
  if (tree_->root() != root_) throw Error("index is corrupt (tree does not reproduce its root)", where_);
}

std::optional<uint64_t> Index::find(const Hash32& leaf) const {
  uint64_t i = lower_bound(tree_->leaves(), n_, leaf);
  if (i >= n_ || tree_->leaves()[i] != leaf) return std::nullopt;
  return i;
}

void Index::check_matches(const Commitment& c, const std::string& commit_path, unsigned threads) const {
  const char* differs = c.version != version_ ? "version"
                        : c.root != root_    ? "root"
                        : c.n != n_          ? "n"
                        : c.records != records_ ? "records"
                                                : nullptr;
  if (differs)
    throw Error("index does not belong to commitment " + commit_path + " (" + differs + " differs)", where_,
                "use the .widx written by the same wit-commit run");
  audit(threads);
}

void Index::audit(unsigned threads) const {
  const Hash32* l = tree_->leaves();
  std::atomic<uint64_t> bad{UINT64_MAX};
  parallel_for(n_, threads, 1 << 16, [&](uint64_t b, uint64_t e) {
    for (uint64_t i = std::max<uint64_t>(b, 1); i < e; i++)
      if (!(l[i - 1] < l[i])) {
        uint64_t cur = bad.load();
        while (i < cur && !bad.compare_exchange_weak(cur, i)) {
        }
        return;
      }
  });
  if (bad.load() != UINT64_MAX)
    throw Error("index is not the commitment's sorted tree (leaves " + std::to_string(bad.load() - 1) + " and " +
                    std::to_string(bad.load()) + " are out of order or equal)",
                where_);
  for (uint64_t i = 0; i < n_; i++)
    if (first_record(i) >= records_)
      throw Error("index is corrupt (first occurrence of leaf " + std::to_string(i) + " is past the last record)",
                  where_);
  // The leaves must give the root by themselves, not only through the cached
  // levels; and the cached levels, which every proof is read from, must be
  // the ones the leaves give (a node changed with its checksums fixed would
  // otherwise give proofs that fail against the root).
  const MerkleTree fresh(tree_->hash(), l, n_, tree_->cache_level(), threads);
  if (fresh.root() != root_) throw Error("index is corrupt (its leaves do not give its root)", where_);
  const uint64_t m = MerkleTree::level_entries(n_, tree_->cache_level());
  for (uint64_t i = 0; i < m; i++)
    if (fresh.levels()[i] != tree_->levels()[i])
      throw Error("index is corrupt (cached tree node " + std::to_string(i) + " is not the hash of its leaves)",
                  where_ + " at byte " + std::to_string(kIndexHeaderSize + 40 * n_ + 32 * i),
                  "write the index again with wit-commit");
}

}  // namespace wit
