// Sorted runs spilled to disk, their k-way merge, and the data tree and index
// written in one pass over merged leaves (sorted_merge.h).
#include "wit/data/sorted_merge.h"

#include <sys/statvfs.h>
#include <xxhash.h>

#include <algorithm>

#include "wit/base/crash.h"
#include "wit/base/error.h"
#include "wit/data/index.h"
#include "wit/base/parallel.h"
#include "wit/base/progress.h"

namespace wit {

// ---------------------------------------------------------------- RootFolder

void RootFolder::push(const Node& n) {
  stack_.push_back(n);
  while (stack_.size() >= 2 && stack_[stack_.size() - 2].size == stack_.back().size) {
    const Node r = stack_.back();
    stack_.pop_back();
    stack_.back() = join(stack_.back(), r);
    if (perfect_) {
      const unsigned j = unsigned(__builtin_ctzll(stack_.back().size));
      if (perfect_->size() <= j) perfect_->resize(j + 1);
      (*perfect_)[j].push_back(stack_.back().hash);
    }
  }
}

Hash32 RootFolder::root(const Node* tail) const {
  if (stack_.empty()) return tail ? tail->hash : th_.empty();
  Node acc = tail ? *tail : stack_.back();
  for (size_t i = stack_.size() - (tail ? 0 : 1); i-- > 0;) acc = join(stack_[i], acc);
  return acc.hash;
}

RootFolder::Node RootFolder::join(const Node& l, const Node& r) const {
  return {l.size + r.size, th_.ranged() ? th_.ranged_node(l.hash, r.hash, l.last, r.first) : th_.node(l.hash, r.hash),
          l.first, r.last};
}

// ---------------------------------------------------------------- StreamIndex

struct StreamIndex::State {
  XXH3_state_t* st = XXH3_createState();
  State() { XXH3_64bits_reset(st); }
  ~State() { XXH3_freeState(st); }
  void update(ByteView v) { XXH3_64bits_update(st, v.data, v.size); }
};

StreamIndex::StreamIndex(AtomicFile* out, const std::string& scratch_dir, const TreeHash& th, uint32_t version,
                         unsigned threads)
    : out_(out), th_(th), version_(version), threads_(threads), folder_(th, &levels_), xxh_(new State) {
  leaves_.reserve(kChunk);
  firsts_.reserve(kChunk);
  if (out_) {
    if (!out_->seekable())
      throw Error("the index of a spilled or merged commit must be a regular file (it is written in one pass, "
                  "then its header)",
                  out_->target());
    first_file_ = std::make_unique<ScratchFile>(scratch_dir);
    const uint8_t placeholder[kIndexHeaderSize] = {};
    out_->write(ByteView(placeholder, sizeof placeholder));
  }
}

StreamIndex::~StreamIndex() {
  // A caller's error: the hashing thread must end before its buffers go.
  if (pending_.valid()) pending_.wait();
}

void StreamIndex::hand_off() {
  if (pending_.valid()) pending_.get();  // rethrows the write's error
  std::swap(leaves_, work_leaves_);
  std::swap(firsts_, work_firsts_);
  leaves_.clear();
  firsts_.clear();
  leaves_.reserve(kChunk);
  firsts_.reserve(kChunk);
  pending_ = std::async(std::launch::async, [this] { flush(); });
}

void StreamIndex::flush() {
  const std::vector<Hash32>& leaves = work_leaves_;
  const std::vector<uint64_t>& firsts = work_firsts_;
  const uint64_t m = leaves.size();
  if (m == 0) return;
  // A full chunk is an aligned perfect subtree; its own cached levels (from
  // kIndexCacheLevel up) are the whole tree's at its positions, and so are a
  // last, smaller chunk's (floor(m / 2^j) entries each, all aligned).
  // One thread fewer than asked: the caller's merge runs meanwhile.
  const unsigned t_all = threads_ == 0 ? default_threads() : threads_;
  const MerkleTree t(th_, leaves.data(), m, kIndexCacheLevel, std::max(1u, t_all - 1));
  const Hash32* lv = t.levels();
  for (unsigned j = kIndexCacheLevel; (m >> j) > 0; j++) {
    if (levels_.size() <= j) levels_.resize(j + 1);
    levels_[j].insert(levels_[j].end(), lv, lv + (m >> j));
    lv += m >> j;
  }
  const RootFolder::Node sub{m, t.root(), leaves.front(), leaves.back()};
  if (out_) {
    const ByteView lb(reinterpret_cast<const uint8_t*>(leaves.data()), 32 * m);
    out_->write(lb);
    xxh_->update(lb);
    first_bytes_.resize(8 * m);  // kept: a fresh 512 KiB each chunk was a page fault per 4 KiB
    for (uint64_t i = 0; i < m; i++) put_le64(first_bytes_.data() + 8 * i, firsts[i]);
    first_file_->append(ByteView(first_bytes_));
    // The index's leaves go to disk while the merge goes on (every 8 chunks,
    // 20 MiB), so the final fsync waits for the tail only.
    if ((n_ / kChunk) % 8 == 7) out_->start_writeback();
  }
  n_ += m;
  crash_point("commit-merge");
  if (m == kChunk) {
    folder_.push(sub);
  } else {
    root_ = folder_.root(&sub);
  }
}

void StreamIndex::finish(uint64_t records) {
  const bool partial = !leaves_.empty();
  // The perfect joins above the chunks happen in push; a chunk's own levels
  // were taken in flush. A whole number of chunks closes the fold here.
  if (pending_.valid()) pending_.get();
  std::swap(leaves_, work_leaves_);
  std::swap(firsts_, work_firsts_);
  flush();
  if (!partial) root_ = folder_.root(nullptr);
  if (!out_) return;
  // The index's body after the leaves: the first occurrences, copied from
  // the scratch file, then the cached levels, lowest first; then the header.
  constexpr uint64_t kStep = uint64_t(1) << 22;
  Bytes buf;
  for (uint64_t off = 0; off < first_file_->size(); off += kStep) {
    const size_t len = size_t(std::min(kStep, first_file_->size() - off));
    buf.resize(len);
    first_file_->read(off, buf.data(), len);
    out_->write(ByteView(buf));
    xxh_->update(ByteView(buf));
  }
  first_file_.reset();
  for (size_t j = kIndexCacheLevel; j < levels_.size(); j++) {
    const ByteView v(reinterpret_cast<const uint8_t*>(levels_[j].data()), 32 * levels_[j].size());
    out_->write(v);
    xxh_->update(v);
  }
  const auto h = encode_index_header(version_, n_, records, root_, XXH3_64bits_digest(xxh_->st));
  out_->write_at(0, ByteView(h.data(), h.size()));
}

// ---------------------------------------------------------------- merging

void merge_sorted(const std::vector<SortedCursor*>& sources,
                  const std::function<void(const Hash32& leaf, uint64_t key)>& emit) {
  // A min-heap of the cursors on their current entries, each node caching
  // its entry's first 8 leaf bytes as an integer: most comparisons end there
  // without touching the cursor (perf: the heap and memcmp were a third of a
  // merge's CPU before).
  struct Node {
    uint64_t k;
    SortedCursor* c;
  };
  auto less = [](const Node& a, const Node& b) { return a.k != b.k ? a.k < b.k : entry_less(*a.c->cur, *b.c->cur); };
  std::vector<Node> heap;
  for (SortedCursor* c : sources)
    if (c->cur != c->end || c->refill()) heap.push_back({be64_prefix(c->cur->leaf.data()), c});
  std::make_heap(heap.begin(), heap.end(), [&](const Node& a, const Node& b) { return less(b, a); });
  auto sift_down = [&]() {
    const size_t k = heap.size();
    size_t i = 0;
    const Node x = heap[0];
    for (;;) {
      const size_t l = 2 * i + 1;
      if (l >= k) break;
      const size_t m = (l + 1 < k && less(heap[l + 1], heap[l])) ? l + 1 : l;
      if (!less(heap[m], x)) break;
      heap[i] = heap[m];
      i = m;
    }
    heap[i] = x;
  };
  uint64_t last[4] = {0, 0, 0, 0};
  bool any = false;
  while (!heap.empty()) {
    SortedCursor* c = heap.front().c;
    const SortEntry& e = *c->cur;
    uint64_t w[4];
    std::memcpy(w, e.leaf.data(), 32);
    // Equal leaves come out in key order: the first is the first occurrence.
    if (!any || ((w[0] ^ last[0]) | (w[1] ^ last[1]) | (w[2] ^ last[2]) | (w[3] ^ last[3])) != 0) {
      emit(e.leaf, e.rec);
      std::memcpy(last, w, 32);
      any = true;
    }
    if (++c->cur == c->end && !c->refill()) {
      heap.front() = heap.back();
      heap.pop_back();
      if (heap.empty()) break;
    } else {
      heap.front().k = be64_prefix(c->cur->leaf.data());
    }
    sift_down();
  }
}

namespace {

// A spilled run read back through a buffer.
class RunCursor : public SortedCursor {
 public:
  RunCursor(const ScratchFile& f, uint64_t offset, uint64_t count, size_t buffer_entries)
      : f_(f), at_(offset), left_(count), buf_(std::max<size_t>(1, buffer_entries)) {}
  bool refill() override {
    if (left_ == 0) return false;
    const uint64_t m = std::min<uint64_t>(left_, buf_.size());
    f_.read(at_, reinterpret_cast<uint8_t*>(buf_.data()), size_t(m * sizeof(SortEntry)));
    at_ += m * sizeof(SortEntry);
    left_ -= m;
    cur = buf_.data();
    end = cur + m;
    return true;
  }

 private:
  const ScratchFile& f_;
  uint64_t at_, left_;
  std::vector<SortEntry> buf_;
};

}  // namespace

SpilledRuns::SpilledRuns(const std::string& dir) : dir_(dir), file_(dir) {}

void SpilledRuns::add_run(std::vector<SortEntry>& e) {
  std::sort(e.begin(), e.end(), entry_less);
  size_t k = 0;
  for (size_t i = 0; i < e.size(); i++)
    if (k == 0 || e[k - 1].leaf != e[i].leaf) e[k++] = e[i];
  e.resize(k);
  const std::lock_guard<std::mutex> lock(mu_);
  const uint64_t at = file_.size();
  file_.append(ByteView(reinterpret_cast<const uint8_t*>(e.data()), k * sizeof(SortEntry)));
  runs_.push_back({at, k});
  crash_point("commit-spill");
}

std::vector<std::unique_ptr<SortedCursor>> SpilledRuns::cursors(size_t buffer_bytes) const {
  std::vector<std::unique_ptr<SortedCursor>> out;
  for (const Run& r : runs_)
    out.push_back(std::make_unique<RunCursor>(file_, r.offset, r.count, buffer_bytes / sizeof(SortEntry)));
  return out;
}

// ---------------------------------------------------------------- disk

uint64_t free_disk(const std::string& dir) {
  struct statvfs s {};
  if (::statvfs(dir.c_str(), &s) != 0) throw Error("cannot tell the free disk space: " + errno_text(), dir);
  return uint64_t(s.f_bavail) * uint64_t(s.f_frsize);
}

void check_free_disk(const std::string& dir, uint64_t need, const std::string& what) {
  const uint64_t have = free_disk(dir);
  if (have < need)
    throw Error("not enough free disk for " + what + " (needs about " + human_bytes(double(need)) + ", " +
                    human_bytes(double(have)) + " free)",
                dir, "free space there, or write the outputs to a larger disk");
}

std::string parent_dir(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace wit
