// Encoding, mapping and validating the data index (docs/index.md).
#include "wit/index.h"

#include <xxhash.h>

#include <algorithm>
#include <cstring>

#include "wit/error.h"

namespace wit {

namespace {

// Header layout (little-endian), kIndexHeaderSize bytes:
//   0 magic[8] | 8 version u32 | 12 cache_level u32 | 16 n u64 | 24 n_unique u64
//  32 root[32] | 64 sorted_root[32] | 96 body_xxh3 u64 | 104 header_xxh3 u64 (of bytes 0..103)
// 112 reserved (zero) to 128.
constexpr size_t kOffVersion = 8, kOffLevel = 12, kOffN = 16, kOffNU = 24, kOffRoot = 32,
                 kOffSortedRoot = 64, kOffBodySum = 96, kOffHeaderSum = 104;

uint64_t body_size(uint64_t n, uint64_t nu, unsigned level) {
  return 32 * n + 32 * nu + 8 * nu + 32 * MerkleTree::level_entries(n, level) +
         32 * MerkleTree::level_entries(nu, level);
}

}  // namespace

Bytes encode_index(const CommitResult& c) {
  const uint64_t n = c.leaves.size(), nu = c.sorted.size();
  Bytes out(kIndexHeaderSize);
  out.reserve(kIndexHeaderSize + body_size(n, nu, kIndexCacheLevel));
  auto put_hashes = [&](const std::vector<Hash32>& v) {
    const uint8_t* p = v.empty() ? nullptr : v.front().data();
    out.insert(out.end(), p, p + 32 * v.size());
  };
  put_hashes(c.leaves);
  put_hashes(c.sorted);
  for (uint64_t p : c.first_pos) append_le64(out, p);
  put_hashes(c.order_levels);
  put_hashes(c.sorted_levels);

  uint8_t* h = out.data();
  std::memcpy(h, kIndexMagic, 8);
  put_le32(h + kOffVersion, kIndexVersion);
  put_le32(h + kOffLevel, kIndexCacheLevel);
  put_le64(h + kOffN, n);
  put_le64(h + kOffNU, nu);
  std::memcpy(h + kOffRoot, c.commitment.root.data(), 32);
  std::memcpy(h + kOffSortedRoot, c.commitment.sorted_root.data(), 32);
  put_le64(h + kOffBodySum, XXH3_64bits(out.data() + kIndexHeaderSize, out.size() - kIndexHeaderSize));
  put_le64(h + kOffHeaderSum, XXH3_64bits(h, kOffHeaderSum));
  return out;
}

void write_index(const std::string& path, const CommitResult& c) {
  Bytes b = encode_index(c);
  AtomicFile f(path, true);
  f.write(ByteView(b));
  f.commit();
}

Index::Index(const std::string& path) : where_(path), file_(new MappedFile(path)) {
  parse(file_->view());
}

Index::Index(ByteView bytes, const std::string& where) : where_(where) { parse(bytes); }

void Index::parse(ByteView b) {
  if (b.size >= 8 && std::memcmp(b.data, kIndexMagic, 8) != 0)
    throw Error("not a wit index (wrong magic)", where_);
  if (b.size < kIndexHeaderSize)
    throw Error("index is truncated (header needs " + std::to_string(kIndexHeaderSize) + " bytes, file has " +
                    std::to_string(b.size) + ")", where_);
  const uint8_t* h = b.data;
  uint32_t version = get_le32(h + kOffVersion);
  if (version != kIndexVersion)
    throw Error("unsupported index version " + std::to_string(version) + " (this wit reads version " +
                    std::to_string(kIndexVersion) + ")", where_);
  if (get_le64(h + kOffHeaderSum) != XXH3_64bits(h, kOffHeaderSum))
    throw Error("index header is corrupt (checksum mismatch)", where_ + " at byte 0");
  unsigned level = get_le32(h + kOffLevel);
  n_ = get_le64(h + kOffN);
  n_unique_ = get_le64(h + kOffNU);
  if (level < 1 || level > 63 || n_unique_ > n_ || n_ > (uint64_t(1) << 50))
    throw Error("index header is corrupt (impossible sizes)", where_ + " at byte 12");
  uint64_t want = kIndexHeaderSize + body_size(n_, n_unique_, level);
  if (b.size != want)
    throw Error("index size " + std::to_string(b.size) + " does not match its header (expected " +
                    std::to_string(want) + " bytes)", where_);
  if (get_le64(h + kOffBodySum) != XXH3_64bits(h + kIndexHeaderSize, b.size - kIndexHeaderSize))
    throw Error("index is corrupt (body checksum mismatch)", where_ + " at byte " +
                    std::to_string(kIndexHeaderSize));
  std::memcpy(root_.data(), h + kOffRoot, 32);
  std::memcpy(sorted_root_.data(), h + kOffSortedRoot, 32);

  const uint8_t* p = h + kIndexHeaderSize;
  auto hashes = [](const uint8_t* q) { return reinterpret_cast<const Hash32*>(q); };
  const Hash32* leaves = hashes(p);
  p += 32 * n_;
  const Hash32* sorted = hashes(p);
  p += 32 * n_unique_;
  first_pos_ = p;
  p += 8 * n_unique_;
  const Hash32* order_levels = hashes(p);
  p += 32 * MerkleTree::level_entries(n_, level);
  const Hash32* sorted_levels = hashes(p);
  order_ = std::make_unique<MerkleTree>(kBlake2bTree, leaves, n_, level, order_levels);
  sorted_ = std::make_unique<MerkleTree>(kBlake2bTree, sorted, n_unique_, level, sorted_levels);
  if (order_->root() != root_ || sorted_->root() != sorted_root_)
    throw Error("index is corrupt (tree does not reproduce its root)", where_);
}

std::optional<uint64_t> Index::find(const Hash32& leaf) const {
  uint64_t i = lower_bound(sorted_->leaves(), n_unique_, leaf);
  if (i >= n_unique_ || sorted_->leaves()[i] != leaf) return std::nullopt;
  return get_le64(first_pos_ + 8 * i);
}

void Index::check_matches(const Commitment& c, const std::string& commit_path) const {
  if (c.root != root_ || c.n != n_ || c.sorted_root != sorted_root_ || c.n_unique != n_unique_)
    throw Error("index does not belong to commitment " + commit_path, where_,
                "use the .widx written by the same wit-commit run");
}

}  // namespace wit
