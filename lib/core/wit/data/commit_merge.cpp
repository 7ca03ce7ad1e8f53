// Shards committed apart, merged into one commitment and index (merge_commits,
// docs/commitment.md "Shards"): the shards' sorted leaves k-way merged from
// their indexes, read through buffers, into the tree and index of all their
// records, in one pass.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <future>

#include "wit/data/commitment.h"
#include "wit/base/error.h"
#include "wit/data/index.h"
#include "wit/base/page_buffer.h"
#include "wit/base/parallel.h"
#include "wit/base/progress.h"
#include "wit/data/sorted_merge.h"

namespace wit {

namespace {

void pread_index(int fd, uint64_t offset, uint8_t* dst, size_t n, const std::string& where) {
  pread_all(fd, dst, n, offset, where, "index is truncated (it changed while read)");
}

// One shard's index: its header checked against its commitment, then its
// leaves and first occurrences read in order, each first counted on by the
// records of the shards before it. The leaves must be strictly increasing
// and every first a record of the shard (checked as read); the body checksum
// is checked on a thread of its own (body_ok).
class ShardCursor : public SortedCursor {
 public:
  ShardCursor(const ShardFiles& f, const Commitment& c, uint64_t offset, size_t buffer_entries)
      : where_(f.index), offset_(offset), records_(c.records), buf_(std::max<size_t>(1, buffer_entries)) {
    fd_.reset(::open(f.index.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd_.ok()) throw Error("cannot open: " + errno_text(), f.index);
    note_input(fd_.get());
    struct stat st {};
    if (::fstat(fd_.get(), &st) != 0 || !S_ISREG(st.st_mode)) throw Error("not a regular file", f.index);
    size_ = uint64_t(st.st_size);
    uint8_t h[kIndexHeaderSize];
    const size_t have = size_t(std::min<uint64_t>(size_, kIndexHeaderSize));
    pread_index(fd_.get(), 0, h, have, where_);
    hd_ = parse_index_header(ByteView(h, have), size_, where_);
    const char* differs = hd_.version != uint32_t(c.version) ? "version"
                          : hd_.root != c.root              ? "root"
                          : hd_.n != c.n                    ? "n"
                          : hd_.records != c.records        ? "records"
                                                            : nullptr;
    if (differs)
      throw Error("index does not belong to commitment " + f.commit + " (" + differs + " differs)", where_,
                  "use the .widx written by the same wit-commit run");
    leaves_.resize(buf_.size());
    firsts_.resize(8 * buf_.size());
  }
  bool refill() override {
    if (done_ == hd_.n) return false;
    const uint64_t m = std::min<uint64_t>(hd_.n - done_, buf_.size());
    pread_index(fd_.get(), kIndexHeaderSize + 32 * done_, reinterpret_cast<uint8_t*>(leaves_.data()), size_t(32 * m), where_);
    pread_index(fd_.get(), kIndexHeaderSize + 32 * hd_.n + 8 * done_, firsts_.data(), size_t(8 * m), where_);
    for (uint64_t i = 0; i < m; i++) {
      const Hash32& l = leaves_[size_t(i)];
      if (done_ + i > 0 && !leaf_less(prev_, l))
        throw Error("index is not the commitment's sorted tree (leaves " + std::to_string(done_ + i - 1) + " and " +
                        std::to_string(done_ + i) + " are out of order or equal)",
                    where_);
      const uint64_t first = get_le64(firsts_.data() + 8 * i);
      if (first >= records_)
        throw Error("index is corrupt (first occurrence of leaf " + std::to_string(done_ + i) +
                        " is past the last record)",
                    where_);
      buf_[size_t(i)] = SortEntry{l, offset_ + first};
      prev_ = l;
    }
    done_ += m;
    cur = buf_.data();
    end = cur + m;
    return true;
  }
  // The body checksum, read through a buffer of its own (run on another thread).
  void check_body() const {
    XXH3_state_t* st = XXH3_createState();
    XXH3_64bits_reset(st);
    std::vector<uint8_t> b(size_t(4) << 20);
    for (uint64_t off = kIndexHeaderSize; off < size_;) {
      const size_t n = size_t(std::min<uint64_t>(b.size(), size_ - off));
      pread_index(fd_.get(), off, b.data(), n, where_);
      XXH3_64bits_update(st, b.data(), n);
      off += n;
    }
    const uint64_t sum = XXH3_64bits_digest(st);
    XXH3_freeState(st);
    if (sum != hd_.body_sum)
      throw Error("index is corrupt (body checksum mismatch)", where_ + " at byte " + std::to_string(kIndexHeaderSize));
  }
  uint64_t n() const { return hd_.n; }

 private:
  std::string where_;
  Fd fd_;
  uint64_t size_ = 0, offset_, records_, done_ = 0;
  IndexHeader hd_;
  Hash32 prev_;
  std::vector<SortEntry> buf_;
  std::vector<Hash32> leaves_;
  std::vector<uint8_t> firsts_;
};

}  // namespace

CommitResult merge_commits(const std::vector<ShardFiles>& shards, const IndexSink& index, const CommitLimits& limits,
                           unsigned threads) {
  if (shards.empty()) throw Error("no shards to merge (wit-commit merge SHARD.commit.json... -o OUT)");
  CommitResult r;
  r.merged = true;
  Commitment& c = r.commitment;
  std::vector<Commitment> cs;
  for (const auto& f : shards) {
    cs.push_back(Commitment::load(f.commit));
    const Commitment& s = cs.back();
    if (!s.ranged())
      throw Error("shard is a version " + std::to_string(s.version) + " commitment (merge makes version " +
                      std::to_string(kCommitVersion) + ")",
                  f.commit, "commit the shard again with this wit-commit");
    if (s.reader.to_json() != cs.front().reader.to_json())
      throw Error("shard was read with another reader (" + s.reader.to_json().dump() + ", the first shard's " +
                      cs.front().reader.to_json().dump() + ")",
                  f.commit, "commit every shard with the same --reader and its options");
    if (s.records > UINT64_MAX - c.records) throw Error("the shards' record counts overflow", f.commit);
    c.records += s.records;
    c.sources.insert(c.sources.end(), s.sources.begin(), s.sources.end());
    c.inputs.insert(c.inputs.end(), s.inputs.begin(), s.inputs.end());
  }
  c.reader = cs.front().reader;
  if (c.records > (uint64_t(1) << 50)) throw Error("the shards hold more records than an index can (2^50)");
  std::vector<std::unique_ptr<ShardCursor>> cursors;
  uint64_t offset = 0, upper = 0;
  const size_t buffer = std::clamp<uint64_t>((limits.memory ? limits.memory : kDefaultCommitMemory) / 4 /
                                                 shards.size() / sizeof(SortEntry),
                                             uint64_t(1) << 11, uint64_t(1) << 16);
  for (size_t i = 0; i < shards.size(); i++) {
    cursors.push_back(std::make_unique<ShardCursor>(shards[i], cs[i], offset, buffer));
    offset += cs[i].records;
    upper += cursors.back()->n();
  }
  const std::string dir = limits.spill_dir.empty() ? temp_root() : limits.spill_dir;
  // The index (40 bytes a leaf and its levels) and its first occurrences'
  // scratch (8 bytes a leaf), at most the shards' leaves together.
  if (index.file) check_free_disk(dir, upper * (40 + 8 + 1), "the merged index");
  // Each shard's body checksum, read on another thread while the merge runs.
  auto bodies = std::async(std::launch::async, [&] {
    for (const auto& k : cursors) k->check_body();
  });
  phase_done("open the shards");
  std::vector<SortedCursor*> ptrs;
  for (const auto& k : cursors) ptrs.push_back(k.get());
  StreamIndex out(index.file, dir, kDataTree, uint32_t(c.version), threads);
  try {
    merge_sorted(ptrs, [&](const Hash32& leaf, uint64_t rec) { out.add(leaf, rec); });
    out.finish(c.records);
  } catch (...) {
    try {
      bodies.get();
    } catch (...) {
    }
    throw;
  }
  bodies.get();
  c.n = out.size();
  c.root = out.root();
  phase_done("merge the shards: tree and index");
  return r;
}

}  // namespace wit
